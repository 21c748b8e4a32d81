"""Publish a kernel release to the Hugging Face Hub: one commit on branch ``v<major>``, then tag ``v<X.Y.Z>``.

``make_plan`` is local and pure apart from reading files: it selects what goes into the repo
(sources, the generated kernel card, ``build/``) and names the refs. ``publish_plan`` talks to the
Hub through ``huggingface_hub`` only, and is safe to run again at any point:

* the tag already exists on a commit with exactly this content → "already published", nothing written;
  with other content → refused (tags are never moved or recreated);
* the branch tip already holds exactly this content (a previous run committed, then died before
  tagging) → only the tag is created;
* otherwise one commit with ``parent_commit`` = the tip that was read (a concurrent push makes it
  fail instead of being overwritten), then the tag on exactly that commit.

Transient failures (HTTP 5xx/429, dropped connections, timeouts) are retried with exponential
backoff, a bounded number of times. Before a commit is retried the branch is read again, so a commit
whose response was lost is recognised rather than made twice (after a failed last try too). A failed
run leaves no tag, and no branch that it created; a branch it moved gets one more commit that
restores its previous files (it never disappears).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from . import safeload
from .check import CheckReport
from .errors import PublishError, UsageError
from .generate import generated_paths
from .manifest import Manifest
from .safeload import shown

VERSION_RE = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$", re.ASCII)
REPO_ID_RE = re.compile(r"^[A-Za-z0-9][-A-Za-z0-9_.]*/[A-Za-z0-9][-A-Za-z0-9_.]*$", re.ASCII)
#: Hub-managed file seeded into every new repo; kept, and ignored when comparing content.
HUB_MANAGED = (".gitattributes",)
CARD = "README.md"

#: What a release holds, relative to the kernel folder.
SOURCE_DIRS = ("csrc", "torch-ext", "tests")
SOURCE_FILES = ("build.toml", "flake.nix", "flake.lock", "LICENSE", "LICENSE.txt", "LICENSE.md")
#: Never uploaded: build trees, caches, generated CMake project files.
EXCLUDED_PARTS = {"__pycache__", ".pybuild", ".pytest_cache", ".git", ".mypy_cache", ".ruff_cache"}
EXCLUDED_SUFFIXES = (".pyc", ".pyo")
EXCLUDED_NAMES = {"compile_commands.json", ".DS_Store", "CMakeCache.txt", "CMakeFiles"}

DEFAULT_RETRIES = 4
BACKOFF_BASE_S = 1.0
BACKOFF_MAX_S = 30.0

T = TypeVar("T")


# --------------------------------------------------------------------------------------------
# The plan (local, no network)


def git_blob_oid(data: bytes) -> str:
    """The git blob sha1 the Hub reports as a regular file's oid."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass(frozen=True)
class ReleaseFile:
    path: str  # path in the repo (posix)
    size: int
    sha256: str
    git_oid: str
    source: Path | None  # the local file, or None for generated content
    content: bytes | None = None

    def data(self) -> bytes:
        if self.content is not None:
            return self.content
        assert self.source is not None
        return self.source.read_bytes()

    @classmethod
    def from_bytes(cls, path: str, data: bytes, source: Path | None = None) -> ReleaseFile:
        return cls(path, len(data), hashlib.sha256(data).hexdigest(), git_blob_oid(data), source,
                   None if source is not None else data)


@dataclass(frozen=True)
class ReleasePlan:
    kernel: str
    repo_id: str
    repo_type: str
    version: str
    branch: str
    tag: str
    files: tuple[ReleaseFile, ...]
    noncompliant: tuple[str, ...] = ()

    @property
    def total_size(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def variants(self) -> list[str]:
        return sorted({f.path.split("/")[1] for f in self.files
                       if f.path.startswith("build/") and f.path.count("/") >= 2})


def parse_version(version: str, manifest: Manifest) -> tuple[int, int, int]:
    m = VERSION_RE.fullmatch(version)
    if not m:
        raise UsageError(f"--version {version!r}: expected MAJOR.MINOR.PATCH, e.g. 1.0.0")
    major, minor, patch = (int(x) for x in m.groups())
    if major != manifest.version:
        msg = (f"--version {version}: major {major} differs from `version = {manifest.version}` in [general] of "
               f"{manifest.path} (the v<N> branch that get_kernel(version=N) loads); use "
               f"{manifest.version}.x.y, or bump `version` in build.toml and rebuild")
        raise UsageError(msg)
    return major, minor, patch


def check_repo_id(repo_id: str) -> str:
    if not REPO_ID_RE.fullmatch(repo_id) or ".." in repo_id or repo_id.endswith((".git", ".")):
        raise UsageError(f"--repo-id {repo_id!r}: expected ORG/NAME, e.g. my-org/img2gray")
    return repo_id


def _excluded(rel: Path) -> bool:
    return (any(part in EXCLUDED_PARTS or part in EXCLUDED_NAMES for part in rel.parts)
            or rel.suffix in EXCLUDED_SUFFIXES)


def _refuse_link(path: Path) -> PublishError:
    try:
        target = f" (to {os.readlink(path)})"
    except OSError:
        target = ""
    return PublishError(f"{shown(path)}: is a symlink{target}; publish uploads only the kernel's own files and a link "
                        "may lead out of the kernel folder: replace it with a copy of what it points to, or remove it")


def _own_file(root: Path, rel: str) -> Path | None:
    """``root/rel`` if it is a regular file reached without any symlink on the way (None if absent)."""
    path = root
    for part in Path(rel).parts:
        path = path / part
        try:
            mode = path.lstat().st_mode
        except FileNotFoundError:
            return None
        if stat.S_ISLNK(mode):
            raise _refuse_link(path)
    if not stat.S_ISREG(mode):
        if stat.S_ISDIR(mode):
            return None
        raise PublishError(f"{shown(path)}: not a regular file; publish uploads files only: remove it")
    return path


def _hidden_in_build(rel: Path) -> bool:
    """``build/.staging.*`` and other dot entries of build/: a run's work in progress, never a variant."""
    return rel.parts[0] == "build" and len(rel.parts) > 1 and rel.parts[1].startswith(".")


def select_files(manifest: Manifest) -> list[tuple[str, Path]]:
    """``(path in repo, local file)`` for the kernel's sources and ``build/``; never generated or cached
    files, and nothing reached through a symlink (refused by name) or that is not a regular file."""
    root = manifest.root
    generated = set(generated_paths(manifest))
    chosen: dict[str, Path] = {}
    for name in SOURCE_FILES:
        found = _own_file(root, name)
        if found is not None:
            chosen[name] = found
    # Everything build.toml names (sources, include folders, the wrapper), wherever it lives:
    # the published repo must rebuild from its own files.
    for rel in manifest.source_files():
        if rel not in generated and not _excluded(Path(rel)):
            found = _own_file(root, rel)
            if found is not None:
                chosen[rel] = found

    def skipped(path: Path) -> bool:
        rel = path.relative_to(root)
        return _excluded(rel) or _hidden_in_build(rel)

    # Include folders are uploaded (above) file by file; a symlinked folder in one is refused by name,
    # not left out (the release could not rebuild without it).
    for inc in (*manifest.torch_include, *(i for k in manifest.kernels for i in k.include)):
        base = root / inc
        if _own_file(root, inc) is None and base.is_dir():
            for p, st in safeload.walk(base, PublishError, prune=skipped):
                if stat.S_ISLNK(st.st_mode):
                    raise _refuse_link(p)

    for d in (*SOURCE_DIRS, "build"):
        base = root / d
        if base.is_symlink():
            raise _refuse_link(base)
        if not base.is_dir():
            continue
        # never descends into a symlinked folder, nor into a staging folder or an excluded part
        for p, st in safeload.walk(base, PublishError, prune=skipped):
            rel = p.relative_to(root)
            if stat.S_ISLNK(st.st_mode):
                raise _refuse_link(p)
            if stat.S_ISDIR(st.st_mode):
                continue
            if not stat.S_ISREG(st.st_mode):
                raise PublishError(f"{shown(p)}: not a regular file; publish uploads files only: remove it")
            posix = rel.as_posix()
            if d != "build" and (posix in generated or p.suffix in (".so", ".dylib", ".pyd")):
                continue
            chosen[posix] = p
    return sorted(chosen.items())


def noncompliance_lines(report: CheckReport) -> list[str]:
    lines = []
    for r in report.failures:
        where = f" for `{r.variant}`" if r.variant != "*" else ""
        lines.append(f"`{r.check}` failed{where}: {r.detail}")
    return lines


def make_plan(manifest: Manifest, *, repo_id: str, version: str, report: CheckReport,
              allow_noncompliant: bool, repo_type: str = "kernel") -> ReleasePlan:
    """What a release of ``manifest``'s kernel would write; refuses a build that fails ``check``."""
    from .card import render_card

    check_repo_id(repo_id)
    major, _, _ = parse_version(version, manifest)
    noncompliant = noncompliance_lines(report)
    built = [r for r in report.results if r.variant != "*"]
    if not built:
        raise PublishError(f"{manifest.root}/build: nothing built; run `python -m pybuild build {manifest.root}` first")
    if noncompliant and not allow_noncompliant:
        failed = ", ".join(sorted({r.check for r in report.failures}))
        msg = (f"{manifest.root}: the build fails `python -m pybuild check` ({failed}); fix that (see the table), "
               "or pass --allow-noncompliant to publish anyway (recorded in the kernel card)")
        raise PublishError(msg)
    files = [ReleaseFile.from_bytes(rel, p.read_bytes(), p) for rel, p in select_files(manifest)]
    card = render_card(manifest, repo_id=repo_id, version=version, report=report,
                       noncompliant=noncompliant if allow_noncompliant else [])
    files = [f for f in files if f.path != CARD] + [ReleaseFile.from_bytes(CARD, card.encode())]
    return ReleasePlan(
        kernel=manifest.name, repo_id=repo_id, repo_type=repo_type, version=version, branch=f"v{major}",
        tag=f"v{version}", files=tuple(sorted(files, key=lambda f: f.path)), noncompliant=tuple(noncompliant),
    )


# huggingface_hub knows the `kernel` repo type (REPO_TYPES_WITH_KERNEL) since 1.x, but its
# create_commit / preupload / upload_* accept it only from 2.3 on ("Invalid repo type" before).
MIN_HUB_CLIENT = "2.3"


def kernel_repo_type(installed: str | None = None) -> str:
    """``kernel`` where the installed huggingface_hub can upload to kernel repos (what the kernels
    loader reads); a PublishError naming the fix where it cannot."""
    from packaging.version import InvalidVersion, Version

    if installed is None:
        import huggingface_hub

        installed = huggingface_hub.__version__
    try:
        ok = Version(installed).release >= Version(MIN_HUB_CLIENT).release  # 2.3.0rc1 is a 2.3
    except InvalidVersion:
        ok = True  # a development build: let the Hub answer
    if ok:
        return "kernel"
    msg = (f"huggingface_hub {installed} cannot upload to kernel repos (repo_type='kernel', which the kernels "
           f"loader reads, needs huggingface_hub >= {MIN_HUB_CLIENT}); upgrade it: "
           f"pip install -U 'huggingface_hub>={MIN_HUB_CLIENT}'")
    raise PublishError(msg)


# --------------------------------------------------------------------------------------------
# Talking to the Hub


@dataclass(frozen=True)
class RemoteFile:
    git_oid: str | None
    lfs_sha256: str | None
    size: int


@dataclass(frozen=True)
class PublishResult:
    status: str  # "published" | "already published" | "tagged existing commit"
    commit: str
    branch: str
    tag: str
    url: str


def _status_code(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    code = getattr(response, "status_code", None)
    return code if isinstance(code, int) else None


def is_transient(exc: BaseException) -> bool:
    """Worth retrying: HTTP 5xx/429, a dropped or refused connection, a timeout."""
    code = _status_code(exc)
    if code is not None:
        return code >= 500 or code == 429
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return True
    for mod in ("httpx2", "httpx", "requests"):
        try:
            lib = __import__(mod)
        except ImportError:
            continue
        for name in ("TransportError", "TimeoutException", "ConnectionError", "Timeout"):
            cls = getattr(lib, name, None)
            if isinstance(cls, type) and isinstance(exc, cls):
                return True
    return False


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    try:
        value = headers.get("Retry-After")
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def describe(exc: BaseException) -> str:
    """One line for an exception from huggingface_hub (server message, status), never a token."""
    code = _status_code(exc)
    text = str(exc).strip().splitlines()
    first = text[0] if text else type(exc).__name__
    server = getattr(exc, "server_message", None)
    if server and server not in first:
        first = f"{first} ({server.strip()})"
    return f"HTTP {code}: {first}" if code and str(code) not in first else f"{type(exc).__name__}: {first}"


class Hub:
    """The calls a release makes, each retried on transient failures."""

    def __init__(self, api: Any, plan: ReleasePlan, *, retries: int, info: Callable[[str], None],
                 sleep: Callable[[float], None] = time.sleep):
        self.api, self.plan, self.retries, self.info, self.sleep = api, plan, max(0, retries), info, sleep
        self.step = "start"  # what the run is doing, for the message if it fails
        self.wrote = False  # a write of this run was accepted (so the token may write)

    def backoff(self, what: str, exc: BaseException, attempt: int) -> None:
        delay = _retry_after(exc)
        if delay is None:
            delay = min(BACKOFF_BASE_S * 2 ** (attempt - 1), BACKOFF_MAX_S)
        self.info(f"  {what}: {describe(exc)}; retry {attempt}/{self.retries} in {delay:.0f} s")
        self.sleep(delay)

    def call(self, what: str, fn: Callable[[], T]) -> T:
        for attempt in range(1, self.retries + 2):
            try:
                return fn()
            except Exception as e:  # noqa: BLE001 (classified just below)
                if not is_transient(e) or attempt > self.retries:
                    raise
                self.backoff(what, e, attempt)
        raise AssertionError("unreachable")

    # -- reads ---------------------------------------------------------------------------------
    def refs(self) -> tuple[dict[str, str], dict[str, str]]:
        p = self.plan
        refs = self.call("list refs", lambda: self.api.list_repo_refs(p.repo_id, repo_type=p.repo_type))
        return ({b.name: b.target_commit for b in refs.branches}, {t.name: t.target_commit for t in refs.tags})

    def tree(self, revision: str) -> dict[str, RemoteFile]:
        from huggingface_hub.hf_api import RepoFile

        p = self.plan
        entries = self.call(f"list files of {revision[:12]}", lambda: list(
            self.api.list_repo_tree(p.repo_id, repo_type=p.repo_type, revision=revision, recursive=True)))
        out = {}
        for e in entries:
            if isinstance(e, RepoFile):
                lfs = getattr(e, "lfs", None)
                out[e.path] = RemoteFile(getattr(e, "blob_id", None), getattr(lfs, "sha256", None) if lfs else None,
                                         e.size)
        return out


def differences(plan: ReleasePlan, remote: dict[str, RemoteFile]) -> list[str]:
    """How ``remote`` (a commit's files) differs from the release; empty = the same content."""
    local = {f.path: f for f in plan.files}
    theirs = {k: v for k, v in remote.items() if k not in HUB_MANAGED}
    out = [f"only on the Hub: {p}" for p in sorted(set(theirs) - set(local))]
    out += [f"not on the Hub: {p}" for p in sorted(set(local) - set(theirs))]
    for p in sorted(set(local) & set(theirs)):
        if p.endswith("/metadata.json.sigstore"):
            continue  # a signature of the same metadata.json (compared itself), made at another time
        f, r = local[p], theirs[p]
        same = (r.lfs_sha256 == f.sha256) if r.lfs_sha256 else (r.git_oid == f.git_oid)
        if not same:
            out.append(f"differs: {p}")
    return out


def _operations(plan: ReleasePlan, remote: dict[str, RemoteFile]) -> list[Any]:
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    ops: list[Any] = [CommitOperationAdd(path_in_repo=f.path, path_or_fileobj=str(f.source) if f.source else f.data())
                      for f in plan.files]
    keep = {f.path for f in plan.files} | set(HUB_MANAGED)
    ops += [CommitOperationDelete(path_in_repo=p) for p in sorted(remote) if p not in keep]
    return ops


def _commit_message(plan: ReleasePlan) -> tuple[str, str]:
    from . import __version__

    title = f"Release {plan.kernel} {plan.version}"
    body = [f"{len(plan.files)} files, variants:", *(f"- {v}" for v in plan.variants), "",
            f"Published by pybuild {__version__}."]
    if plan.noncompliant:
        body += ["", "Published with --allow-noncompliant:", *(f"- {line}" for line in plan.noncompliant)]
    return title, "\n".join(body)


def _newer_release(plan: ReleasePlan, tags: Iterable[str]) -> str | None:
    mine = tuple(int(x) for x in plan.version.split("."))
    major = mine[0]
    newer = []
    for t in tags:
        m = VERSION_RE.fullmatch(t[1:]) if t.startswith("v") else None
        if m and int(m[1]) == major and tuple(int(x) for x in m.groups()) > mine:
            newer.append(tuple(int(x) for x in m.groups()))
    return "v" + ".".join(map(str, max(newer))) if newer else None


def publish_plan(api: Any, plan: ReleasePlan, *, retries: int = DEFAULT_RETRIES, info: Callable[[str], None] = print,
                 progress: Callable[[str, float | None], None] | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> PublishResult:
    """Write ``plan`` to the Hub (see the module docstring for the guarantees). An exception from the
    Hub leaves the refs as they were (the branch is rolled back if the tag fails) and carries
    ``pybuild_step`` (what failed), ``pybuild_token_ok`` and ``pybuild_state`` (what the remote holds
    now) for :func:`hub_error`."""
    hub = Hub(api, plan, retries=retries, info=info, sleep=sleep)
    try:
        return _publish(hub, plan, progress or (lambda message, fraction: None))
    except Exception as e:
        if not isinstance(e, PublishError):
            e.pybuild_step = getattr(e, "pybuild_step", hub.step)  # type: ignore[attr-defined]
            e.pybuild_token_ok = hub.wrote  # type: ignore[attr-defined]
        raise


def _publish(hub: Hub, plan: ReleasePlan, step: Callable[[str, float | None], None]) -> PublishResult:
    api = hub.api
    url = f"{getattr(api, 'endpoint', '')}/{'kernels/' if plan.repo_type == 'kernel' else ''}{plan.repo_id}"

    hub.step = "create the repo"
    step("creating the repo if missing", None)
    hub.call("create repo", lambda: api.create_repo(plan.repo_id, repo_type=plan.repo_type, exist_ok=True))
    hub.wrote = True
    hub.step = "read the refs"
    step("reading refs", None)
    branches, tags = hub.refs()

    if plan.tag in tags:
        commit = tags[plan.tag]
        hub.step = f"list the files of tag {plan.tag}"
        diff = differences(plan, hub.tree(commit))
        if not diff:
            return PublishResult("already published", commit, plan.branch, plan.tag, url)
        shown = "; ".join(diff[:3]) + (f"; … {len(diff) - 3} more" if len(diff) > 3 else "")
        msg = (f"{plan.repo_id}: tag {plan.tag} already exists on commit {commit[:12]} with other content ({shown}); "
               f"tags are never moved or recreated: publish a new version (e.g. {_bump(plan.version)})")
        raise PublishError(msg)
    newer = _newer_release(plan, tags)
    if newer:
        msg = (f"{plan.repo_id}: {newer} is already published; releasing {plan.version} would move branch "
               f"{plan.branch} back to older code; publish a version above {newer[1:]}")
        raise PublishError(msg)

    created_branch = False
    tip = branches.get(plan.branch)
    try:
        if tip is None:
            hub.step = f"create branch {plan.branch}"
            step(f"creating branch {plan.branch}", None)
            hub.call(f"create branch {plan.branch}", lambda: api.create_branch(
                plan.repo_id, branch=plan.branch, repo_type=plan.repo_type, exist_ok=True))
            created_branch = True
            hub.step = f"read the refs after creating branch {plan.branch}"
            branches, _ = hub.refs()
            tip = branches[plan.branch]
        hub.step = f"list the files of branch {plan.branch}"
        remote = hub.tree(tip)
        if differences(plan, remote):
            hub.step = f"upload the files as one commit on branch {plan.branch}"
            commit = _commit(hub, plan, tip, remote, step)
            hub.wrote = True
            status = "published"
        else:
            info = hub.info
            info(f"  branch {plan.branch} already holds this release (commit {tip[:12]}): only tagging it")
            commit, status = tip, "tagged existing commit"
    except BaseException as e:
        if created_branch:
            _annotate(e, _drop_branch_if_unused(hub, plan, tip))
        raise
    hub.step = f"create tag {plan.tag}"
    step(f"tagging {plan.tag}", None)
    try:
        _tag(hub, plan, commit)
    except BaseException as e:
        if status == "published":  # this run moved the branch: move it back, so that nothing is half-released
            state = _roll_back(hub, plan, commit, None if created_branch else tip)
            if state is None:  # the tag went through (its answer and the check were lost): released
                if isinstance(e, Exception):
                    hub.info(f"  tag {plan.tag} went through although its answer was lost ({describe(e)})")
                    return PublishResult(status, commit, plan.branch, plan.tag, url)
                state = f"the release is complete: tag {plan.tag} and branch {plan.branch} point at {commit[:12]}"
            _annotate(e, state)
        raise
    return PublishResult(status, commit, plan.branch, plan.tag, url)


def _annotate(exc: BaseException, state: str) -> None:
    if isinstance(exc, PublishError):
        exc.args = (f"{exc}; {state}",)
    else:
        exc.pybuild_state = state  # type: ignore[attr-defined]


def _roll_back(hub: Hub, plan: ReleasePlan, ours: str, previous: str | None) -> str | None:
    """Put branch ``plan.branch`` back where it was before this run's commit ``ours`` (remove it if
    this run created it); what the remote holds now, as a phrase. None when tag ``plan.tag`` already
    points at ``ours`` (a tag whose answer was lost): the release is complete and stays."""
    api, p = hub.api, plan
    try:
        branches, tags = hub.refs()
        if tags.get(p.tag) == ours:
            return None
        now = branches.get(p.branch)
        if now != ours:
            return (f"branch {p.branch} was moved by someone else meanwhile (to {str(now)[:12]}) and is left as it "
                    "is; nothing was tagged")
        if previous is None:
            hub.call(f"delete branch {p.branch}", lambda: api.delete_branch(p.repo_id, branch=p.branch,
                                                                              repo_type=p.repo_type))
            return f"branch {p.branch}, which this run had created, was removed again: nothing was released"
        undo = _restore_commit(hub, plan, ours, previous)
        return (f"branch {p.branch} was rolled back by commit {undo[:12]}, which restores the files of "
                f"{previous[:12]}: nothing was released")
    except Exception as e:  # noqa: BLE001 (the original error matters more)
        return (f"rolling back branch {p.branch} failed too ({describe(e)}): it points at {ours[:12]}, the complete "
                f"release without its tag; run the same command again to tag it")


def _restore_commit(hub: Hub, plan: ReleasePlan, ours: str, previous: str) -> str:
    """A commit on top of ``ours`` whose files are those of ``previous``: the branch moves back in content
    without ever disappearing (users of it see the old release or the new one, never no branch)."""
    import tempfile

    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    api, p = hub.api, plan
    before, now = hub.tree(previous), hub.tree(ours)
    ops: list[Any] = [CommitOperationDelete(path_in_repo=f) for f in sorted(set(now) - set(before))]
    with tempfile.TemporaryDirectory(prefix="pybuild-rollback-") as tmp:
        for f in sorted(f for f, r in before.items() if now.get(f) != r):
            local = hub.call(f"download {f} of {previous[:12]}", lambda f=f: api.hf_hub_download(
                p.repo_id, f, repo_type=p.repo_type, revision=previous, local_dir=tmp))
            ops.append(CommitOperationAdd(path_in_repo=f, path_or_fileobj=local))
        try:
            info = api.create_commit(p.repo_id, repo_type=p.repo_type, revision=p.branch, parent_commit=ours,
                                     operations=ops, commit_message=f"Roll back {p.kernel} {p.version}",
                                     commit_description=f"Tagging {p.tag} failed: restores the files of {previous}.")
            return str(info.oid)
        except Exception:
            branches, _ = hub.refs()  # an answer lost: the commit may have gone through
            landed = branches.get(p.branch)
            if landed not in (None, ours) and hub.tree(landed) == before:
                return str(landed)
            raise


def _bump(version: str) -> str:
    major, minor, patch = version.split(".")
    return f"{major}.{minor}.{int(patch) + 1}"


def _commit(hub: Hub, plan: ReleasePlan, tip: str, remote: dict[str, RemoteFile],
            step: Callable[[str, float | None], None]) -> str:
    """One commit on top of ``tip``; a retry first checks whether a lost attempt went through."""
    title, body = _commit_message(plan)
    size = plan.total_size
    for attempt in range(1, hub.retries + 2):
        step(f"uploading {len(plan.files)} files ({size / 2**20:.1f} MiB) as one commit on {plan.branch}", None)
        try:
            info = hub.api.create_commit(
                plan.repo_id, repo_type=plan.repo_type, revision=plan.branch, parent_commit=tip,
                operations=_operations(plan, remote), commit_message=title, commit_description=body,
            )
            return str(info.oid)
        except Exception as e:  # noqa: BLE001
            # Whatever failed, the commit may have gone through (an answer lost, even on the last try):
            # a branch that moved to exactly this release is this run's commit, to be tagged.
            try:
                branches, _ = hub.refs()
                now = branches.get(plan.branch)
                landed = now is not None and now != tip and not differences(plan, hub.tree(now))
            except Exception:  # noqa: BLE001 (cannot tell: the original error decides)
                now, landed = tip, False
            if landed:
                assert now is not None
                hub.info(f"  the commit went through although its answer was lost ({describe(e)}): {now[:12]}")
                return now
            if _status_code(e) == 412:
                msg = (f"{plan.repo_id}: branch {plan.branch} moved while publishing (someone else pushed to it); "
                       "nothing was tagged; run the same command again")
                raise PublishError(msg) from None
            if not is_transient(e) or attempt > hub.retries:
                raise
            if now != tip:
                msg = (f"{plan.repo_id}: branch {plan.branch} moved to {str(now)[:12]} during the upload; "
                       "nothing was tagged; run the same command again")
                raise PublishError(msg) from None
            hub.backoff("commit", e, attempt)
    raise AssertionError("unreachable")


def _tag(hub: Hub, plan: ReleasePlan, commit: str) -> None:
    for attempt in range(1, hub.retries + 2):
        try:
            hub.api.create_tag(plan.repo_id, tag=plan.tag, revision=commit, repo_type=plan.repo_type,
                               tag_message=f"{plan.kernel} {plan.version}")
            return
        except Exception as e:  # noqa: BLE001
            _, tags = hub.refs()
            if tags.get(plan.tag) == commit:
                return  # created by a try whose answer was lost
            if plan.tag in tags:
                msg = (f"{plan.repo_id}: tag {plan.tag} was created on {tags[plan.tag][:12]} by someone else while "
                       f"publishing commit {commit[:12]}; tags are never moved: check the repo")
                raise PublishError(msg) from None
            if not is_transient(e) or attempt > hub.retries:
                raise
            hub.backoff("tag", e, attempt)


def _drop_branch_if_unused(hub: Hub, plan: ReleasePlan, start: str | None) -> str:
    """Remove the branch this run created, if it still points where it was created (``start``; None
    when the run could not read it back: nothing was committed, so wherever it points); what the
    remote holds now, as a phrase."""
    try:
        branches, _ = hub.refs()
        now = branches.get(plan.branch)
        if now is None:
            return "nothing was released"
        if start is None or now == start:
            hub.call(f"delete branch {plan.branch}", lambda: hub.api.delete_branch(
                plan.repo_id, branch=plan.branch, repo_type=plan.repo_type))
            hub.info(f"  removed branch {plan.branch}, which this run had created")
            return f"branch {plan.branch}, which this run had created, was removed again: nothing was released"
        return f"branch {plan.branch} was moved by someone else meanwhile and is left as it is; nothing was tagged"
    except Exception as e:  # noqa: BLE001 (the original error matters more)
        return (f"could not remove branch {plan.branch} ({describe(e)}); it points at {str(start)[:12]}, the commit "
                "it was created from, and the next run reuses it; nothing was tagged")


def make_api(token_required: bool = True) -> Any:
    """An ``HfApi`` with the token from ``HF_TOKEN`` or the saved login (never printed)."""
    from huggingface_hub import HfApi, get_token

    if token_required and not get_token():
        raise PublishError("no Hugging Face token: set HF_TOKEN or run `hf auth login` (a token with write access)")
    return HfApi()


def hub_error(exc: BaseException, plan: ReleasePlan) -> PublishError:
    """A one-line PublishError for anything huggingface_hub raised."""
    code = _status_code(exc)
    step = getattr(exc, "pybuild_step", None)
    at = f" at step `{step}`" if step else ""
    state = getattr(exc, "pybuild_state", None) or "nothing was tagged"
    base = f"{plan.repo_id}: publishing {plan.version} failed{at}: {describe(exc)}"
    if code == 401 or (code == 403 and not getattr(exc, "pybuild_token_ok", False)):
        return PublishError(f"{base}; the Hub refused the token: check HF_TOKEN (or `hf auth login`) and that it may "
                            f"write to {plan.repo_id.split('/')[0]}; {state}")
    if code == 403:
        return PublishError(f"{base}; the token was accepted for this run's earlier writes, so the Hub forbids this "
                            f"step itself (e.g. a protected branch or tag, a repo setting): check {plan.repo_id}'s "
                            f"settings; {state}")
    if is_transient(exc):
        return PublishError(f"{base} (gave up after retries); {state}; run the same command again to complete the "
                            "release")
    return PublishError(f"{base}; {state}")
