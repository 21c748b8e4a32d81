"""Writing a release plan to the Hub as one commit and one tag, all or nothing (see :mod:`pybuild.publish`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import Any, BinaryIO, cast

from packaging.version import Version

from ..errors import PublishError
from .hub import (
    DEFAULT_RETRIES,
    HUB_MANAGED,
    Hub,
    HubError,
    PublishResult,
    RemoteFile,
    describe,
    differences,
    is_transient,
    status_code,
)
from .plan import VERSION_RE, ReleaseFile, ReleasePlan
from .stream import VerifiedFile


def _operations(plan: ReleasePlan, remote: dict[str, RemoteFile]) -> list[Any]:
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    ops: list[Any] = [CommitOperationAdd(path_in_repo=f.path, path_or_fileobj=_payload(f)) for f in plan.files]
    keep = {f.path for f in plan.files} | set(HUB_MANAGED)
    ops += [CommitOperationDelete(path_in_repo=p) for p in sorted(remote) if p not in keep]
    return ops


def _payload(f: ReleaseFile) -> bytes | BinaryIO:
    """What the upload reads for ``f``: generated content as it is, a local file through
    :class:`VerifiedFile` (its manifest digest checked on every pass, never the path itself)."""
    if f.source is None:
        assert f.content is not None
        return f.content
    return cast(BinaryIO, VerifiedFile(f.source, f.size, f.sha256))


def _commit_message(plan: ReleasePlan) -> tuple[str, str]:
    from .. import __version__

    title = f"Release {plan.kernel} {plan.version}"
    body = [
        f"{len(plan.files)} files, variants:",
        *(f"- {v}" for v in plan.variants),
        "",
        f"Published by pybuild {__version__}.",
    ]
    if plan.noncompliant:
        body += ["", "Published with --allow-noncompliant:", *(f"- {line}" for line in plan.noncompliant)]
    return title, "\n".join(body)


def _newer_release(plan: ReleasePlan, tags: Iterable[str]) -> str | None:
    mine = Version(plan.version)
    released = [Version(t[1:]) for t in tags if t.startswith("v") and VERSION_RE.fullmatch(t[1:])]
    newer = [v for v in released if v.major == mine.major and v > mine]
    return f"v{max(newer)}" if newer else None


def publish_plan(
    api: Any,
    plan: ReleasePlan,
    *,
    retries: int = DEFAULT_RETRIES,
    info: Callable[[str], None] = print,
    progress: Callable[[str, float | None], None] | None = None,
    sleep: Callable[[float], None] | None = None,
) -> PublishResult:
    """Write ``plan`` to the Hub (see :mod:`pybuild.publish` for the guarantees). A failure leaves the
    refs as they were (the branch is rolled back if the tag fails) and raises a PublishError; one
    from the Hub is a :class:`HubError` wrapping what huggingface_hub raised, with the step that
    failed and what the remote holds now. ``sleep`` waits between retries (``time.sleep`` when None)."""
    hub = Hub(api, plan, retries=retries, info=info, sleep=sleep)
    try:
        return _publish(hub, plan, progress or (lambda message, fraction: None))
    except PublishError:
        raise
    except Exception as e:
        raise HubError(plan, e, step=hub.step, token_ok=hub.wrote) from e


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
        return _already_tagged(hub, plan, tags[plan.tag], url)
    newer = _newer_release(plan, tags)
    if newer:
        msg = (
            f"{plan.repo_id}: {newer} is already published; releasing {plan.version} would move branch "
            f"{plan.branch} back to older code; publish a version above {newer[1:]}"
        )
        raise PublishError(msg)

    tip = branches.get(plan.branch)
    commit, status, created_branch, tip = _commit_on_branch(hub, plan, tip, step)
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
            _raise_with_state(hub, e, state)
        raise
    return PublishResult(status, commit, plan.branch, plan.tag, url)


def _already_tagged(hub: Hub, plan: ReleasePlan, commit: str, url: str) -> PublishResult:
    """``plan.tag`` exists: "already published" when it holds exactly this content, else refused."""
    hub.step = f"list the files of tag {plan.tag}"
    diff = differences(plan, hub.tree(commit))
    if not diff:
        return PublishResult("already published", commit, plan.branch, plan.tag, url)
    shown = "; ".join(diff[:3]) + (f"; … {len(diff) - 3} more" if len(diff) > 3 else "")
    msg = (
        f"{plan.repo_id}: tag {plan.tag} already exists on commit {commit[:12]} with other content ({shown}); "
        f"tags are never moved or recreated: publish a new version (e.g. {_bump(plan.version)})"
    )
    raise PublishError(msg)


def _commit_on_branch(
    hub: Hub, plan: ReleasePlan, tip: str | None, step: Callable[[str, float | None], None]
) -> tuple[str, str, bool, str | None]:
    """The release as a commit on ``plan.branch`` (created if missing; reused if its tip already holds it):
    ``(commit, status, created_branch, tip before)``. A failure removes a branch this run created."""
    api, created_branch = hub.api, False
    try:
        if tip is None:
            hub.step = f"create branch {plan.branch}"
            step(f"creating branch {plan.branch}", None)
            hub.call(
                f"create branch {plan.branch}",
                lambda: api.create_branch(plan.repo_id, branch=plan.branch, repo_type=plan.repo_type, exist_ok=True),
            )
            created_branch = True
            hub.step = f"read the refs after creating branch {plan.branch}"
            branches, _ = hub.refs()
            tip = branches[plan.branch]
        hub.step = f"list the files of branch {plan.branch}"
        remote = hub.tree(tip)
        if not differences(plan, remote):
            hub.info(f"  branch {plan.branch} already holds this release (commit {tip[:12]}): only tagging it")
            return tip, "tagged existing commit", created_branch, tip
        hub.step = f"upload the files as one commit on branch {plan.branch}"
        commit = _commit(hub, plan, tip, remote, step)
        hub.wrote = True
        return commit, "published", created_branch, tip
    except BaseException as e:
        if created_branch:
            _raise_with_state(hub, e, _drop_branch_if_unused(hub, plan, tip))
        raise


def _raise_with_state(hub: Hub, exc: BaseException, state: str) -> None:
    """Raise ``exc``'s error again with ``state`` (what the remote holds now): a PublishError as one of
    its own message and that state, an exception from the Hub wrapped in a :class:`HubError` carrying
    the state; anything else (an interrupt) returns, for the caller to raise as it is."""
    if isinstance(exc, HubError):
        raise HubError(hub.plan, exc.exception, step=exc.step, token_ok=exc.token_ok, state=state) from exc.exception
    if isinstance(exc, PublishError):
        raise PublishError(f"{exc}; {state}") from exc
    if isinstance(exc, Exception):
        raise HubError(hub.plan, exc, step=hub.step, token_ok=hub.wrote, state=state) from exc


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
            return (
                f"branch {p.branch} was moved by someone else meanwhile (to {str(now)[:12]}) and is left as it "
                "is; nothing was tagged"
            )
        if previous is None:
            hub.call(
                f"delete branch {p.branch}",
                lambda: api.delete_branch(p.repo_id, branch=p.branch, repo_type=p.repo_type),
            )
            return f"branch {p.branch}, which this run had created, was removed again: nothing was released"
        undo = _restore_commit(hub, plan, ours, previous)
        return (
            f"branch {p.branch} was rolled back by commit {undo[:12]}, which restores the files of "
            f"{previous[:12]}: nothing was released"
        )
    except Exception as e:  # noqa: BLE001 (the original error matters more)
        return (
            f"rolling back branch {p.branch} failed too ({describe(e)}): it points at {ours[:12]}, the complete "
            f"release without its tag; run the same command again to tag it"
        )


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
            local = hub.call(
                f"download {f} of {previous[:12]}",
                partial(api.hf_hub_download, p.repo_id, f, repo_type=p.repo_type, revision=previous, local_dir=tmp),
            )
            ops.append(CommitOperationAdd(path_in_repo=f, path_or_fileobj=local))
        try:
            info = api.create_commit(
                p.repo_id,
                repo_type=p.repo_type,
                revision=p.branch,
                parent_commit=ours,
                operations=ops,
                commit_message=f"Roll back {p.kernel} {p.version}",
                commit_description=f"Tagging {p.tag} failed: restores the files of {previous}.",
            )
            return str(info.oid)
        except Exception:
            branches, _ = hub.refs()  # an answer lost: the commit may have gone through
            landed = branches.get(p.branch)
            if landed not in (None, ours) and hub.tree(landed) == before:
                return str(landed)
            raise


def _bump(version: str) -> str:
    v = Version(version)
    return f"{v.major}.{v.minor}.{v.micro + 1}"


def _commit(
    hub: Hub, plan: ReleasePlan, tip: str, remote: dict[str, RemoteFile], step: Callable[[str, float | None], None]
) -> str:
    """One commit on top of ``tip``; a retry first checks whether a lost attempt went through."""
    title, body = _commit_message(plan)
    size = plan.total_size
    for attempt in hub.retrying("commit"):
        with attempt:
            step(f"uploading {len(plan.files)} files ({size / 2**20:.1f} MiB) as one commit on {plan.branch}", None)
            try:
                info = hub.api.create_commit(
                    plan.repo_id,
                    repo_type=plan.repo_type,
                    revision=plan.branch,
                    parent_commit=tip,
                    operations=_operations(plan, remote),
                    commit_message=title,
                    commit_description=body,
                )
            except Exception as e:  # noqa: BLE001
                landed = _landed_commit(hub, plan, tip, e, last=hub.last_attempt(attempt.retry_state))
                if landed is not None:
                    return landed
                raise
            return _read_back_commit(hub, plan, str(getattr(info, "oid", "")))
    raise AssertionError("unreachable")


def _read_back_commit(hub: Hub, plan: ReleasePlan, answered: str) -> str:
    """The branch as the refs show it after the commit, trusted over the commit's answer: it must
    point at the answered commit, holding exactly the release. Where the refs cannot be read (the
    retries spent), the answer stands, as before any read-back: the tag step reads them again."""
    try:
        branches, _ = hub.refs()
        now = branches.get(plan.branch)
        holds = now is not None and not differences(plan, hub.tree(now))
    except Exception:  # noqa: BLE001 (no refs to trust: the commit's answer decides)
        return answered
    if now != answered or not holds:
        msg = (
            f"{plan.repo_id}: the Hub answered the commit with {answered[:12] or 'no commit id'}, but branch "
            f"{plan.branch} points at {str(now)[:12]}, which does not hold this release; nothing was tagged: "
            "check the repo, then run the same command again"
        )
        raise PublishError(msg)
    return now


def _landed_commit(hub: Hub, plan: ReleasePlan, tip: str, exc: Exception, *, last: bool) -> str | None:
    """After a failed commit: this run's commit if it went through anyway (an answer lost, even on the
    last try); a PublishError where the branch moved; None to let ``exc`` be retried or raised."""
    try:
        branches, _ = hub.refs()
        now = branches.get(plan.branch)
        landed = now is not None and now != tip and not differences(plan, hub.tree(now))
    except Exception:  # noqa: BLE001 (cannot tell: the original error decides)
        now, landed = tip, False
    if landed:
        assert now is not None
        hub.info(f"  the commit went through although its answer was lost ({describe(exc)}): {now[:12]}")
        return now
    if status_code(exc) == 412:
        msg = (
            f"{plan.repo_id}: branch {plan.branch} moved while publishing (someone else pushed to it); "
            "nothing was tagged; run the same command again"
        )
        raise PublishError(msg) from None
    if is_transient(exc) and not last and now != tip:
        msg = (
            f"{plan.repo_id}: branch {plan.branch} moved to {str(now)[:12]} during the upload; "
            "nothing was tagged; run the same command again"
        )
        raise PublishError(msg) from None
    return None


def _tag(hub: Hub, plan: ReleasePlan, commit: str) -> None:
    for attempt in hub.retrying("tag"):
        with attempt:
            try:
                hub.api.create_tag(
                    plan.repo_id,
                    tag=plan.tag,
                    revision=commit,
                    repo_type=plan.repo_type,
                    tag_message=f"{plan.kernel} {plan.version}",
                )
            except Exception:  # noqa: BLE001
                _, tags = hub.refs()
                if tags.get(plan.tag) == commit:
                    return  # created by a try whose answer was lost
                if plan.tag in tags:
                    msg = (
                        f"{plan.repo_id}: tag {plan.tag} was created on {tags[plan.tag][:12]} by someone else "
                        f"while publishing commit {commit[:12]}; tags are never moved: check the repo"
                    )
                    raise PublishError(msg) from None
                raise
            try:
                _, tags = hub.refs()  # the refs, not the answer, say whether the tag exists
            except Exception:  # noqa: BLE001 (no refs to trust: the answer decides, as before any read-back)
                return
            if tags.get(plan.tag) != commit:
                now = f"points at {tags[plan.tag][:12]}" if plan.tag in tags else "does not exist"
                msg = (
                    f"{plan.repo_id}: the Hub answered the creation of tag {plan.tag} as done, but the tag {now} "
                    f"(expected {commit[:12]})"
                )
                raise PublishError(msg)
            return


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
            hub.call(
                f"delete branch {plan.branch}",
                lambda: hub.api.delete_branch(plan.repo_id, branch=plan.branch, repo_type=plan.repo_type),
            )
            hub.info(f"  removed branch {plan.branch}, which this run had created")
            return f"branch {plan.branch}, which this run had created, was removed again: nothing was released"
        return f"branch {plan.branch} was moved by someone else meanwhile and is left as it is; nothing was tagged"
    except Exception as e:  # noqa: BLE001 (the original error matters more)
        return (
            f"could not remove branch {plan.branch} ({describe(e)}); it points at {str(start)[:12]}, the commit "
            "it was created from, and the next run reuses it; nothing was tagged"
        )
