"""Test-only Hugging Face Hub fixture: a loopback Hub API server plus environment helpers.

Typical use::

    from tests.hubfixture import HubServer, hub_env, hub_subprocess_env, use_hub_in_process

    with HubServer() as hub:                       # 127.0.0.1, ephemeral port, background thread
        env = hub_subprocess_env(hub.endpoint, tmp_path)
        subprocess.run([sys.executable, "-c", "..."], env=env, check=True)

How clients find the server
---------------------------
``huggingface_hub`` reads its environment **once, at import time**, into
``huggingface_hub.constants`` (``ENDPOINT``, ``HUGGINGFACE_CO_URL_TEMPLATE``,
``HF_URL_HOSTS``, ``HF_HOME``, ``HF_HUB_CACHE``, ``HF_HUB_OFFLINE``, ...).  An
``HfApi()`` built without ``endpoint=`` copies ``constants.ENDPOINT`` when it is
constructed, the module-level ``huggingface_hub.hf_api.api`` instance (behind
``huggingface_hub.list_repo_refs`` & co.) was built at import, and ``kernels``
caches ``KERNELS_CACHE`` in ``CACHE_DIR``, re-imported by name into several
of its modules.  So setting ``os.environ["HF_ENDPOINT"]`` after import does
nothing.  Two reliable ways:

* subprocesses (preferred for ``kernels``, whose loader also keeps imported
  kernels in ``sys.modules``): pass ``env=hub_subprocess_env(endpoint, tmp_path)``;
* in-process: ``use_hub_in_process(monkeypatch, endpoint, tmp_path)`` sets the
  env vars *and* patches every cached copy listed above (undone by monkeypatch).
  ``HfApi(endpoint=hub.endpoint)`` needs no patching for API calls, but its
  downloads still default to ``constants.HF_HUB_CACHE``.

Do not set ``HF_HUB_DISABLE_TELEMETRY=1`` (nor ``DISABLE_TELEMETRY``/``DO_NOT_TRACK``):
with huggingface_hub 2.4 + kernels 0.17 the kernels client then builds an empty
user agent that the HTTP stack rejects, so every online kernels call fails.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from urllib.parse import urlsplit

from .server import ROUTES, Faults, HubError, HubServer, HubStore, git_blob_oid

__all__ = [
    "DUMMY_TOKEN",
    "ROUTES",
    "Faults",
    "HubError",
    "HubServer",
    "HubStore",
    "git_blob_oid",
    "hub_env",
    "hub_subprocess_env",
    "require_hub_client",
    "use_hub_in_process",
]

DUMMY_TOKEN = "hf_fixture_dummy_token"

# Variables from the caller's environment that would redirect or break clients talking to the fixture.
_CONFLICTING_ENV = (
    "HF_HUB_DISABLE_TELEMETRY",
    "DISABLE_TELEMETRY",
    "DO_NOT_TRACK",  # see module docstring
    "HUGGING_FACE_HUB_TOKEN",
    "HF_TOKEN_PATH",
    "HUGGINGFACE_HUB_CACHE",
    "HUGGINGFACE_ASSETS_CACHE",
    "HF_ASSETS_CACHE",
    "HF_XET_CACHE",
    "HUGGINGFACE_CO_STAGING",
    "TRANSFORMERS_OFFLINE",
    "LOCAL_KERNELS",
)


def require_hub_client() -> None:
    """Skip the calling test where the installed huggingface_hub predates what the fixture and
    pybuild publish need (a bare machine's preinstalled one; pyproject.toml requires it)."""
    import pytest

    from pybuild.errors import PublishError
    from pybuild.publish import kernel_repo_type  # publish's own client check; use_hub_in_process also
    # relies on that version's internals (utils._http._HUB_ORIGINS)

    try:
        kernel_repo_type()
    except PublishError as e:
        pytest.skip(f"{e} (pyproject.toml requires it)")


def hub_env(endpoint: str, tmp_path, *, token: str = DUMMY_TOKEN, offline: bool = False) -> dict[str, str]:
    """Environment variables pointing Hub clients at ``endpoint`` with caches under ``tmp_path``.

    Returns only the fixture's variables; see ``hub_subprocess_env`` for a complete env.
    """
    require_hub_client()
    home = Path(tmp_path) / "hf_home"
    cache = home / "hub"
    return {
        "HF_ENDPOINT": endpoint,
        "HF_HOME": str(home),
        "HF_HUB_CACHE": str(cache),
        "KERNELS_CACHE": str(cache),  # kernels' own override; keep it on the same tmp cache
        "HF_TOKEN": token,
        "HF_HUB_OFFLINE": "1" if offline else "0",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "HF_HUB_DISABLE_UPDATE_CHECK": "1",
    }


def hub_subprocess_env(endpoint: str, tmp_path, **kwargs) -> dict[str, str]:
    """A full environment for ``subprocess``: ``os.environ`` minus conflicting Hub
    variables, plus ``hub_env(...)``."""
    env = {k: v for k, v in os.environ.items() if k not in _CONFLICTING_ENV}
    env.update(hub_env(endpoint, tmp_path, **kwargs))
    return env


def use_hub_in_process(monkeypatch, endpoint: str, tmp_path, **kwargs) -> dict[str, str]:
    """Point the already-imported ``huggingface_hub`` (and ``kernels``, if installed) at
    ``endpoint`` for the current test, using pytest's ``monkeypatch`` so it is undone
    afterwards.  Returns the env from ``hub_env``."""
    import huggingface_hub.hf_api
    import huggingface_hub.utils._detect_agent as hf_detect_agent
    import huggingface_hub.utils._http as hf_http
    from huggingface_hub import constants

    env = hub_env(endpoint, tmp_path, **kwargs)
    for name in _CONFLICTING_ENV:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    old_endpoint, old_home, home = constants.ENDPOINT, constants.HF_HOME, env["HF_HOME"]
    parts = urlsplit(endpoint)
    patched = {
        # Every path derived from HF_HOME at import (token, xet cache, agent registry, update checks...).
        name: home + value[len(old_home) :]
        for name, value in vars(constants).items()
        if name.isupper() and isinstance(value, str) and (value == old_home or value.startswith(old_home + os.sep))
    }
    patched.update(
        {
            "ENDPOINT": endpoint,
            "HUGGINGFACE_CO_URL_TEMPLATE": endpoint + "/{repo_id}/resolve/{revision}/{filename}",
            "HF_URL_HOSTS": constants.HF_URL_HOSTS | {parts.hostname},
            "HF_HOME": home,
            "HF_HUB_CACHE": env["HF_HUB_CACHE"],
            "HUGGINGFACE_HUB_CACHE": env["HF_HUB_CACHE"],
            "HF_ASSETS_CACHE": os.path.join(home, "assets"),
            "HF_XET_CACHE": os.path.join(home, "xet"),
            "HF_TOKEN_PATH": os.path.join(home, "token"),
            "HF_STORED_TOKENS_PATH": os.path.join(home, "stored_tokens"),
            "HF_HUB_OFFLINE": env["HF_HUB_OFFLINE"] == "1",
            "HF_HUB_DISABLE_TELEMETRY": False,
        }
    )
    for name, value in patched.items():
        monkeypatch.setattr(constants, name, value)
    # Modules that did `from .constants import ENDPOINT` hold their own copy.
    for mod_name, mod in list(sys.modules.items()):
        if mod_name.startswith("huggingface_hub.") and getattr(mod, "ENDPOINT", None) == old_endpoint:
            monkeypatch.setattr(mod, "ENDPOINT", endpoint)
    # Origins to which the auth header may follow redirects.
    origin = (parts.scheme, parts.hostname, parts.port or {"http": 80, "https": 443}[parts.scheme])
    monkeypatch.setattr(hf_http, "_HUB_ORIGINS", hf_http._HUB_ORIGINS | {origin})
    # The module-level HfApi behind `huggingface_hub.list_repo_refs(...)` & co.
    monkeypatch.setattr(huggingface_hub.hf_api.api, "endpoint", endpoint)
    # The agent-harness registry (fetched from ENDPOINT for the user agent) is cached per process:
    # let it be fetched from the fixture, and restore whatever was there after the test.
    monkeypatch.setattr(hf_detect_agent, "_registry", hf_detect_agent._registry)

    # kernels copies KERNELS_CACHE into `CACHE_DIR` at import, then re-imports it by name.
    try:
        import kernels.cli.download  # noqa: F401
        import kernels.install  # noqa: F401
        import kernels.locking  # noqa: F401
        import kernels.resolver  # noqa: F401
    except ImportError:
        return env
    for mod_name, mod in list(sys.modules.items()):
        if (mod_name == "kernels" or mod_name.startswith("kernels.")) and hasattr(mod, "CACHE_DIR"):
            monkeypatch.setattr(mod, "CACHE_DIR", env["KERNELS_CACHE"])
    return env
