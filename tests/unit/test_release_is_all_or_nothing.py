"""A publish moves branch v<N> and tag vX.Y.Z together, or moves nothing.

Every Hub call a publish makes is failed in turn (a refusal, a server error past the retries, a dropped
connection, a lost answer), with the loopback Hub fixture's fault injection; after each, the remote refs
are exactly as before or exactly the complete release, and the message names the step that failed."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from huggingface_hub.errors import HfHubHTTPError

from pybuild.__main__ import main
from tests.helpers.fakebuild import make_kernel, make_variant, one_variant_matrix
from tests.hubfixture import HubServer, require_hub_client, use_hub_in_process

KERNEL = "kernel"
REPO = "org/tinyk"
FAULTS = ("403", "503", "drop", "lost-answer")


@pytest.fixture
def kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    require_hub_client()
    k = make_kernel(tmp_path)
    make_variant(k)
    # The compliance check is not what these tests are about: run it once (without the import, which
    # starts an interpreter), not before each of the many publishes.
    import pybuild.check

    real = pybuild.check.check_kernel
    cache: dict = {}

    def check_once(path, matrix, **kw):
        key = (str(path), tuple(sorted(p.name for p in Path(path).rglob("*"))))
        if key not in cache:
            cache[key] = real(path, matrix, **{**kw, "run_import": False})
        return cache[key]

    monkeypatch.setattr(pybuild.check, "check_kernel", check_once)
    return k


def release_refs(hub: HubServer) -> dict:
    """The refs a release moves: every branch but the default one, by content (a rollback is a new commit
    that restores the files, so the branch never disappears), and every tag, by commit (tags never move)."""
    if (KERNEL, REPO) not in hub.store.repos:
        return {"branches": {}, "tags": {}}
    refs = hub.store.refs(KERNEL, REPO)
    commits = hub.store.get_repo(KERNEL, REPO).commits
    return {"branches": {b: commits[c].files for b, c in refs["branches"].items() if b != "main"}, "tags": refs["tags"]}


def tagged(hub: HubServer, refs: dict, tag: str) -> dict | None:
    """The files of ``tag`` in ``refs``, None without it."""
    oid = refs["tags"].get(tag)
    return None if oid is None else hub.store.get_repo(KERNEL, REPO).commits[oid].files


def argv(kernel: Path, variants: Path, version: str) -> list[str]:
    return [
        "publish",
        str(kernel),
        "--repo-id",
        REPO,
        "--version",
        version,
        "--variants",
        str(variants),
        "--retries",
        "1",
        "-q",
    ]


def calls_of_a_clean_publish(kernel: Path, variants: Path, tmp_path: Path, monkeypatch, setup) -> list[tuple]:
    """(route, method, occurrence) of every request a successful publish makes, in order."""
    with HubServer() as hub:
        use_hub_in_process(monkeypatch, hub.endpoint, tmp_path / "hf-clean")
        setup(kernel, variants, hub)
        start = len(hub.request_log)
        assert main(argv(kernel, variants, "1.0.1")) == 0
        seen: Counter = Counter()
        calls = []
        for method, route, _path, _status in hub.request_log[start:]:
            calls.append((route, method, seen[(route, method)]))
            seen[(route, method)] += 1
        return calls


def fresh_repo(kernel: Path, variants: Path, hub: HubServer) -> None:
    """No repo yet: the publish creates it, the branch and the tag."""


def earlier_release(kernel: Path, variants: Path, hub: HubServer) -> None:
    """v1 and v1.0.0 exist; 1.0.1 adds a file."""
    assert main(argv(kernel, variants, "1.0.0")) == 0
    (kernel / "csrc" / "new.cpp").write_text("// new in 1.0.1\n")


def inject(hub: HubServer, fault: str, route: str, method: str, skip: int) -> None:
    if fault == "403":
        hub.faults.fail_next(route, 403, method=method, skip=skip, message="injected: forbidden")
    elif fault == "503":
        hub.faults.fail_next(route, 503, method=method, skip=skip, times=2)  # past --retries 1
    elif fault == "drop":
        hub.faults.drop_next(route, method=method, skip=skip, times=2)
    else:
        hub.faults.drop_next(route, method=method, skip=skip, after_apply=True)


@pytest.mark.slow  # a publish per Hub call and fault: about 5 s each
@pytest.mark.parametrize("setup", [fresh_repo, earlier_release], ids=["fresh-repo", "earlier-release"])
def test_every_hub_call_failed_in_turn_leaves_refs_unchanged_or_complete(
    kernel: Path, tmp_path: Path, monkeypatch, capsys, setup
) -> None:
    variants = one_variant_matrix(tmp_path / "variants.json")
    monkeypatch.setattr("time.sleep", lambda s: None)
    calls = calls_of_a_clean_publish(kernel, variants, tmp_path, monkeypatch, setup)
    writes = {r for r, m, _ in calls if m in ("POST", "PUT", "DELETE")}
    assert {"commit", "create_tag"} <= writes, calls
    outcomes: Counter = Counter()
    for i, (route, method, skip) in enumerate(calls):
        for fault in FAULTS:
            with HubServer() as hub:
                use_hub_in_process(monkeypatch, hub.endpoint, tmp_path / f"hf-{i}-{fault}")
                setup(kernel, variants, hub)
                before = release_refs(hub)
                capsys.readouterr()
                inject(hub, fault, route, method, skip)
                code = main(argv(kernel, variants, "1.0.1"))
                after = release_refs(hub)
                err = capsys.readouterr().err
                where = f"{fault} on {method} {route} #{skip + 1} (call {i + 1} of {len(calls)})"
                assert "Traceback" not in err, where
                if after == before:
                    outcomes["unchanged"] += 1
                    assert code == 9, f"{where}: nothing moved, yet exit {code}"
                else:
                    outcomes["complete"] += 1
                    assert code == 0, f"{where}: the release is complete, yet exit {code}: {err}"
                    tag = after["tags"].get("v1.0.1")
                    assert tag is not None and after["branches"].get("v1") == tagged(hub, after, "v1.0.1"), (
                        f"{where}: half a release {after}"
                    )
                    assert {k: v for k, v in after["tags"].items() if k != "v1.0.1"} == before["tags"], where
                    files = hub.store.get_repo(KERNEL, REPO).commits[tag].files
                    assert "csrc/tinyk_cpu.cpp" in files and "README.md" in files, where
                if code != 0:
                    lines = err.strip().splitlines()
                    assert lines and lines[-1].startswith("error:"), f"{where}: {err}"
                    if fault == "403" and route not in (
                        "create_repo",
                        "refs",
                        "tree",
                        "preupload",
                        "commit",
                        "create_branch",
                        "validate_yaml",
                    ):
                        assert "refused the token" not in err, f"{where}: blames the token it just used: {err}"
            if setup is earlier_release:
                (kernel / "csrc" / "new.cpp").unlink()
    print(f"{len(calls)} Hub calls x {len(FAULTS)} faults: {dict(outcomes)}")


@pytest.mark.usefixtures("hub_in_process")
def test_a_failed_tag_rolls_the_branch_back_and_says_which_step_failed(
    kernel: Path, variants_file: Path, hub: HubServer, capsys
) -> None:
    assert main(argv(kernel, variants_file, "1.0.0")) == 0
    before = release_refs(hub)
    (kernel / "csrc" / "new.cpp").write_text("// new\n")
    hub.faults.fail_next("create_tag", 403, message="tag protection: refused")
    assert main(argv(kernel, variants_file, "1.0.1")) == 9
    err = capsys.readouterr().err
    assert release_refs(hub) == before
    assert not any(route == "delete_branch" for _, route, _, _ in hub.request_log), "v1 disappeared a while"
    assert hub.store.refs(KERNEL, REPO)["branches"]["v1"] not in before["tags"].values()  # a new commit
    assert "tag v1.0.1" in err and "refused the token" not in err and "rolled back" in err, err
    assert main(argv(kernel, variants_file, "1.0.1")) == 0  # the rerun completes it
    after = release_refs(hub)
    assert after["branches"]["v1"] == tagged(hub, after, "v1.0.1")


def test_publish_plan_from_python_rolls_back_too(kernel: Path, variants_file: Path, hub: HubServer, api) -> None:
    from pybuild.check import check_kernel
    from pybuild.manifest import load_manifest
    from pybuild.publish import HubError, make_plan, publish_plan
    from pybuild.variants import load_matrix

    report = check_kernel(kernel, load_matrix(variants_file), run_import=False)
    plan = make_plan(load_manifest(kernel), repo_id=REPO, version="1.0.0", report=report, allow_noncompliant=False)
    hub.faults.fail_next("create_tag", 500, times=3)
    with pytest.raises(HubError) as err:  # the farm's error wrapping the Hub's own, after the rollback
        publish_plan(api, plan, retries=2, info=lambda m: None, sleep=lambda s: None)
    assert isinstance(err.value.__cause__, HfHubHTTPError) and "removed again" in err.value.state
    assert release_refs(hub) == {"branches": {}, "tags": {}}


@pytest.mark.usefixtures("hub_in_process")
@pytest.mark.parametrize("route", ["commit", "create_tag"])
def test_a_lost_answer_on_the_last_attempt_completes_the_release(
    kernel: Path, variants_file: Path, hub: HubServer, monkeypatch, capsys, route: str
) -> None:
    """The first try fails, the retry goes through but its answer is lost: the run finds its write on the
    Hub and completes the release (a half release, v1 moved without its tag, was left before)."""
    monkeypatch.setattr("time.sleep", lambda s: None)
    assert main(argv(kernel, variants_file, "1.0.0")) == 0
    (kernel / "csrc" / "new.cpp").write_text("// new\n")
    hub.faults.fail_next(route, 503)
    hub.faults.drop_next(route, after_apply=True)
    code = main(argv(kernel, variants_file, "1.0.1"))
    err = capsys.readouterr().err
    after = release_refs(hub)
    assert not hub.faults.pending
    assert code == 0, err
    assert tagged(hub, after, "v1.0.1") == after["branches"]["v1"], after
    assert "csrc/new.cpp" in hub.store.get_repo(KERNEL, REPO).commits[after["tags"]["v1.0.1"]].files


@pytest.mark.usefixtures("hub_in_process")
def test_a_tag_created_though_its_answer_and_the_check_were_lost_keeps_the_release(
    kernel: Path, variants_file: Path, hub: HubServer, monkeypatch, capsys
) -> None:
    """create_tag goes through but its answer is lost, and reading the refs to check fails too: the
    rollback must not move v1 away from a commit the new tag points at."""
    monkeypatch.setattr("time.sleep", lambda s: None)
    assert main(argv(kernel, variants_file, "1.0.0")) == 0
    (kernel / "csrc" / "new.cpp").write_text("// new\n")
    hub.faults.drop_next("create_tag", after_apply=True)
    hub.faults.fail_next("refs", 503, times=2, skip=1)  # the publish's first read passes, _tag's check fails
    code = main(argv(kernel, variants_file, "1.0.1"))
    err = capsys.readouterr().err
    after = release_refs(hub)
    assert not hub.faults.pending, hub.faults.triggered
    assert tagged(hub, after, "v1.0.1") == after["branches"]["v1"], (after, err)
    assert hub.store.refs(KERNEL, REPO)["branches"]["v1"] == after["tags"]["v1.0.1"]
    assert code == 0, err
