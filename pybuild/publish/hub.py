"""Talking to the Hub: the client check, each call retried on transient failures (``tenacity``), and
one-line errors for anything ``huggingface_hub`` raises."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from ..errors import PublishError
from .plan import ReleasePlan

#: Hub-managed file seeded into every new repo; kept, and ignored when comparing content.
HUB_MANAGED = (".gitattributes",)
DEFAULT_RETRIES = 4
BACKOFF_BASE_S = 1.0
BACKOFF_MAX_S = 30.0
RETRY_AFTER_MAX_S = 120.0  # a server's Retry-After is honoured up to this

T = TypeVar("T")


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
    msg = (
        f"huggingface_hub {installed} cannot upload to kernel repos (repo_type='kernel', which the kernels "
        f"loader reads, needs huggingface_hub >= {MIN_HUB_CLIENT}); upgrade it: "
        f"pip install -U 'huggingface_hub>={MIN_HUB_CLIENT}'"
    )
    raise PublishError(msg)


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


def status_code(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    code = getattr(response, "status_code", None)
    return code if isinstance(code, int) else None


def is_transient(exc: BaseException) -> bool:
    """Worth retrying: HTTP 5xx/429, a dropped or refused connection, a timeout."""
    code = status_code(exc)
    if code is not None:
        return code >= 500 or code == 429
    return isinstance(exc, (ConnectionError, TimeoutError, *_transport_errors()))


def _transport_errors() -> tuple[type[BaseException], ...]:
    """A dropped connection, a timeout or a protocol error in huggingface_hub's HTTP client (httpx2)."""
    try:
        import httpx2
    except ImportError:  # another client than the one huggingface_hub >= 2.3 uses: status codes and builtins only
        return ()
    return (httpx2.TransportError,)


def _retry_after(exc: BaseException) -> float | None:
    """The server's Retry-After in seconds, at most RETRY_AFTER_MAX_S; None where absent, not a number,
    negative or not finite (the exponential delay applies then)."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    try:
        value = headers.get("Retry-After")
        seconds = float(value) if value is not None else None
    except (TypeError, ValueError):
        return None
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return None
    return min(seconds, RETRY_AFTER_MAX_S)


def describe(exc: BaseException) -> str:
    """One line for an exception from huggingface_hub (server message, status), never a token."""
    code = status_code(exc)
    text = str(exc).strip().splitlines()
    first = text[0] if text else type(exc).__name__
    server = getattr(exc, "server_message", None)
    if server and server not in first:
        first = f"{first} ({server.strip()})"
    return f"HTTP {code}: {first}" if code and str(code) not in first else f"{type(exc).__name__}: {first}"


class Hub:
    """The calls a release makes, each retried on transient failures."""

    def __init__(
        self,
        api: Any,
        plan: ReleasePlan,
        *,
        retries: int,
        info: Callable[[str], None],
        sleep: Callable[[float], None] | None = None,
    ):
        self.api, self.plan, self.retries, self.info = api, plan, max(0, retries), info
        self.sleep = time.sleep if sleep is None else sleep  # looked up here: a patched time.sleep applies
        self._exponential = wait_exponential(multiplier=BACKOFF_BASE_S, max=BACKOFF_MAX_S)
        self.step = "start"  # what the run is doing, for the message if it fails
        self.wrote = False  # a write of this run was accepted (so the token may write)

    def retrying(self, what: str) -> Retrying:
        """Transient failures of ``what`` retried with exponential backoff (or the server's Retry-After)."""
        return Retrying(
            retry=retry_if_exception(is_transient),
            stop=stop_after_attempt(self.retries + 1),
            wait=self._wait,
            sleep=self.sleep,
            reraise=True,
            before_sleep=lambda state: self._report(what, state),
        )

    def call(self, what: str, fn: Callable[[], T]) -> T:
        return self.retrying(what)(fn)

    def last_attempt(self, state: RetryCallState) -> bool:
        return state.attempt_number > self.retries

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        delay = _retry_after(exc) if exc else None
        return delay if delay is not None else self._exponential(state)

    def _report(self, what: str, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        delay = state.next_action.sleep if state.next_action else 0.0
        self.info(
            f"  {what}: {describe(exc) if exc else 'failed'}; retry {state.attempt_number}/{self.retries} "
            f"in {delay:.0f} s"
        )

    # -- reads ---------------------------------------------------------------------------------
    def refs(self) -> tuple[dict[str, str], dict[str, str]]:
        p = self.plan
        refs = self.call("list refs", lambda: self.api.list_repo_refs(p.repo_id, repo_type=p.repo_type))
        return ({b.name: b.target_commit for b in refs.branches}, {t.name: t.target_commit for t in refs.tags})

    def tree(self, revision: str) -> dict[str, RemoteFile]:
        from huggingface_hub.hf_api import RepoFile

        p = self.plan
        entries = self.call(
            f"list files of {revision[:12]}",
            lambda: list(self.api.list_repo_tree(p.repo_id, repo_type=p.repo_type, revision=revision, recursive=True)),
        )
        out = {}
        for e in entries:
            if isinstance(e, RepoFile):
                lfs = getattr(e, "lfs", None)
                out[e.path] = RemoteFile(
                    getattr(e, "blob_id", None), getattr(lfs, "sha256", None) if lfs else None, e.size
                )
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


def make_api(token_required: bool = True) -> Any:
    """An ``HfApi`` with the token from ``HF_TOKEN`` or the saved login (never printed)."""
    from huggingface_hub import HfApi, get_token

    if token_required and not get_token():
        raise PublishError("no Hugging Face token: set HF_TOKEN or run `hf auth login` (a token with write access)")
    return HfApi()


class HubError(PublishError):
    """A release that failed on the Hub, as one line: ``exception`` (what huggingface_hub raised, also
    this error's ``__cause__``: ``raise HubError(...) from exception``, as pypa/build's
    ``BuildBackendException`` carries a backend's error) with the release's context: the ``step``
    that failed, whether this run's earlier writes were accepted (``token_ok``: a 403 after them is
    the step's refusal, not the token's) and what the remote holds now (``state``)."""

    def __init__(
        self,
        plan: ReleasePlan,
        exception: BaseException,
        *,
        step: str | None,
        token_ok: bool,
        state: str = "nothing was tagged",
    ) -> None:
        self.plan, self.exception, self.step, self.token_ok, self.state = plan, exception, step, token_ok, state
        super().__init__(self._message())

    def _message(self) -> str:
        plan, exc, state = self.plan, self.exception, self.state
        code = status_code(exc)
        at = f" at step `{self.step}`" if self.step else ""
        base = f"{plan.repo_id}: publishing {plan.version} failed{at}: {describe(exc)}"
        if code == 401 or (code == 403 and not self.token_ok):
            return (
                f"{base}; the Hub refused the token: check HF_TOKEN (or `hf auth login`) and that it may "
                f"write to {plan.repo_id.split('/')[0]}; {state}"
            )
        if code == 403:
            return (
                f"{base}; the token was accepted for this run's earlier writes, so the Hub forbids this "
                f"step itself (e.g. a protected branch or tag, a repo setting): check {plan.repo_id}'s "
                f"settings; {state}"
            )
        if is_transient(exc):
            return f"{base} (gave up after retries); {state}; run the same command again to complete the release"
        return f"{base}; {state}"
