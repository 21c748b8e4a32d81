"""The loopback Hub fixture works with the real clients: huggingface_hub's HfApi and the kernels loader/CLI.

No GPU and no network beyond 127.0.0.1 are needed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:  # `pytest` (unlike `python -m pytest`) does not add the cwd
    sys.path.insert(0, str(REPO_ROOT))

from huggingface_hub import CommitOperationAdd, HfApi, hf_hub_download  # noqa: E402
from huggingface_hub.errors import (  # noqa: E402
    HfHubHTTPError,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from tests.helpers.procs import run, run_py  # noqa: E402
from tests.hubfixture import HubServer, hub_subprocess_env  # noqa: E402

KERNEL = "kernel"  # huggingface_hub 2.4 has a first-class "kernel" repo type (URLs /api/kernels/..., /kernels/...)


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def refs_of(api: HfApi, repo_id: str) -> tuple[dict, dict]:
    refs = api.list_repo_refs(repo_id, repo_type=KERNEL)
    return {b.name: b.target_commit for b in refs.branches}, {t.name: t.target_commit for t in refs.tags}


# --------------------------------------------------------------------------- 1. HfApi


def test_hfapi_branches_tags_uploads_and_downloads(hub, api, tmp_path):
    repo = "org/demo"
    url = api.create_repo(repo, repo_type=KERNEL)
    assert url.repo_id == repo and url.repo_type == KERNEL
    assert api.create_repo(repo, repo_type=KERNEL, exist_ok=True).repo_id == repo
    with pytest.raises(HfHubHTTPError) as err:
        api.create_repo(repo, repo_type=KERNEL)
    assert err.value.response.status_code == 409

    main0 = refs_of(api, repo)[0]["main"]
    api.create_branch(repo, branch="v1", revision="main", repo_type=KERNEL)
    src = write_tree(tmp_path / "src1", {"a.txt": "version one\n", "sub/b.txt": "bee\n"})
    c1 = api.upload_folder(folder_path=src, repo_id=repo, repo_type=KERNEL, revision="v1", commit_message="first")
    assert len(hub.requests("commit")) == 1  # the whole folder went in one commit
    api.create_tag(repo, tag="v1.0.0", revision=c1.oid, repo_type=KERNEL)

    branches, tags = refs_of(api, repo)
    assert branches == {"main": main0, "v1": c1.oid}
    assert tags == {"v1.0.0": c1.oid}

    # A second upload moves the branch; the tag stays.
    src2 = write_tree(tmp_path / "src2", {"a.txt": "version two\n", "sub/b.txt": "bee\n"})
    c2 = api.upload_folder(folder_path=src2, repo_id=repo, repo_type=KERNEL, revision="v1")
    assert c2.oid != c1.oid
    branches, tags = refs_of(api, repo)
    assert branches == {"main": main0, "v1": c2.oid}
    assert tags == {"v1.0.0": c1.oid}
    history = [c.commit_id for c in api.list_repo_commits(repo, repo_type=KERNEL, revision="v1")]
    assert history == [c2.oid, c1.oid, main0]

    # Re-tagging is refused with a clear message.
    with pytest.raises(HfHubHTTPError) as err:
        api.create_tag(repo, tag="v1.0.0", revision="v1", repo_type=KERNEL)
    assert err.value.response.status_code == 409
    assert "Tag 'v1.0.0' already exists" in str(err.value)
    api.create_tag(repo, tag="v1.0.0", revision="v1", repo_type=KERNEL, exist_ok=True)  # 409 tolerated
    assert refs_of(api, repo)[1] == {"v1.0.0": c1.oid}

    # Tree listings.
    top = {e.path for e in api.list_repo_tree(repo, repo_type=KERNEL, revision="v1")}
    assert top == {".gitattributes", "a.txt", "sub"}
    deep = {e.path for e in api.list_repo_tree(repo, repo_type=KERNEL, revision="v1", recursive=True)}
    assert deep == {".gitattributes", "a.txt", "sub", "sub/b.txt"}
    assert [e.path for e in api.list_repo_tree(repo, path_in_repo="sub", repo_type=KERNEL, revision="v1")] == [
        "sub/b.txt"
    ]
    assert sorted(api.list_repo_files(repo, repo_type=KERNEL, revision="v1.0.0")) == [
        ".gitattributes",
        "a.txt",
        "sub/b.txt",
    ]

    # Downloads by tag and by branch (module-level function: relies on use_hub_in_process).
    by_tag = hf_hub_download(repo, "a.txt", repo_type=KERNEL, revision="v1.0.0")
    by_branch = api.hf_hub_download(repo, "a.txt", repo_type=KERNEL, revision="v1")
    assert Path(by_tag).read_text() == "version one\n"
    assert Path(by_branch).read_text() == "version two\n"
    assert str(tmp_path) in by_tag  # the cache went to tmp, not to the user's HF cache

    # Error mapping: huggingface_hub picks the exception class from X-Error-Code.
    with pytest.raises(RepositoryNotFoundError):
        api.list_repo_refs("org/missing", repo_type=KERNEL)
    with pytest.raises(RevisionNotFoundError):
        api.hf_hub_download(repo, "a.txt", repo_type=KERNEL, revision="nope")
    with pytest.raises(RemoteEntryNotFoundError):
        api.hf_hub_download(repo, "missing.txt", repo_type=KERNEL, revision="v1")

    # parent_commit guards against a moved branch (412); writes need a token (401).
    with pytest.raises(HfHubHTTPError) as err:
        api.create_commit(
            repo,
            repo_type=KERNEL,
            revision="v1",
            parent_commit=c1.oid,
            commit_message="stale",
            operations=[CommitOperationAdd("c.txt", b"c")],
        )
    assert err.value.response.status_code == 412
    with pytest.raises(HfHubHTTPError) as err:
        HfApi(endpoint=hub.endpoint, token=False).create_branch(repo, branch="x", repo_type=KERNEL)
    assert err.value.response.status_code == 401

    # A README.md commit first goes through the Hub's metadata validation route.
    card = b"---\nlicense: apache-2.0\n---\n# demo\n"
    api.upload_file(path_or_fileobj=card, path_in_repo="README.md", repo_id=repo, repo_type=KERNEL)
    assert [r[3] for r in hub.requests("validate_yaml")] == [200]
    assert hub.store.read_file(KERNEL, repo, "main", "README.md") == card

    api.delete_tag(repo, tag="v1.0.0", repo_type=KERNEL)
    api.delete_branch(repo, branch="v1", repo_type=KERNEL)
    assert refs_of(api, repo)[1] == {} and list(refs_of(api, repo)[0]) == ["main"]


# --------------------------------------------------------------------------- 2. kernels loader + CLI

TINYKERN_METADATA = {
    "name": "tinykern",
    "id": "_tinykern_abc123",
    "version": 1,
    "license": "Apache-2.0",
    "python-depends": [],
    "backend": {"type": "cpu"},
}


def kernels_cli() -> list[str]:
    """The installed `kernels` console script of this interpreter (or an equivalent -c call)."""
    script = Path(sysconfig.get_path("scripts")) / "kernels"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from kernels.cli import main; sys.argv[0] = 'kernels'; main()"]


def publish_tinykern(api: HfApi, tmp_path: Path, *, only_build: bool = True) -> str:
    """Upload a pure-Python noarch kernel to org/tinykern on branch v1, tagged v1.0.0.

    With ``only_build``, the Hub's seed ``.gitattributes`` is then deleted (upload_folder's
    delete_patterns never deletes it), so the tagged commit holds nothing but the variant
    (see test_offline_load_with_files_outside_the_variant).
    """
    variant = tmp_path / "tinykern_src" / "build" / "torch-cpu"  # noarch variant selected on CPU-only torch
    write_tree(
        variant,
        {
            "metadata.json": json.dumps(TINYKERN_METADATA),
            "tinykern/__init__.py": "def add_one(x):\n    return x + 1\n",
        },
    )
    api.create_repo("org/tinykern", repo_type=KERNEL)
    api.create_branch("org/tinykern", branch="v1", repo_type=KERNEL)
    commit = api.upload_folder(folder_path=variant.parents[1], repo_id="org/tinykern", repo_type=KERNEL, revision="v1")
    if only_build:
        commit = api.delete_file(".gitattributes", "org/tinykern", repo_type=KERNEL, revision="v1")
    api.create_tag("org/tinykern", tag="v1.0.0", revision=commit.oid, repo_type=KERNEL)
    return commit.oid


def test_kernels_get_kernel_lock_download_and_offline_load(hub, api, tmp_path):
    commit = publish_tinykern(api, tmp_path)
    env = hub_subprocess_env(hub.endpoint, tmp_path)
    work = tmp_path / "work"  # cwd for subprocesses, away from any source tree named `kernels`
    work.mkdir()

    # get_kernel by version (branch v1) and by tag; the org overview marks `org` trusted.
    out = run_py(
        """
        import json, kernels
        by_version = kernels.get_kernel("org/tinykern", version=1)
        by_tag = kernels.get_kernel("org/tinykern", revision="v1.0.0")
        print(json.dumps({"v": by_version.add_one(1), "t": by_tag.add_one(41), "file": by_version.__file__}))
    """,
        env,
        work,
    )
    assert out["v"] == 2 and out["t"] == 42
    assert f"snapshots/{commit}/build/torch-cpu/tinykern/__init__.py" in out["file"]
    assert any(r[1] == "org_overview" and r[2] == "/api/organizations/org/overview" for r in hub.requests())

    # Publisher trust is configurable.  Checked in-process (the refusal comes before any import),
    # which also shows that use_hub_in_process reaches the kernels client.
    hub.trusted_orgs = {"someone-else"}
    import kernels  # `api` (fixture) has already pointed this process at the hub

    with pytest.raises(ValueError, match="not from a trusted publisher"):
        kernels.get_kernel("org/tinykern", version=1)
    assert hub.requests()[-1][1:] == ("org_overview", "/api/organizations/org/overview", 200)
    hub.trusted_orgs = None

    # `kernels lock` + `kernels download` on a project, in a fresh cache.
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        textwrap.dedent("""
        [project]
        name = "sample"
        version = "0.1.0"

        [tool.kernels.dependencies]
        "org/tinykern" = 1
    """)
    )
    env = hub_subprocess_env(hub.endpoint, tmp_path / "fresh")
    run(kernels_cli() + ["lock", str(project)], env, work)
    lock = json.loads((project / "kernels.lock").read_text())
    assert commit in json.dumps(lock) and "org/tinykern" in json.dumps(lock)
    run(kernels_cli() + ["download", str(project)], env, work)
    assert list((tmp_path / "fresh").rglob(f"snapshots/{commit}/build/torch-cpu/tinykern/__init__.py"))

    # Offline: load_kernel from the lockfile and the cache only; the server sees no request.
    n_requests = len(hub.requests())
    offline_env = hub_subprocess_env(hub.endpoint, tmp_path / "fresh", offline=True)
    out = run_py(
        f"""
        import json, kernels
        from pathlib import Path
        mod = kernels.load_kernel("org/tinykern", lockfile=Path({str(project / "kernels.lock")!r}))
        print(json.dumps({{"r": mod.add_one(9)}}))
    """,
        offline_env,
        work,
    )
    assert out["r"] == 10
    assert len(hub.requests()) == n_requests


def lock_download_and_load_offline(hub: HubServer, tmp_path: Path) -> subprocess.CompletedProcess:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.kernels.dependencies]\n"org/tinykern" = 1\n')
    env = hub_subprocess_env(hub.endpoint, tmp_path)
    run(kernels_cli() + ["lock", str(project)], env, tmp_path)
    run(kernels_cli() + ["download", str(project)], env, tmp_path)
    lockfile = str(project / "kernels.lock")
    code = f"import kernels, pathlib; kernels.load_kernel('org/tinykern', lockfile=pathlib.Path({lockfile!r}))"
    offline_env = hub_subprocess_env(hub.endpoint, tmp_path, offline=True)
    return subprocess.run(
        [sys.executable, "-c", code], env=offline_env, cwd=tmp_path, capture_output=True, text=True, timeout=180
    )


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason=(
        "huggingface_hub 2.4 caches the full tree listing of a commit and, offline, refuses a snapshot missing any "
        "listed file; kernels 0.17.2 `download` fetches only build/<variant>/* but `load_kernel` asks for the whole "
        "snapshot. So any other file in the repo (.gitattributes, README, other variants) breaks offline loading."
    ),
)
def test_offline_load_with_files_outside_the_variant(hub, api, tmp_path):
    publish_tinykern(api, tmp_path, only_build=False)
    proc = lock_download_and_load_offline(hub, tmp_path)
    if proc.returncode != 0 and "is incomplete" not in proc.stderr:
        raise RuntimeError(f"unexpected failure:\n{proc.stderr}")  # not the known issue: a real failure
    assert proc.returncode == 0, proc.stderr[-2000:]


# --------------------------------------------------------------------------- 3. fault injection


@pytest.fixture
def demo_repo(api):
    api.create_repo("org/faulty", repo_type=KERNEL)
    api.create_branch("org/faulty", branch="v1", repo_type=KERNEL)
    return "org/faulty"


def test_dropped_commit_is_not_applied(hub, api, demo_repo):
    repo_obj = hub.store.get_repo(KERNEL, demo_repo)
    refs_before, n_commits = hub.store.refs(KERNEL, demo_repo), len(repo_obj.commits)

    hub.faults.drop_next("commit")
    # create_commit sends the commit once (no retry), so the dropped connection surfaces as an error.
    with pytest.raises(Exception) as err:
        api.create_commit(
            demo_repo,
            repo_type=KERNEL,
            revision="v1",
            commit_message="lost",
            operations=[CommitOperationAdd("x.txt", b"x")],
        )
    assert "disconnected" in str(err.value).lower() or "closed" in str(err.value).lower()
    assert hub.faults.pending == 0 and hub.faults.triggered == [("commit", "POST", "drop")]
    assert hub.store.refs(KERNEL, demo_repo) == refs_before
    assert len(repo_obj.commits) == n_commits  # nothing half-written, nothing reachable

    # The next attempt goes through.
    info = api.create_commit(
        demo_repo, repo_type=KERNEL, revision="v1", commit_message="ok", operations=[CommitOperationAdd("x.txt", b"x")]
    )
    assert hub.store.refs(KERNEL, demo_repo)["branches"]["v1"] == info.oid
    assert hub.store.read_file(KERNEL, demo_repo, "v1", "x.txt") == b"x"


def test_create_commit_does_not_retry_5xx(hub, api, demo_repo):
    hub.faults.fail_next("commit", 503)
    with pytest.raises(HfHubHTTPError) as err:
        api.create_commit(
            demo_repo,
            repo_type=KERNEL,
            revision="v1",
            commit_message="m",
            operations=[CommitOperationAdd("y.txt", b"y")],
        )
    assert err.value.response.status_code == 503
    assert [r[3] for r in hub.requests("commit")] == [503]


def test_preupload_503_is_retried_by_huggingface_hub(hub, api, demo_repo, tmp_path):
    hub.faults.fail_next("preupload", 503, times=2)
    src = write_tree(tmp_path / "src", {"f.txt": "payload\n"})
    info = api.upload_folder(folder_path=src, repo_id=demo_repo, repo_type=KERNEL, revision="v1")
    assert [r[3] for r in hub.requests("preupload")] == [503, 503, 200]  # http_backoff: 1 s, then 2 s
    assert hub.store.refs(KERNEL, demo_repo)["branches"]["v1"] == info.oid
    assert hub.store.read_file(KERNEL, demo_repo, info.oid, "f.txt") == b"payload\n"


def test_upload_folder_retries_a_dropped_commit(hub, api, demo_repo, tmp_path):
    # With hf_xet installed, upload_folder commits through a pipeline that retries the commit POST.
    before = len(hub.store.get_repo(KERNEL, demo_repo).commits)
    hub.faults.drop_next("commit")
    src = write_tree(tmp_path / "src", {"g.txt": "g\n"})
    info = api.upload_folder(folder_path=src, repo_id=demo_repo, repo_type=KERNEL, revision="v1")
    assert [r[3] for r in hub.requests("commit")] == [0, 200]  # dropped (not applied), then applied
    assert len(hub.store.get_repo(KERNEL, demo_repo).commits) == before + 1
    assert hub.store.refs(KERNEL, demo_repo)["branches"]["v1"] == info.oid

    # A lost *response* is different: the write happened, so the retry applies it a second time.
    hub.faults.drop_next("commit", after_apply=True)
    src2 = write_tree(tmp_path / "src2", {"g.txt": "g2\n"})
    info2 = api.upload_folder(folder_path=src2, repo_id=demo_repo, repo_type=KERNEL, revision="v1")
    assert hub.faults.triggered[-1] == ("commit", "POST", "drop")
    listed = api.list_repo_commits(demo_repo, repo_type=KERNEL, revision="v1")
    newest, lost, previous = (c.commit_id for c in listed[:3])
    assert (newest, previous) == (info2.oid, info.oid) and lost not in (info.oid, info2.oid)
    commits = hub.store.get_repo(KERNEL, demo_repo).commits
    assert commits[newest].files == commits[lost].files  # a duplicate commit with the same tree


def test_fault_api_is_validated(hub):
    with pytest.raises(ValueError):
        hub.faults.fail_next("no-such-route")
    with pytest.raises(ValueError):
        hub.faults.drop_next("commit", times=0)
