"""The shared compiler cache setting: what ccache gets, and the values refused."""

from __future__ import annotations

import pytest

from pybuild.cache import ENV_READ_ONLY, ENV_URL, parse_cache, shared_cache
from pybuild.errors import UsageError


@pytest.mark.parametrize(
    ("value", "read_only", "spec"),
    [
        ("redis://127.0.0.1:6379", False, "redis://127.0.0.1:6379"),
        ("redis://127.0.0.1:6379", True, "redis://127.0.0.1:6379|read-only"),
        ("redis://cache:6379|read-only", False, "redis://cache:6379|read-only"),
        ("redis://cache:6379|connect-timeout=100", True, "redis://cache:6379|connect-timeout=100|read-only"),
        ("redis+unix:///run/redis.sock", False, "redis+unix:///run/redis.sock"),
        ("http://cache.example/ccache", False, "http://cache.example/ccache"),
    ],
)
def test_the_setting_becomes_ccaches_remote_storage(value: str, read_only: bool, spec: str) -> None:
    cache = parse_cache(value, read_only=read_only)
    assert cache.environ() == {"CCACHE_REMOTE_STORAGE": spec}
    assert cache.read_only == ("read-only" in spec)


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("127.0.0.1:6379", "not a shared cache URL"),
        ("file:///tmp/cache", "not a shared cache URL"),
        ("redis://a:1 redis://b:2", "no spaces"),
        ("redis://a:1||read-only", "no empty |attribute"),
    ],
)
def test_values_ccache_would_not_take_are_refused(value: str, fragment: str) -> None:
    with pytest.raises(UsageError, match="--cache") as e:
        parse_cache(value)
    assert fragment in str(e.value)


def test_the_environment_gives_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_URL, raising=False)
    monkeypatch.delenv(ENV_READ_ONLY, raising=False)
    assert shared_cache(None) is None
    monkeypatch.setenv(ENV_URL, "redis://ci-cache:6379")
    monkeypatch.setenv(ENV_READ_ONLY, "1")
    cache = shared_cache(None)
    assert cache is not None and cache.spec == "redis://ci-cache:6379|read-only"
    assert shared_cache("redis://mine:6379") == parse_cache(
        "redis://mine:6379", read_only=True
    )  # --cache names the URL; the read-only setting still holds
    monkeypatch.setenv(ENV_URL, "nonsense")
    with pytest.raises(UsageError, match=ENV_URL):
        shared_cache(None)
