"""Publish uploads exactly what `check` verified: a file changed, added or removed at any step between
`check` and the final ref (during the upload included) leaves the remote's refs as they were, and the
error names the file. After each write the refs are read back: an answer is never taken for the write.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from pybuild.check import check_kernel
from pybuild.errors import PublishError
from pybuild.manifest import load_manifest
from pybuild.publish import make_plan, publish_plan
from pybuild.publish.stream import VerifiedFile, hash_file
from pybuild.variants import load_matrix
from tests.helpers.fakebuild import host_cpu_variant
from tests.hubfixture import require_hub_client

KERNEL = "kernel"
REPO = "org/tinyk"


def build_file(kernel: Path, rel: str) -> Path:
    return kernel / "build" / host_cpu_variant() / rel


def change(rel: str) -> Callable[[Path], str]:
    def act(kernel: Path) -> str:
        build_file(kernel, rel).write_text('"""changed after check"""\n')
        return rel

    return act


def add(rel: str) -> Callable[[Path], str]:
    def act(kernel: Path) -> str:
        build_file(kernel, rel).write_text("TOKEN = 'added after check'\n")
        return rel

    return act


def remove(rel: str) -> Callable[[Path], str]:
    def act(kernel: Path) -> str:
        build_file(kernel, rel).unlink()
        return rel

    return act


def change_source(kernel: Path) -> str:
    (kernel / "csrc" / "tinyk_cpu.cpp").write_text("// changed after check\n")
    return "sources changed after they were checked"


MUTATIONS = {
    "changed": change("tinyk/__init__.py"),
    "added": add("tinyk/extra.py"),
    "removed": remove("tinyk/__init__.py"),
}


@pytest.fixture
def remote(hub, api, kernel: Path, variants_file: Path) -> dict:
    """The refs after release 1.0.0 of the kernel: what every failed later publish must leave."""
    require_hub_client()
    publish_plan(api, plan(kernel, variants_file, "1.0.0"), info=lambda m: None, sleep=lambda s: None)
    return hub.store.refs(KERNEL, REPO)


def plan(kernel: Path, variants_file: Path, version: str, after_check: Callable[[Path], object] | None = None):
    report = check_kernel(kernel, load_matrix(variants_file), run_import=False)
    if after_check is not None:
        after_check(kernel)
    return make_plan(load_manifest(kernel), repo_id=REPO, version=version, report=report, allow_noncompliant=False)


def publish(api, release) -> None:
    publish_plan(api, release, info=lambda m: None, sleep=lambda s: None, retries=1)


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_between_check_and_plan(hub, api, remote: dict, kernel: Path, variants_file: Path, mutation: str) -> None:
    named: list[str] = []
    with pytest.raises(PublishError) as err:
        plan(kernel, variants_file, "1.1.0", after_check=lambda k: named.append(MUTATIONS[mutation](k)))
    assert named[0] in str(err.value) and "changed after it was checked" in str(err.value)
    assert hub.store.refs(KERNEL, REPO) == remote


def test_a_source_changed_between_check_and_plan(hub, api, remote: dict, kernel: Path, variants_file: Path) -> None:
    with pytest.raises(PublishError, match="the kernel's sources changed after they were checked"):
        plan(kernel, variants_file, "1.1.0", after_check=change_source)
    assert hub.store.refs(KERNEL, REPO) == remote


@pytest.mark.parametrize("mutation", ["changed", "removed"])
@pytest.mark.parametrize("when", ["before-upload", "preupload", "commit"])
def test_between_plan_and_the_final_ref(
    hub, api, remote: dict, kernel: Path, variants_file: Path, mutation: str, when: str
) -> None:
    """``preupload``: while the client asks how to upload (it has hashed the files once already);
    ``commit``: when the commit request, whose payload holds the files' bytes, reaches the Hub."""
    release = plan(kernel, variants_file, "1.1.0")
    named: list[str] = []
    if when == "before-upload":
        named.append(MUTATIONS[mutation](kernel))
    else:
        hub.faults.on_request(when, lambda: named.append(MUTATIONS[mutation](kernel)))
    try:
        publish(api, release)
    except PublishError as e:
        assert named and named[0] in str(e) and "changed after it was checked" in str(e), str(e)
    else:
        # A change after the last read of the file for the upload: what was uploaded is still exactly
        # the release manifest (the tag's files are those check verified).
        assert when == "commit" and named
        for f in release.files:
            data = hub.store.read_file(KERNEL, REPO, "v1.1.0", f.path)
            assert hashlib.sha256(data).hexdigest() == f.sha256, f.path
        return
    assert hub.store.refs(KERNEL, REPO) == remote


def test_what_is_uploaded_is_the_manifest_byte_for_byte(hub, api, remote: dict, kernel: Path, variants_file: Path):
    release = plan(kernel, variants_file, "1.1.0")
    publish(api, release)
    for f in release.files:
        assert hub.store.read_file(KERNEL, REPO, "v1.1.0", f.path) == (
            f.content if f.source is None else f.source.read_bytes()
        )


def test_a_tag_answered_done_that_does_not_exist_is_not_published(
    hub, api, remote: dict, kernel: Path, variants_file: Path
) -> None:
    """create_tag answered 200 with a body that is not JSON, the tag never made: the refs read back
    say so, the branch is rolled back, and nothing is reported published."""
    hub.faults.answer_next("create_tag", 200, b"OK")
    with pytest.raises(PublishError, match=r"tag v1\.1\.0 as done, but the tag does not exist.*nothing was released"):
        publish(api, plan(kernel, variants_file, "1.1.0"))
    after = hub.store.refs(KERNEL, REPO)
    assert after["tags"] == remote["tags"]
    files = hub.store.get_repo(KERNEL, REPO).commits
    assert files[after["branches"]["v1"]].files == files[remote["branches"]["v1"]].files  # rolled back


def test_a_commit_answered_done_that_did_not_land_is_not_tagged(
    hub, api, remote: dict, kernel: Path, variants_file: Path
) -> None:
    oid = "0123456789abcdef0123456789abcdef01234567"
    body = json.dumps({"commitOid": oid, "commitUrl": f"{hub.endpoint}/{REPO}/commit/{oid}"}).encode()
    hub.faults.answer_next("commit", 200, body)  # a well-formed answer for a commit that never happened
    with pytest.raises(PublishError, match="does not hold this release; nothing was tagged"):
        publish(api, plan(kernel, variants_file, "1.1.0"))
    assert hub.store.refs(KERNEL, REPO) == remote


def test_the_plan_reads_no_file_whole(kernel: Path, variants_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every release file is hashed in chunks: Path.read_bytes is never called on one (a 6 GB file
    would be a MemoryError), for --dry-run as for a publish."""
    big = build_file(kernel, "tinyk/weights.bin")
    real = Path.read_bytes

    def refuse_big(self: Path) -> bytes:
        assert self != big, "a release file was read whole"
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", refuse_big)
    with big.open("wb") as f:
        f.truncate(64 << 20)  # sparse: costs no disk
    size, sha256, _ = hash_file(big)
    assert size == 64 << 20
    v = VerifiedFile(big, size, sha256)
    while v.read(1 << 20):
        pass
    assert v.verified_passes == 1
