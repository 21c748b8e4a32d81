"""The shared compiler cache on a real Redis server: machine A builds, machine B (another copy of the
kernel, a fresh HOME, an empty local ccache) builds the same from the shared cache, reading only."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from pybuild.cache import ccache_stats
from tests.helpers.procs import pybuild
from tests.helpers.redis import key_count, redis_server

REPO = Path(__file__).resolve().parents[2]
KERNEL = REPO / "kernels" / "img2gray"
VARIANT = "torch213-cxx11-cpu-x86_64-linux"

torch = pytest.importorskip("torch")
if not torch.__version__.startswith("2.13") or os.uname().machine != "x86_64":
    pytest.skip(
        f"these tests build the torch 2.13 CPU variant on x86_64 (have {torch.__version__})", allow_module_level=True
    )


def _copy(dest: Path) -> Path:
    ignore = shutil.ignore_patterns("build", ".pybuild", "__pycache__", "compile_commands.json")
    shutil.copytree(KERNEL, dest, ignore=ignore)
    return dest


def _build(kernel: Path, env: dict[str, str], *flags: str) -> list[dict[str, str]]:
    proc = pybuild("build", str(kernel), "--variant", VARIANT, "--json", *flags, env=env)
    return json.loads(proc.stdout[proc.stdout.index("[") :])


def test_machine_b_builds_from_what_machine_a_put_in_the_shared_cache(tmp_path: Path) -> None:
    with redis_server(tmp_path / "redis") as url:
        # machine A: this machine's ccache (warm where other tests built img2gray), and with ccache's
        # reshare, its local hits go to the shared cache too
        env_a = {**os.environ, "CCACHE_RESHARE": "1"}
        env_a.pop("PYBUILD_SHARED_CACHE", None)
        rows = _build(_copy(tmp_path / "a" / "img2gray"), env_a, "--cache", url)
        assert [r["status"] for r in rows] == ["built"]
        stored = key_count(url)
        assert stored > 0, "machine A wrote nothing to the shared cache"

        # machine B: another folder, a fresh HOME, an empty local ccache, the shared cache read-only
        home = tmp_path / "b" / "home"
        home.mkdir(parents=True)
        env_b = {
            **env_a,
            "HOME": str(home),
            "CCACHE_DIR": str(tmp_path / "b" / "ccache"),
            "PYBUILD_CACHE_DIR": str(tmp_path / "b" / "pybuild-cache"),
            "PYBUILD_SHARED_CACHE": url,
            "PYBUILD_SHARED_CACHE_READ_ONLY": "1",
        }
        env_b.pop("CCACHE_RESHARE")
        env_b.pop("XDG_CACHE_HOME", None)
        b = _copy(tmp_path / "b" / "src" / "img2gray")
        rows = _build(b, env_b)
        assert [r["status"] for r in rows] == ["built"]
        stats = ccache_stats(env_b)
        compiled = (
            stats.get("direct_cache_hit", 0) + stats.get("preprocessed_cache_hit", 0) + stats.get("cache_miss", 0)
        )
        assert compiled >= 2, stats  # the binding and the CPU kernel at least
        assert stats.get("cache_miss", 0) == 0, stats
        assert stats.get("remote_storage_hit", 0) == compiled, stats
        assert stats.get("remote_storage_write", 0) == 0 and key_count(url) == stored, "a read-only client wrote"

        # what B built is what A built
        digest_a = json.loads((tmp_path / "a" / "img2gray" / "build" / VARIANT / "metadata.json").read_text())["digest"]
        digest_b = json.loads((b / "build" / VARIANT / "metadata.json").read_text())["digest"]
        assert digest_a == digest_b


def test_a_cache_ccache_cannot_use_is_refused_before_any_work(tmp_path: Path) -> None:
    kernel = _copy(tmp_path / "img2gray")
    env = {**os.environ, "PYBUILD_NO_CCACHE": "1"}
    proc = pybuild("build", str(kernel), "--cache", "redis://127.0.0.1:1", env=env, ok=False)
    assert proc.returncode == 5, proc.stderr
    assert "ccache is not on PATH" in proc.stderr
    assert not (kernel / ".pybuild").exists() and not (kernel / "build").exists()


def test_a_sandboxed_build_says_it_does_not_use_the_shared_cache(tmp_path: Path) -> None:
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    kernel = tmp_path / "noarch-softcap"
    shutil.copytree(REPO / "tests" / "fixtures" / "noarch-softcap", kernel)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYBUILD_SHARED_CACHE")}
    env["COLUMNS"] = "1000"  # the warning on one line
    proc = pybuild("build", str(kernel), "--sandbox", "--cache", "redis://127.0.0.1:1", env=env)
    assert "shared cache redis://127.0.0.1:1 not used: a sandboxed build has no network and no ccache" in proc.stderr
