"""The shared compiler cache: ccache's remote storage (a Redis server, or an HTTP one) that every
build machine of a fleet reads, and trusted ones fill, so that no machine compiles a translation
unit another one already compiled.

pybuild hands the setting to ccache as ``CCACHE_REMOTE_STORAGE`` for its compile steps; ccache
keeps its local cache as well and looks there first. A read-only client (``|read-only``, ccache's
own attribute) takes hits and never writes, which is what an untrusted build gets.
"""

from __future__ import annotations

import functools
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass

from .errors import ToolchainError, UsageError
from .host import ccache

ENV_URL = "PYBUILD_SHARED_CACHE"  # the shared cache's URL, as --cache gives it
ENV_READ_ONLY = "PYBUILD_SHARED_CACHE_READ_ONLY"  # "1": take hits, never write (as --cache-read-only)
SCHEMES = {"redis": "redis-storage", "redis+unix": "redis+unix-storage", "http": "http-storage"}
READ_ONLY = "read-only"


@dataclass(frozen=True)
class SharedCache:
    url: str  # e.g. redis://cache.example:6379, without ccache's |attributes
    attributes: tuple[str, ...] = ()  # ccache's remote storage attributes (connect-timeout=100, ...)
    read_only: bool = False

    @property
    def spec(self) -> str:
        """The value of ccache's ``remote_storage`` setting."""
        attrs = [a for a in self.attributes if a != READ_ONLY] + ([READ_ONLY] if self.read_only else [])
        return "|".join([self.url, *attrs])

    def environ(self) -> dict[str, str]:
        """What a compile step's environment gets: ccache's remote storage, and nothing else."""
        return {"CCACHE_REMOTE_STORAGE": self.spec}


def parse_cache(value: str, *, read_only: bool = False, where: str = "--cache") -> SharedCache:
    """``redis://host:port`` (optionally with ccache's ``|attribute`` suffixes) as a :class:`SharedCache`;
    a value ccache would not take is refused in one line naming ``where``."""
    url, *attributes = value.split("|")
    scheme = url.split("://", 1)[0] if "://" in url else ""
    if scheme not in SCHEMES:
        msg = (
            f"{where} {value!r}: not a shared cache URL; give one of ccache's remote storages, "
            "e.g. redis://127.0.0.1:6379, redis+unix:///run/redis.sock or http://cache.example/ccache"
        )
        raise UsageError(msg)
    if any(c.isspace() for c in value) or any(not a for a in attributes):
        raise UsageError(f"{where} {value!r}: a shared cache URL has no spaces and no empty |attribute")
    return SharedCache(url, tuple(attributes), read_only=read_only or READ_ONLY in attributes)


def shared_cache(value: str | None, *, read_only: bool = False) -> SharedCache | None:
    """The shared cache a build uses: ``value`` (``--cache``), else ``$PYBUILD_SHARED_CACHE``; read-only
    where ``read_only`` (``--cache-read-only``) or ``$PYBUILD_SHARED_CACHE_READ_ONLY`` is 1. None: none."""
    where = "--cache"
    if value is None:
        value, where = os.environ.get(ENV_URL) or None, ENV_URL
    if value is None:
        return None
    read_only = read_only or os.environ.get(ENV_READ_ONLY, "") in ("1", "true", "yes")
    return parse_cache(value, read_only=read_only, where=where)


def check_usable(cache: SharedCache) -> None:
    """ccache is here and speaks the cache's protocol; otherwise one line that says what to install."""
    exe = ccache()
    if exe is None:
        msg = (
            f"shared cache {cache.url}: ccache is not on PATH (or PYBUILD_NO_CCACHE is set); "
            "install ccache 4.4 or later (apt-get install ccache)"
        )
        raise ToolchainError(msg)
    feature = SCHEMES[cache.url.split("://", 1)[0]]
    if feature not in _features(exe):
        raise ToolchainError(f"shared cache {cache.url}: {exe} has no {feature}; install ccache 4.4 or later")


@functools.lru_cache(maxsize=4)
def _features(exe: str) -> frozenset[str]:
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False).stdout
    for line in out.splitlines():
        if line.startswith("Features:"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def ccache_stats(env: Mapping[str, str] | None = None) -> dict[str, int]:
    """ccache's counters (``ccache --print-stats``) for the cache ``env`` points at (CCACHE_DIR)."""
    exe = ccache()
    if exe is None:
        return {}
    out = subprocess.run(
        [exe, "--print-stats"], capture_output=True, text=True, check=False, env=dict(env or os.environ)
    ).stdout
    stats = {}
    for line in out.splitlines():
        key, _, value = line.partition("\t")
        if value.strip().isdigit():
            stats[key] = int(value)
    return stats
