"""`pybuild publish`: what a release holds, the dry run (no network at all), the compliance gate, and the
Hub protocol against the loopback Hub fixture with the real `HfApi`: one commit on v<major> + a tag,
idempotent re-runs, refused tag moves, retries, lost answers, and failures that leave no new ref."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from huggingface_hub import HfApi
from huggingface_hub.errors import HfHubHTTPError

from pybuild.__main__ import main
from pybuild.check import check_kernel
from pybuild.errors import PublishError
from pybuild.manifest import load_manifest
from pybuild.publish import (
    HUB_MANAGED,
    Hub,
    HubError,
    ReleasePlan,
    is_transient,
    make_plan,
    publish_plan,
    select_files,
)
from pybuild.variants import load_matrix
from tests.helpers.fakebuild import GLIBC_232, make_kernel, make_variant
from tests.hubfixture import require_hub_client

KERNEL = "kernel"
REPO = "org/tinyk"


@pytest.fixture
def hub_client() -> None:
    """For tests that run `publish` past its client check: a huggingface_hub that can upload to kernel repos."""
    require_hub_client()


def plan_for(kernel: Path, variants_file: Path, version: str = "1.0.0", **kw) -> ReleasePlan:
    report = check_kernel(kernel, load_matrix(variants_file), run_import=False)
    return make_plan(
        load_manifest(kernel),
        repo_id=REPO,
        version=version,
        report=report,
        allow_noncompliant=kw.pop("allow_noncompliant", False),
        **kw,
    )


# --------------------------------------------------------------------------------------------- local


def test_release_holds_every_file_build_toml_names(kernel: Path) -> None:
    """Sources and include folders outside csrc/ and torch-ext/ travel too: the repo must rebuild."""
    (kernel / "third_party").mkdir()
    (kernel / "third_party" / "vec.h").write_text("// header\n")
    (kernel / "kernel").mkdir()
    (kernel / "csrc" / "tinyk_cpu.cpp").rename(kernel / "kernel" / "tinyk_cpu.cpp")
    toml = kernel / "build.toml"
    toml.write_text(
        toml.read_text()
        .replace("csrc/tinyk_cpu.cpp", "kernel/tinyk_cpu.cpp")
        .replace("[torch]\n", '[torch]\ninclude = ["third_party"]\n')
    )
    selected = [rel for rel, _ in select_files(load_manifest(kernel))]
    assert "kernel/tinyk_cpu.cpp" in selected and "third_party/vec.h" in selected


def test_release_holds_sources_card_and_build_but_nothing_generated(kernel: Path, variants_file: Path) -> None:
    (kernel / "flake.nix").write_text("{ }\n")
    (kernel / "tests").mkdir()
    (kernel / "tests" / "test_tinyk.py").write_text("def test(): pass\n")
    selected = [rel for rel, _ in select_files(load_manifest(kernel))]
    variant = next((kernel / "build").iterdir()).name
    assert selected == [
        "build.toml",
        f"build/{variant}/metadata.json",
        f"build/{variant}/tinyk/__init__.py",
        f"build/{variant}/tinyk/_tinyk_ext.abi3.so",
        "csrc/tinyk_cpu.cpp",
        "flake.nix",
        "tests/test_tinyk.py",
        "torch-ext/tinyk/__init__.py",
        "torch-ext/torch_binding.cpp",
    ]
    plan = plan_for(kernel, variants_file)
    assert [f.path for f in plan.files] == sorted([*selected, "README.md"])
    assert (plan.branch, plan.tag, plan.repo_type) == ("v1", "v1.0.0", KERNEL)
    card = (next(f for f in plan.files if f.path == "README.md").content or b"").decode()
    assert f'get_kernel("{REPO}", version=1)' in card and 'revision="v1.0.0"' in card
    assert "--allow-noncompliant" not in card


def test_card_is_deterministic(kernel: Path, variants_file: Path) -> None:
    assert plan_for(kernel, variants_file).files == plan_for(kernel, variants_file).files


@pytest.mark.parametrize(
    "args, code, fragment",
    [
        (["--version", "1.0"], 2, "expected MAJOR.MINOR.PATCH"),
        (["--version", "2.0.0"], 2, "major 2 differs from `version = 1`"),
        (["--version", "1.0.0", "--repo-id", "no-slash"], 2, "expected ORG/NAME"),
        (["--version", "1.0.0", "--retries", "-3"], 2, "--retries: expected 0 or a positive integer, got '-3'"),
        (["--version", "1.0.0", "--retries", "many"], 2, "--retries: expected 0 or a positive integer, got 'many'"),
        (["--version", "1.0.0\n"], 2, "expected MAJOR.MINOR.PATCH"),  # `$` alone would let a newline through
        (["--version", "1.0.1\u0663"], 2, "expected MAJOR.MINOR.PATCH"),  # a non-ASCII digit
        (["--version", "1.0.0", "--repo-id", "org/name\n"], 2, "expected ORG/NAME"),
    ],
)
def test_bad_arguments(
    kernel: Path, variants_file: Path, args: list[str], code: int, fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["publish", str(kernel), "--repo-id", REPO, "--dry-run", "--variants", str(variants_file), *args]
    assert main(argv) == code
    assert fragment in capsys.readouterr().err


def test_dry_run_lists_files_and_refs_without_any_network(
    kernel: Path,
    variants_file: Path,
    hub_client: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def no_network(*args, **kwargs):
        raise AssertionError("the dry run touched the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(HfApi, "__init__", no_network)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    argv = [
        "publish",
        str(kernel),
        "--repo-id",
        REPO,
        "--version",
        "1.0.0",
        "--dry-run",
        "--variants",
        str(variants_file),
    ]
    assert main(argv) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert "tinyk/_tinyk_ext.abi3.so" in out and "README.md" in out and "generated" in out
    assert "branch v1: one commit" in out and "tag v1.0.0: on that commit" in out
    assert "nothing was sent (dry run)" in out
    assert "compile_commands.json" not in out and "_ops.py" not in out and ".pybuild" not in out
    # build.toml names no license: published under the default, said out loud
    assert "names no license; publishing under the default Apache-2.0" in captured.err


def test_a_named_license_publishes_without_the_warning(
    tmp_path: Path, variants_file: Path, hub_client: None, capsys: pytest.CaptureFixture[str]
) -> None:
    k = make_kernel(tmp_path / "lic")
    toml = k / "build.toml"
    toml.write_text(toml.read_text().replace("version = 1\n", 'version = 1\nlicense = "Apache-2.0"\n', 1))
    make_variant(k)
    argv = ["publish", str(k), "--repo-id", REPO, "--version", "1.0.0", "--dry-run", "--variants", str(variants_file)]
    assert main(argv) == 0
    assert "names no license" not in capsys.readouterr().err


def test_noncompliant_build_is_refused_unless_allowed_loudly(
    tmp_path: Path, variants_file: Path, hub_client: None, capsys: pytest.CaptureFixture[str]
) -> None:
    k = make_kernel(tmp_path / "bad")
    make_variant(k, so_source=GLIBC_232)
    argv = ["publish", str(k), "--repo-id", REPO, "--version", "1.0.0", "--dry-run", "--variants", str(variants_file)]
    assert main(argv) == 9
    err = capsys.readouterr().err
    assert "fails `python -m pybuild check` (manylinux_2_28)" in err and "--allow-noncompliant" in err
    assert main([*argv, "--allow-noncompliant"]) == 0
    assert "WARNING: publishing a NON-COMPLIANT build of tinyk" in capsys.readouterr().err
    plan = plan_for(k, variants_file, allow_noncompliant=True)
    card = (next(f for f in plan.files if f.path == "README.md").content or b"").decode()
    assert "Published with `--allow-noncompliant`" in card and "NOT manylinux_2_28" in card


def test_transient_errors() -> None:
    class Resp:
        def __init__(self, code: int) -> None:
            self.status_code, self.headers = code, {}

    class HTTPErr(Exception):
        def __init__(self, code: int) -> None:
            self.response = Resp(code)

    assert [is_transient(HTTPErr(c)) for c in (500, 502, 503, 429, 404, 409, 412, 401)] == [True] * 4 + [False] * 4
    assert is_transient(ConnectionResetError()) and is_transient(TimeoutError())
    assert not is_transient(ValueError("bad"))
    import httpx2  # huggingface_hub's HTTP client: a dropped connection or a timeout in it is transient

    assert is_transient(httpx2.RemoteProtocolError("closed")) and is_transient(httpx2.ReadTimeout("slow"))


@pytest.mark.parametrize(
    "header, slept",
    [
        ("-1", 1.0),
        ("inf", 1.0),
        ("nan", 1.0),
        ("-inf", 1.0),
        ("soon", 1.0),  # ignored: the exponential delay
        ("3600", 120.0),
        ("120.5", 120.0),  # an hour is clamped to two minutes
        ("0", 0.0),
        ("2.5", 2.5),
    ],
)
def test_retry_after_is_bounded(header: str, slept: float) -> None:
    class Resp:
        status_code, headers = 429, {"Retry-After": header}

    class HTTPErr(Exception):
        response = Resp()

    calls = iter([HTTPErr("429"), None])

    def call() -> str:
        err = next(calls)
        if err is not None:
            raise err
        return "ok"

    sleeps = Sleeps()
    hub = Hub(None, None, retries=1, info=lambda line: None, sleep=sleeps)  # type: ignore[arg-type]
    assert hub.call("list refs", call) == "ok"
    assert sleeps == [slept]


def test_the_default_sleep_is_time_sleep_as_it_is_when_the_hub_client_is_made(monkeypatch) -> None:
    # A test that patches time.sleep must not wait through the retries of a publish it runs: the
    # client takes time.sleep when it is made, not when its module was imported.
    slept: list[float] = []
    monkeypatch.setattr("time.sleep", slept.append)
    hub = Hub(None, None, retries=1, info=lambda line: None)  # type: ignore[arg-type]
    hub.sleep(1.5)
    assert slept == [1.5]


def test_retries_back_off_and_honour_retry_after() -> None:
    """Each Hub call: 1 s, 2 s, 4 s ... (at most 30 s) or the server's Retry-After; a refusal is not retried."""

    class Resp:
        def __init__(self, code: int, headers: dict) -> None:
            self.status_code, self.headers = code, headers

    class HTTPErr(Exception):
        def __init__(self, code: int, headers: dict | None = None) -> None:
            super().__init__(f"{code} error")
            self.response = Resp(code, headers or {})

    def failing(*errors: BaseException):
        it = iter(errors)

        def call() -> str:
            err = next(it, None)
            if err is not None:
                raise err
            return "ok"

        return call

    lines: list[str] = []
    sleeps = Sleeps()
    hub = Hub(None, None, retries=3, info=lines.append, sleep=sleeps)  # type: ignore[arg-type]
    assert hub.call("list refs", failing(HTTPErr(503), HTTPErr(429, {"Retry-After": "7"}), TimeoutError())) == "ok"
    assert sleeps == [1.0, 7.0, 4.0]
    assert lines[1] == "  list refs: HTTPErr: 429 error; retry 2/3 in 7 s", lines
    with pytest.raises(HTTPErr, match="500"):
        hub.call("commit", failing(*[HTTPErr(500)] * 4))  # 1 try + 3 retries, then the error itself
    assert sleeps[3:] == [1.0, 2.0, 4.0]
    with pytest.raises(HTTPErr, match="404"):
        hub.call("commit", failing(HTTPErr(404)))
    assert len(sleeps) == 6


# --------------------------------------------------------------------------------------------- Hub


class Sleeps(list):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def publish(api, plan, **kw):
    kw.setdefault("sleep", Sleeps())
    return publish_plan(api, plan, info=lambda m: None, **kw)


def refs(hub) -> dict:
    return hub.store.refs(KERNEL, REPO)


def commits(hub) -> int:
    return len(hub.store.get_repo(KERNEL, REPO).commits)


def test_publish_then_rerun_then_next_minor(hub, api, kernel: Path, variants_file: Path) -> None:
    plan = plan_for(kernel, variants_file)
    first = publish(api, plan)
    assert first.status == "published"
    r = refs(hub)
    assert r["branches"]["v1"] == first.commit and r["tags"] == {"v1.0.0": first.commit}
    assert len(hub.requests("commit")) == 1  # everything in one commit
    tagged = hub.store.get_repo(KERNEL, REPO).commits[first.commit].files
    assert set(tagged) == {f.path for f in plan.files} | set(HUB_MANAGED)
    for f in plan.files:
        assert hub.store.read_file(KERNEL, REPO, "v1.0.0", f.path) == (
            f.content if f.source is None else f.source.read_bytes()
        )

    again = publish(api, plan_for(kernel, variants_file))
    assert (again.status, again.commit) == ("already published", first.commit)
    assert len(hub.requests("commit")) == 1 and refs(hub) == r

    # 1.1.0 with one file gone: the branch moves to a commit holding exactly the release; v1.0.0 stays.
    (kernel / "csrc" / "extra.cpp").write_text("// only in 1.0.0\n")
    publish(api, plan_for(kernel, variants_file, "1.0.1"))
    (kernel / "csrc" / "extra.cpp").unlink()
    second = publish(api, plan_for(kernel, variants_file, "1.1.0"))
    r2 = refs(hub)
    assert r2["tags"]["v1.0.0"] == first.commit and r2["tags"]["v1.1.0"] == second.commit
    assert r2["branches"]["v1"] == second.commit
    assert "csrc/extra.cpp" not in hub.store.get_repo(KERNEL, REPO).commits[second.commit].files


def test_existing_tag_with_other_content_is_refused(hub, api, kernel: Path, variants_file: Path) -> None:
    publish(api, plan_for(kernel, variants_file))
    before = refs(hub)
    (kernel / "csrc" / "tinyk_cpu.cpp").write_text("// changed after the release\n")
    with pytest.raises(PublishError) as err:
        publish(api, plan_for(kernel, variants_file, allow_noncompliant=True))  # stale build: allowed here
    msg = str(err.value)
    assert "tag v1.0.0 already exists" in msg and "differs: csrc/tinyk_cpu.cpp" in msg
    assert "tags are never moved" in msg and "1.0.1" in msg
    assert refs(hub) == before


def test_older_version_would_move_the_branch_back(hub, api, kernel: Path, variants_file: Path) -> None:
    publish(api, plan_for(kernel, variants_file, "1.2.0"))
    with pytest.raises(PublishError, match=r"v1\.2\.0 is already published; releasing 1\.0\.5 would move branch v1"):
        publish(api, plan_for(kernel, variants_file, "1.0.5"))


def test_dropped_upload_leaves_no_new_ref_then_a_clean_retry_works(hub, api, kernel, variants_file) -> None:
    api.create_repo(REPO, repo_type=KERNEL)
    before = refs(hub)
    hub.faults.drop_next("commit", times=3)
    sleeps = Sleeps()
    with pytest.raises(HubError) as err:
        publish(api, plan_for(kernel, variants_file), retries=2, sleep=sleeps)
    assert is_transient(err.value.exception) and err.value.__cause__ is err.value.exception
    assert [r[3] for r in hub.requests("commit")] == [0, 0, 0]  # never applied
    assert sleeps == [1.0, 2.0]  # exponential backoff
    assert refs(hub) == before  # the branch this run created was removed again; no tag
    result = publish(api, plan_for(kernel, variants_file))
    assert result.status == "published" and refs(hub)["tags"] == {"v1.0.0": result.commit}


def test_a_dropped_commit_is_retried(hub, api, kernel, variants_file) -> None:
    hub.faults.drop_next("commit")
    hub.faults.fail_next("refs", 503)
    result = publish(api, plan_for(kernel, variants_file))
    assert [r[3] for r in hub.requests("commit")] == [0, 200]
    assert refs(hub)["tags"]["v1.0.0"] == result.commit


def test_lost_commit_answer_is_recognised_not_committed_twice(hub, api, kernel, variants_file) -> None:
    publish(api, plan_for(kernel, variants_file))
    n = commits(hub)
    hub.faults.drop_next("commit", after_apply=True)  # applied on the Hub, the answer never arrives
    result = publish(api, plan_for(kernel, variants_file, "1.1.0"))
    assert [r[3] for r in hub.requests("commit")] == [200, 200]
    assert commits(hub) == n + 1
    assert refs(hub)["tags"]["v1.1.0"] == result.commit == refs(hub)["branches"]["v1"]


def test_a_failed_tag_rolls_the_branch_back(hub, api, kernel, variants_file) -> None:
    hub.faults.fail_next("create_tag", 500, times=3)
    with pytest.raises(HubError) as err:
        publish(api, plan_for(kernel, variants_file), retries=2)
    assert refs(hub)["tags"] == {} and "v1" not in refs(hub)["branches"]  # the branch this run created: removed
    assert "removed again" in err.value.state and err.value.step == "create tag v1.0.0"
    # the farm's error wraps the Hub's own (its cause), which itself carries nothing of the farm's
    assert isinstance(err.value.__cause__, HfHubHTTPError) and err.value.__cause__ is err.value.exception
    assert not [a for a in vars(err.value.exception) if a.startswith("pybuild")]
    assert "removed again" in str(err.value) and "at step `create tag v1.0.0`" in str(err.value)


def test_commit_without_tag_is_completed_by_the_rerun(hub, api, kernel, variants_file) -> None:
    """A run that could neither tag nor roll back (or was killed between the two) leaves the complete
    release on the branch; the rerun only tags it."""
    hub.faults.fail_next("create_tag", 500, times=3)
    hub.faults.fail_next("delete_branch", 403)
    with pytest.raises(HubError) as err:
        publish(api, plan_for(kernel, variants_file), retries=2)
    assert "run the same command again to tag it" in err.value.state and isinstance(err.value.__cause__, HfHubHTTPError)
    assert refs(hub)["tags"] == {}
    tip = refs(hub)["branches"]["v1"]
    n = commits(hub)
    result = publish(api, plan_for(kernel, variants_file))
    assert (result.status, result.commit) == ("tagged existing commit", tip)
    assert commits(hub) == n and refs(hub)["tags"] == {"v1.0.0": tip}


def test_cli_publish_token_and_errors(
    hub, api, kernel, variants_file, monkeypatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def argv(version: str) -> list[str]:
        return ["publish", str(kernel), "--repo-id", REPO, "--version", version, "--variants", str(variants_file), "-q"]

    assert main(argv("1.0.0")) == 0
    assert refs(hub)["tags"].keys() == {"v1.0.0"}
    assert main(argv("1.0.0")) == 0  # already published
    capsys.readouterr()
    monkeypatch.setenv("HF_TOKEN", "hf_not_valid_here")
    hub.faults.fail_next("commit", 401, message="Invalid credentials in Authorization header")
    assert main(argv("1.0.1")) == 9
    err = capsys.readouterr().err
    assert "the Hub refused the token" in err and "hf_not_valid_here" not in err
    assert len(err.strip().splitlines()) == 1


def test_a_hub_client_that_cannot_upload_to_kernel_repos_is_named_before_any_work(
    kernel, variants_file, monkeypatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pybuild.publish import kernel_repo_type

    for version in ("2.3.0", "2.4.0", "2.3.0rc1", "3.0.0.dev0"):
        assert kernel_repo_type(version) == "kernel", version
    with pytest.raises(PublishError, match=r"huggingface_hub 1\.33\.0 cannot upload to kernel repos.*>=2\.3"):
        kernel_repo_type("1.33.0")  # knows the type, but create_commit refuses it before 2.3
    with pytest.raises(PublishError):
        kernel_repo_type("2.2.0rc1")

    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "__version__", "2.2.0")
    monkeypatch.setattr("pybuild.check.check_kernel", lambda *a, **k: pytest.fail("checked before the client"))
    argv = ["publish", str(kernel), "--repo-id", REPO, "--version", "1.0.0", "--variants", str(variants_file)]
    assert main(argv) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install -U 'huggingface_hub>=2.3'" in err[0], err


def test_repo_id_defaults_to_the_manifests_hub_table(
    tmp_path: Path, variants_file: Path, hub_client: None, capsys: pytest.CaptureFixture[str]
) -> None:
    k = make_kernel(tmp_path / "hub")
    toml = k / "build.toml"
    toml.write_text(toml.read_text().replace("version = 1\n", f'version = 1\n[general.hub]\nrepo-id = "{REPO}"\n', 1))
    make_variant(k)
    argv = ["publish", str(k), "--version", "1.0.0", "--dry-run", "--variants", str(variants_file)]
    assert main(argv) == 0
    assert REPO in capsys.readouterr().out


def test_without_repo_id_anywhere_publish_says_where_to_put_it(
    kernel: Path, variants_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["publish", str(kernel), "--version", "1.0.0", "--dry-run", "--variants", str(variants_file)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "no --repo-id given" in err and "[general.hub] repo-id" in err
