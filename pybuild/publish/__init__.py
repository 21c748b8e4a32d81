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

from .hub import (
    BACKOFF_BASE_S,
    BACKOFF_MAX_S,
    DEFAULT_RETRIES,
    HUB_MANAGED,
    MIN_HUB_CLIENT,
    Hub,
    HubError,
    PublishResult,
    RemoteFile,
    describe,
    differences,
    is_transient,
    kernel_repo_type,
    make_api,
)
from .plan import (
    CARD,
    VERSION_RE,
    ReleaseFile,
    ReleasePlan,
    check_repo_id,
    git_blob_oid,
    make_plan,
    noncompliance_lines,
    parse_version,
    select_files,
)
from .release import publish_plan

__all__ = [
    "BACKOFF_BASE_S",
    "BACKOFF_MAX_S",
    "CARD",
    "DEFAULT_RETRIES",
    "HUB_MANAGED",
    "MIN_HUB_CLIENT",
    "VERSION_RE",
    "Hub",
    "HubError",
    "PublishResult",
    "ReleaseFile",
    "ReleasePlan",
    "RemoteFile",
    "check_repo_id",
    "describe",
    "differences",
    "git_blob_oid",
    "is_transient",
    "kernel_repo_type",
    "make_api",
    "make_plan",
    "noncompliance_lines",
    "parse_version",
    "publish_plan",
    "select_files",
]
