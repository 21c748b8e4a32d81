"""A loopback Hugging Face Hub API server, for tests only.

The server speaks the subset of the Hub HTTP API that the real clients use
(``huggingface_hub.HfApi``, ``hf_hub_download``/``snapshot_download`` and the
``kernels`` loader/CLI), so they work against it unchanged once ``HF_ENDPOINT``
points here.  It is never a product default: it binds to 127.0.0.1 on an
ephemeral port and keeps everything in memory.

Storage is git-like: a repo (keyed by repo type + id) has commits (40-hex ids,
a parent and a full ``path -> blob`` snapshot), branches and tags.  Blob
contents are stored once, content-addressed by sha256; the git blob sha1 is
what the API reports as a file ``oid``/``ETag``, as the Hub does.

Uploads never go through LFS or Xet: ``preupload`` answers ``uploadMode:
"regular"`` for every file, so ``huggingface_hub`` sends file contents inline
(base64) in the NDJSON commit payload.

Faults (failed or dropped requests) are injected through ``HubServer.faults``,
a Python API; nothing about faults is reachable over the network.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

# Plural API segment (``/api/kernels/...``) -> repo type.
API_TYPES = {"models": "model", "datasets": "dataset", "spaces": "space", "kernels": "kernel"}
# Repo type -> prefix of its web/download URLs (models have none).
URL_PREFIX = {"model": "", "dataset": "datasets/", "space": "spaces/", "kernel": "kernels/"}

# Route names, as used by the request log and by fault injection.
ROUTES = frozenset(
    {
        "whoami",
        "org_overview",
        "agent_harnesses",
        "create_repo",
        "delete_repo",
        "repo_info",
        "refs",
        "tree",
        "commits",
        "preupload",
        "commit",
        "create_branch",
        "delete_branch",
        "create_tag",
        "delete_tag",
        "resolve",
        "validate_yaml",
    }
)

DEFAULT_BRANCH = "main"
# The Hub seeds every new repo with a .gitattributes file in an initial commit.
INITIAL_GITATTRIBUTES = (
    b"*.bin filter=lfs diff=lfs merge=lfs -text\n*.safetensors filter=lfs diff=lfs merge=lfs -text\n"
)
BAD_CREDENTIALS = "Invalid credentials in Authorization header"  # huggingface_hub keys on this text


def git_blob_oid(data: bytes) -> str:
    """The git blob sha1 of ``data`` (what the Hub reports as a regular file's oid/ETag)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class HubError(Exception):
    """An API error: rendered as ``{"error": message}`` plus the Hub's error headers.

    ``code`` goes into ``X-Error-Code``, which huggingface_hub maps to exceptions:
    RepoNotFound -> RepositoryNotFoundError, RevisionNotFound -> RevisionNotFoundError,
    EntryNotFound -> RemoteEntryNotFoundError.
    """

    def __init__(self, status: int, message: str, code: str | None = None, headers: dict | None = None, **extra):
        super().__init__(message)
        self.status, self.message, self.code, self.headers = status, message, code, dict(headers or {})
        self.extra = extra  # more fields for the JSON body

    def response(self) -> tuple[int, dict, bytes]:
        headers = {**self.headers, "X-Error-Message": self.message.encode("ascii", "replace").decode()}
        if self.code:
            headers["X-Error-Code"] = self.code
        return _json({"error": self.message, **self.extra}, self.status, headers)


def _json(obj, status: int = 200, headers: dict | None = None) -> tuple[int, dict, bytes]:
    return status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(obj).encode()


# --------------------------------------------------------------------------- store


@dataclass(frozen=True)
class Commit:
    oid: str
    parent: str | None
    files: dict[str, str]  # path -> sha256 of the blob
    title: str
    message: str
    author: str
    timestamp: float


@dataclass
class Repo:
    repo_type: str
    repo_id: str
    private: bool
    commits: dict[str, Commit] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)  # name -> commit oid
    tags: dict[str, str] = field(default_factory=dict)  # name -> commit oid


class HubStore:
    """In-memory repos and content-addressed blobs.  All mutations hold one lock,
    so every write (commit, ref update) is atomic with respect to other requests."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.repos: dict[tuple[str, str], Repo] = {}
        self.blobs: dict[str, bytes] = {}  # sha256 -> content
        self._git_oids: dict[str, str] = {}  # sha256 -> git blob sha1
        self._counter = itertools.count()

    # -- blobs --------------------------------------------------------------
    def put_blob(self, data: bytes) -> str:
        sha = hashlib.sha256(data).hexdigest()
        with self.lock:
            self.blobs.setdefault(sha, data)
            self._git_oids.setdefault(sha, git_blob_oid(data))
        return sha

    def git_oid(self, sha256: str) -> str:
        return self._git_oids[sha256]

    # -- repos --------------------------------------------------------------
    def get_repo(self, repo_type: str, repo_id: str) -> Repo:
        repo = self.repos.get((repo_type, repo_id))
        if repo is None:
            raise HubError(404, f"Repository not found: {repo_type} {repo_id}", "RepoNotFound")
        return repo

    def create_repo(self, repo_type: str, repo_id: str, private: bool = False, author: str = "fixture-user") -> Repo:
        with self.lock:
            if (repo_type, repo_id) in self.repos:
                raise HubError(409, f"You already created this {repo_type} repo: {repo_id}")
            repo = Repo(repo_type, repo_id, private)
            self.repos[(repo_type, repo_id)] = repo
            initial = {".gitattributes": self.put_blob(INITIAL_GITATTRIBUTES)}
            self._add_commit(repo, DEFAULT_BRANCH, None, initial, "initial commit", "", author)
            return repo

    def delete_repo(self, repo_type: str, repo_id: str) -> None:
        with self.lock:
            self.get_repo(repo_type, repo_id)
            del self.repos[(repo_type, repo_id)]

    # -- revisions ----------------------------------------------------------
    def resolve(self, repo: Repo, revision: str) -> Commit:
        """Resolve a branch, tag, ``refs/heads/x``/``refs/tags/x`` or (prefix of a) commit id."""
        with self.lock:
            rev = revision
            if rev.startswith("refs/heads/") and rev[11:] in repo.branches:
                return repo.commits[repo.branches[rev[11:]]]
            if rev.startswith("refs/tags/") and rev[10:] in repo.tags:
                return repo.commits[repo.tags[rev[10:]]]
            if rev in repo.branches:
                return repo.commits[repo.branches[rev]]
            if rev in repo.tags:
                return repo.commits[repo.tags[rev]]
            if len(rev) >= 7 and all(c in "0123456789abcdef" for c in rev):
                matches = [oid for oid in repo.commits if oid.startswith(rev)]
                if len(matches) == 1:
                    return repo.commits[matches[0]]
            raise HubError(404, f"Invalid rev id: {revision}", "RevisionNotFound")

    def history(self, repo: Repo, revision: str) -> list[Commit]:
        """Commits reachable from ``revision``, newest first."""
        commit: Commit | None = self.resolve(repo, revision)
        out = []
        while commit is not None:
            out.append(commit)
            commit = repo.commits.get(commit.parent) if commit.parent else None
        return out

    def refs(self, repo_type: str, repo_id: str) -> dict[str, dict[str, str]]:
        """Snapshot of a repo's refs, for assertions: ``{"branches": {...}, "tags": {...}}``."""
        with self.lock:
            repo = self.get_repo(repo_type, repo_id)
            return {"branches": dict(repo.branches), "tags": dict(repo.tags)}

    def read_file(self, repo_type: str, repo_id: str, revision: str, path: str) -> bytes:
        """Direct (non-HTTP) read of a file, for assertions."""
        commit = self.resolve(self.get_repo(repo_type, repo_id), revision)
        return self.blobs[commit.files[path]]

    # -- writes -------------------------------------------------------------
    def _add_commit(self, repo, branch, parent, files, title, message, author) -> Commit:
        ts = time.time()
        # A git-style id: hash of tree, parent, author, time and message (+ a counter for uniqueness).
        tree = "".join(f"{p}\0{s}\n" for p, s in sorted(files.items()))
        raw = f"tree {hashlib.sha1(tree.encode()).hexdigest()}\nparent {parent}\nauthor {author} {ts!r}\n"
        raw += f"seq {next(self._counter)}\n\n{title}\n\n{message}"
        commit = Commit(hashlib.sha1(raw.encode()).hexdigest(), parent, dict(files), title, message, author, ts)
        repo.commits[commit.oid] = commit
        repo.branches[branch] = commit.oid
        return commit

    def commit(self, repo: Repo, branch: str, operations: list[dict], header: dict, author: str) -> Commit:
        """Apply NDJSON commit operations on top of ``branch`` atomically."""
        with self.lock:
            branch = branch[len("refs/heads/") :] if branch.startswith("refs/heads/") else branch
            if branch not in repo.branches:
                raise HubError(
                    404, f"Invalid rev id: {branch} (commits must target an existing branch)", "RevisionNotFound"
                )
            head = repo.commits[repo.branches[branch]]
            parent_commit = header.get("parentCommit")
            if parent_commit and parent_commit != head.oid:
                raise HubError(412, f"A commit has happened since. Please refresh and try again. (head is {head.oid})")
            files = dict(head.files)
            for op in operations:
                key, value = op.get("key"), op.get("value") or {}
                path = _check_path(value.get("path", ""))
                if key == "file":
                    content = value.get("content", "")
                    data = base64.b64decode(content) if value.get("encoding") == "base64" else content.encode()
                    files[path] = self.put_blob(data)
                elif key == "lfsFile":
                    # Only reachable if a client uploads LFS objects by itself: accept
                    # objects already known by sha256, as the Hub would after an upload.
                    if value.get("oid") not in self.blobs:
                        raise HubError(400, f"LFS object {value.get('oid')} for {path} was never uploaded")
                    files[path] = value["oid"]
                elif key == "deletedFile":
                    if files.pop(path, None) is None:
                        raise HubError(404, f"A file with this name doesn't exist: {path}", "EntryNotFound")
                elif key == "deletedFolder":
                    doomed = [p for p in files if p.startswith(path.rstrip("/") + "/")]
                    if not doomed:
                        raise HubError(404, f"A folder with this name doesn't exist: {path}", "EntryNotFound")
                    for p in doomed:
                        del files[p]
                else:
                    raise HubError(400, f"Unsupported commit operation: {key!r}")
            title = header.get("summary") or "Update"
            return self._add_commit(repo, branch, head.oid, files, title, header.get("description", ""), author)

    def create_branch(self, repo: Repo, branch: str, starting_point: str | None) -> None:
        with self.lock:
            _check_ref_name(branch)
            if branch in repo.branches:
                raise HubError(409, f"Reference already exists: refs/heads/{branch}")
            repo.branches[branch] = self.resolve(repo, starting_point or DEFAULT_BRANCH).oid

    def delete_branch(self, repo: Repo, branch: str) -> None:
        with self.lock:
            if branch == DEFAULT_BRANCH:
                raise HubError(403, f"Cannot delete the default branch {branch}")
            if repo.branches.pop(branch, None) is None:
                raise HubError(404, f"Branch not found: {branch}", "RevisionNotFound")

    def create_tag(self, repo: Repo, tag: str, revision: str) -> None:
        with self.lock:
            _check_ref_name(tag)
            if tag in repo.tags:
                raise HubError(409, f"Tag '{tag}' already exists (refs/tags/{tag} -> {repo.tags[tag]})")
            repo.tags[tag] = self.resolve(repo, revision).oid

    def delete_tag(self, repo: Repo, tag: str) -> None:
        with self.lock:
            if repo.tags.pop(tag, None) is None:
                raise HubError(404, f"Tag not found: {tag}", "RevisionNotFound")

    # -- listings -----------------------------------------------------------
    def tree(self, commit: Commit, path: str, recursive: bool) -> list[dict]:
        """Entries under ``path`` (``""`` = root), shaped like ``GET /api/{type}s/{id}/tree``."""
        prefix = path.strip("/")
        base = prefix + "/" if prefix else ""
        under = {p: s for p, s in commit.files.items() if p.startswith(base)}
        if prefix and not under:
            raise HubError(404, f"Directory not found: {prefix}", "EntryNotFound")
        entries: dict[str, dict] = {}
        for p, sha in under.items():
            parts = p[len(base) :].split("/")
            dirs = range(1, len(parts)) if recursive else range(1, min(len(parts), 2))
            for i in dirs:  # folders on the way to the file
                d = base + "/".join(parts[:i])
                entries.setdefault(d, {"type": "directory", "oid": self._dir_oid(commit, d), "size": 0, "path": d})
            if recursive or len(parts) == 1:
                entries[p] = {"type": "file", "oid": self.git_oid(sha), "size": len(self.blobs[sha]), "path": p}
        return [entries[k] for k in sorted(entries)]

    def _dir_oid(self, commit: Commit, d: str) -> str:
        inner = "".join(f"{p}\0{s}\n" for p, s in sorted(commit.files.items()) if p.startswith(d + "/"))
        return hashlib.sha1(f"tree {d}\n{inner}".encode()).hexdigest()


def _check_path(path: str) -> str:
    if not path or path.startswith("/") or any(part in ("", ".", "..") for part in path.rstrip("/").split("/")):
        raise HubError(400, f"Invalid path in repo: {path!r}")
    return path


def _check_ref_name(name: str) -> None:
    if not name or name.startswith(("/", "-", "refs/")) or ".." in name or any(c in name for c in " ~^:?*[\\"):
        raise HubError(400, f"Invalid reference name: {name!r}")


# --------------------------------------------------------------------------- faults


@dataclass
class _Rule:
    route: str
    action: str  # "fail", "drop", "answer" or "hook"
    remaining: int
    method: str | None = None
    status: int = 503
    message: str = ""
    retry_after: float | None = None
    after_apply: bool = False
    skip: int = 0  # matching requests to let through before the rule fires
    callback: Callable[[], None] | None = None  # a "hook" rule's


class Faults:
    """Deterministic, bounded fault injection, driven from the test process.

    Rules match a route name (see ``ROUTES``), optionally a method, and are
    consumed first-in first-out; each fires ``times`` times, then disappears.
    ``triggered`` records ``(route, method, action)`` for every fault fired.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rules: list[_Rule] = []
        self.triggered: list[tuple[str, str, str]] = []

    def fail_next(
        self,
        route: str,
        status: int = 503,
        *,
        times: int = 1,
        message: str | None = None,
        retry_after: float | None = None,
        method: str | None = None,
        skip: int = 0,
    ) -> None:
        """Answer the next ``times`` matching requests with ``status`` and ``{"error": message}``,
        without running them.  ``retry_after`` adds a ``Retry-After`` header (huggingface_hub's
        backoff then sleeps ``retry_after + 1`` seconds instead of its exponential delay).
        ``skip`` lets that many matching requests through first (fail the 3rd: ``skip=2``)."""
        self._add(
            _Rule(
                route,
                "fail",
                times,
                method,
                status,
                message or f"injected fault: HTTP {status}",
                retry_after,
                skip=skip,
            )
        )

    def drop_next(
        self, route: str, *, times: int = 1, after_apply: bool = False, method: str | None = None, skip: int = 0
    ) -> None:
        """Close the connection of the next ``times`` matching requests without any response.
        By default the request is *not* applied; ``after_apply=True`` applies it first and then
        drops the response (a "lost response": the client cannot know the write happened).
        ``skip`` as for ``fail_next``."""
        self._add(_Rule(route, "drop", times, method, after_apply=after_apply, skip=skip))

    def answer_next(
        self, route: str, status: int = 200, body: bytes = b"OK", *, times: int = 1, method: str | None = None
    ) -> None:
        """Answer the next ``times`` matching requests with ``status`` and the raw ``body`` (not JSON),
        without running them: a proxy or a broken server that says "done" when nothing was done."""
        self._add(_Rule(route, "answer", times, method, status, body.decode("latin-1")))

    def on_request(self, route: str, callback: Callable[[], None], *, method: str | None = None) -> None:
        """Run ``callback`` in the server when the next matching request arrives, before it is
        applied (e.g. change a local file while the client is uploading it)."""
        self._add(_Rule(route, "hook", 1, method, callback=callback))

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()

    @property
    def pending(self) -> int:
        """How many injected faults have not fired yet."""
        with self._lock:
            return sum(r.remaining for r in self._rules)

    def _add(self, rule: _Rule) -> None:
        if rule.route not in ROUTES:
            raise ValueError(f"unknown route {rule.route!r}; expected one of {sorted(ROUTES)}")
        if rule.remaining < 1:
            raise ValueError("times must be >= 1")
        with self._lock:
            self._rules.append(rule)

    def take(self, route: str, method: str) -> _Rule | None:
        with self._lock:
            for rule in self._rules:
                if rule.route == route and rule.method in (None, method):
                    if rule.skip > 0:
                        rule.skip -= 1
                        return None
                    rule.remaining -= 1
                    if rule.remaining == 0:
                        self._rules.remove(rule)
                    self.triggered.append((route, method, rule.action))
                    return rule
        return None


# --------------------------------------------------------------------------- HTTP


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as huggingface_hub's pooled client expects
    # A response goes out in two writes (headers, then body): with Nagle's algorithm the body waits
    # for the client's delayed ACK of the headers (40 ms on Linux) on every request.
    disable_nagle_algorithm = True
    server: _HTTPServer

    def log_message(self, format, *args):  # keep test output quiet
        pass

    def do_GET(self):
        self._dispatch("GET")

    def do_HEAD(self):
        self._dispatch("HEAD")

    def do_POST(self):
        self._dispatch("POST")

    def do_PUT(self):
        self._dispatch("PUT")

    def do_DELETE(self):
        self._dispatch("DELETE")

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while (size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)) > 0:
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers
                pass
            return b"".join(chunks)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _dispatch(self, method: str) -> None:
        hub: HubServer = self.server.hub
        body = self._read_body()  # always drain the body, even when dropping the connection
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        route, action, rule = None, None, None
        try:
            route, action = hub._route(method, url.path)
            rule = hub.faults.take(route, method)
            if rule is not None and rule.action == "hook":
                assert rule.callback is not None
                rule.callback()
                rule = None
            if rule is not None and rule.action == "answer":
                hub.request_log.append((method, route, url.path, 0))  # 0: never applied
                self._send(rule.status, {"Content-Type": "text/plain"}, rule.message.encode("latin-1"))
                return
            if rule is not None and rule.action == "fail":
                headers = {} if rule.retry_after is None else {"Retry-After": str(int(rule.retry_after))}
                raise HubError(rule.status, rule.message, headers=headers)
            if rule is not None and not rule.after_apply:
                hub.request_log.append((method, route, url.path, 0))  # 0: dropped, never applied
                self._drop()
                return
            if method in ("POST", "PUT", "DELETE") and not self._has_token():
                raise HubError(401, BAD_CREDENTIALS)
            response = action(body=body, query=query, headers=self.headers)
        except HubError as e:
            response = e.response()
        except Exception as e:  # a fixture bug: make it loud, but answer like a server would
            traceback.print_exc(file=sys.stderr)
            response = HubError(500, f"fixture internal error: {e!r}").response()
        hub.request_log.append((method, route, url.path, response[0]))
        if rule is not None and rule.action == "drop":  # after_apply: the write happened, the answer is lost
            self._drop()
        else:
            self._send(*response, head=(method == "HEAD"))

    def _has_token(self) -> bool:
        auth = self.headers.get("Authorization", "")
        return auth.startswith("Bearer ") and len(auth) > len("Bearer ")

    def _drop(self) -> None:
        # Nothing has been written: closing now makes the client see a connection
        # closed without any response (httpx: RemoteProtocolError).
        self.close_connection = True

    def _send(self, status: int, headers: dict, body: bytes, head: bool = False) -> None:
        self.send_response(status)
        headers = {"Content-Length": str(len(body)), **headers}
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        if not head:
            self.wfile.write(body)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # don't wait on idle keep-alive connections at shutdown
    hub: HubServer


class HubServer:
    """The fixture server.  Use as a context manager, or call ``start()``/``stop()``.

    Attributes:
        endpoint: base URL (``http://127.0.0.1:<port>``), the value for ``HF_ENDPOINT``.
        store: the ``HubStore`` (inspect refs/commits/files directly in assertions).
        faults: the ``Faults`` injector.
        trusted_orgs: ``None`` (default) marks every org a trusted kernel publisher in
            ``GET /api/organizations/{org}/overview``; a set trusts only those orgs.
        request_log: ``(method, route, path, status)`` for every answered request.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, trusted_orgs=None, user: str = "fixture-user"):
        self.store = HubStore()
        self.faults = Faults()
        self.trusted_orgs = None if trusted_orgs is None else set(trusted_orgs)
        self.user = user
        self.request_log: list[tuple[str, str | None, str, int]] = []
        self._httpd = _HTTPServer((host, port), _Handler)
        self._httpd.hub = self
        self.endpoint = f"http://{host}:{self._httpd.server_address[1]}"
        self._thread: threading.Thread | None = None

    def start(self) -> HubServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="hub-fixture", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> HubServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def requests(self, route: str | None = None) -> list[tuple[str, str | None, str, int]]:
        return [r for r in list(self.request_log) if route is None or r[1] == route]

    # -- routing --------------------------------------------------------------
    def _route(self, method: str, path: str):
        """Map (method, raw URL path) to (route name, handler).  Segments are unquoted one
        by one, so ``%2F`` inside a revision or a branch name stays part of that segment."""
        raw = path.strip("/").split("/")
        seg = [unquote(s) for s in raw]

        def rest(i: int) -> str:  # remaining path, which clients send either quoted or not
            return unquote("/".join(raw[i:]))

        def bind(route, fn, methods, *args):
            if method not in methods:
                raise HubError(405, f"Method {method} not allowed on {path}")
            return route, lambda **kw: fn(*args, **kw)

        if seg[:1] == ["api"]:
            if seg[1:] == ["whoami-v2"]:
                return bind("whoami", self._whoami, ("GET",))
            if seg[1:] == ["agent-harnesses"]:  # huggingface_hub fetches it to build its user agent
                return bind("agent_harnesses", lambda **_: _json({"standardEnvVars": [], "harnesses": {}}), ("GET",))
            if seg[1:] == ["validate-yaml"]:  # create_commit validates an added README.md's metadata here first
                return bind("validate_yaml", lambda **_: _json({"errors": [], "warnings": []}), ("POST",))
            if len(seg) == 4 and seg[1] == "organizations" and seg[3] == "overview":
                return bind("org_overview", self._org_overview, ("GET",), seg[2])
            if seg[1:] == ["repos", "create"]:
                return bind("create_repo", self._create_repo, ("POST",))
            if seg[1:] == ["repos", "delete"]:
                return bind("delete_repo", self._delete_repo, ("DELETE",))
            if len(seg) >= 4 and seg[1] in API_TYPES:
                repo_key = (API_TYPES[seg[1]], f"{seg[2]}/{seg[3]}")
                op = seg[4] if len(seg) > 4 else None
                if op is None:
                    return bind("repo_info", self._repo_info, ("GET",), repo_key, DEFAULT_BRANCH)
                if op == "revision" and len(seg) > 5:
                    return bind("repo_info", self._repo_info, ("GET",), repo_key, rest(5))
                if op == "refs":
                    return bind("refs", self._refs, ("GET",), repo_key)
                if op == "tree" and len(seg) > 5:
                    return bind("tree", self._tree, ("GET",), repo_key, seg[5], rest(6))
                if op == "commits" and len(seg) > 5:
                    return bind("commits", self._commits, ("GET",), repo_key, rest(5))
                if op == "preupload" and len(seg) > 5:
                    return bind("preupload", self._preupload, ("POST",), repo_key, rest(5))
                if op == "commit" and len(seg) > 5:
                    return bind("commit", self._commit, ("POST",), repo_key, rest(5))
                if op == "branch" and len(seg) > 5:
                    if method == "DELETE":
                        return bind("delete_branch", self._delete_branch, ("DELETE",), repo_key, rest(5))
                    return bind("create_branch", self._create_branch, ("POST",), repo_key, rest(5))
                if op == "tag" and len(seg) > 5:
                    if method == "DELETE":
                        return bind("delete_tag", self._delete_tag, ("DELETE",), repo_key, rest(5))
                    return bind("create_tag", self._create_tag, ("POST",), repo_key, rest(5))
        # Downloads: /{prefix}{namespace}/{name}/resolve/{revision}/{path}
        for repo_type, prefix in URL_PREFIX.items():
            i = 1 if prefix else 0
            if (not prefix or seg[0] + "/" == prefix) and len(seg) >= i + 5 and seg[i + 2] == "resolve":
                repo_key = (repo_type, f"{seg[i]}/{seg[i + 1]}")
                return bind("resolve", self._resolve, ("GET", "HEAD"), repo_key, seg[i + 3], rest(i + 4))
        raise HubError(404, f"Unknown route: {method} {path}")

    def _repo(self, repo_key) -> Repo:
        return self.store.get_repo(*repo_key)

    def _repo_url(self, repo: Repo) -> str:
        return f"{self.endpoint}/{URL_PREFIX[repo.repo_type]}{repo.repo_id}"

    @staticmethod
    def _json_body(body: bytes) -> dict:
        try:
            return json.loads(body or b"{}")
        except ValueError:
            raise HubError(400, "Request body is not valid JSON") from None

    # -- handlers (each returns (status, headers, body) or raises HubError) ----
    def _whoami(self, **_):
        return _json(
            {
                "type": "user",
                "name": self.user,
                "fullname": "Hub Fixture User",
                "orgs": [],
                "auth": {"type": "access_token", "accessToken": {"displayName": "fixture", "role": "write"}},
            }
        )

    def _org_overview(self, org, **_):
        trusted = self.trusted_orgs is None or org in self.trusted_orgs
        return _json(
            {
                "name": org,
                "fullname": org,
                "avatarUrl": "",
                "isVerified": trusted,
                "trustedKernelPublisher": trusted,
                "numUsers": 1,
            }
        )

    def _create_repo(self, body, **_):
        payload = self._json_body(body)
        repo_type = payload.get("type") or "model"
        if repo_type not in URL_PREFIX or not payload.get("name"):
            raise HubError(400, f"Invalid repo type or name: {repo_type!r} {payload.get('name')!r}")
        namespace = payload.get("organization") or self.user
        repo_id = f"{namespace}/{payload['name']}"
        private = payload.get("private") or payload.get("visibility") == "private"
        try:
            repo = self.store.create_repo(repo_type, repo_id, bool(private), self.user)
        except HubError as e:  # like the Hub, a 409 names the existing repo (create_repo(exist_ok=True) reads it)
            e.extra["url"] = self._repo_url(self.store.get_repo(repo_type, repo_id))
            raise
        return _json({"url": self._repo_url(repo), "name": repo_id, "id": repo_id})

    def _delete_repo(self, body, **_):
        payload = self._json_body(body)
        namespace = payload.get("organization") or self.user
        self.store.delete_repo(payload.get("type") or "model", f"{namespace}/{payload.get('name')}")
        return _json({})

    def _repo_info(self, repo_key, revision, **_):
        repo = self._repo(repo_key)
        commit = self.store.resolve(repo, revision)
        first = self.store.history(repo, commit.oid)[-1]
        return _json(
            {
                "id": repo.repo_id,
                "author": repo.repo_id.split("/")[0],
                "sha": commit.oid,
                "private": repo.private,
                "gated": False,
                "disabled": False,
                "downloads": 0,
                "likes": 0,
                "tags": [],
                "lastModified": _iso(commit.timestamp),
                "createdAt": _iso(first.timestamp),
                "siblings": [{"rfilename": p} for p in sorted(commit.files)],
            }
        )

    def _refs(self, repo_key, **_):
        refs = self.store.refs(*repo_key)

        def fmt(kind, items):
            return [{"name": n, "ref": f"refs/{kind}/{n}", "targetCommit": c} for n, c in sorted(items.items())]

        return _json(
            {
                "branches": fmt("heads", refs["branches"]),
                "tags": fmt("tags", refs["tags"]),
                "converts": [],
                "pullRequests": [],
            }
        )

    def _tree(self, repo_key, revision, path, query, **_):
        commit = self.store.resolve(self._repo(repo_key), revision)
        recursive = query.get("recursive", "false").lower() in ("1", "true")
        return _json(self.store.tree(commit, path, recursive))

    def _commits(self, repo_key, revision, **_):
        history = self.store.history(self._repo(repo_key), revision)
        return _json(
            [
                {
                    "id": c.oid,
                    "title": c.title,
                    "message": c.message,
                    "date": _iso(c.timestamp),
                    "authors": [{"user": c.author}],
                }
                for c in history
            ]
        )

    def _preupload(self, repo_key, revision, body, **_):
        commit = self.store.resolve(self._repo(repo_key), revision)
        out = []
        for f in self._json_body(body).get("files", []):
            sha = commit.files.get(f["path"])  # the remote oid lets clients skip unchanged files
            out.append(
                {
                    "path": f["path"],
                    "uploadMode": "regular",
                    "shouldIgnore": False,
                    "oid": self.store.git_oid(sha) if sha else None,
                }
            )
        return _json({"files": out, "commitOid": commit.oid})

    def _commit(self, repo_key, revision, body, query, **_):
        repo = self._repo(repo_key)
        if query.get("create_pr") in ("1", "true"):
            raise HubError(400, "create_pr is not supported by the test hub")
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        if not lines or lines[0].get("key") != "header":
            raise HubError(400, "Commit payload must start with a header line")
        commit = self.store.commit(repo, revision, lines[1:], lines[0].get("value") or {}, self.user)
        return _json(
            {
                "success": True,
                "commitOid": commit.oid,
                "pullRequestUrl": None,
                "commitUrl": f"{self._repo_url(repo)}/commit/{commit.oid}",
            }
        )

    def _create_branch(self, repo_key, branch, body, **_):
        self.store.create_branch(self._repo(repo_key), branch, self._json_body(body).get("startingPoint"))
        return _json({})

    def _delete_branch(self, repo_key, branch, **_):
        self.store.delete_branch(self._repo(repo_key), branch)
        return _json({})

    def _create_tag(self, repo_key, revision, body, **_):
        payload = self._json_body(body)
        if not payload.get("tag"):
            raise HubError(400, "Missing 'tag' in request body")
        self.store.create_tag(self._repo(repo_key), payload["tag"], revision)
        return _json({})

    def _delete_tag(self, repo_key, tag, **_):
        self.store.delete_tag(self._repo(repo_key), tag)
        return _json({})

    def _resolve(self, repo_key, revision, path, headers, **_):
        commit = self.store.resolve(self._repo(repo_key), revision)
        sha = commit.files.get(path)
        if sha is None:  # X-Repo-Commit lets huggingface_hub cache the file's absence
            raise HubError(404, f"Entry not found: {path}", "EntryNotFound", {"X-Repo-Commit": commit.oid})
        data = self.store.blobs[sha]
        out = {
            "Content-Type": "application/octet-stream",
            "ETag": f'"{self.store.git_oid(sha)}"',
            "X-Repo-Commit": commit.oid,
            "Accept-Ranges": "bytes",
        }
        rng = headers.get("Range", "")
        if rng.startswith("bytes=") and "," not in rng:  # single range, used to resume downloads
            start_s, _, end_s = rng[6:].partition("-")
            start = int(start_s or 0)
            end = min(int(end_s), len(data) - 1) if end_s else len(data) - 1
            if start >= len(data):
                raise HubError(
                    416, "Requested range not satisfiable", headers={"Content-Range": f"bytes */{len(data)}"}
                )
            out["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
            return 206, out, data[start : end + 1]
        return 200, out, data
