"""A pure-Python kernel (no [kernel.*] sections) through the whole farm: build its noarch variants
(torch-cuda, torch-cpu), check them, load them with the real `kernels`, pack wheels, collect a
result tree, and publish to the loopback Hub fixture, from which `get_kernel` picks the variant of
this torch's backend (torch-cpu with a CPU torch, torch-cuda with a CUDA one, as the loader decides).
Nothing is compiled, so these run in seconds."""

from __future__ import annotations

import json
import os
import shutil
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.metadata import Metadata

from tests.helpers.loader import require_kernels_loader
from tests.helpers.procs import pybuild, run, run_py
from tests.hubfixture import HubServer, hub_subprocess_env

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "noarch-softcap"

torch = pytest.importorskip("torch")
require_kernels_loader()

# The loader picks the backend torch was built for (a GPU need not be present).
LOADED = "cuda" if torch.version.cuda else "cpu"

# The op must equal its plain-torch definition, pass opcheck and compile with fullgraph=True.
PROBE = """
import json, torch, kernels
from pathlib import Path
k = {load}
x = torch.randn(3, 5, 7, generator=torch.Generator().manual_seed(0))
assert torch.allclose(k.softcap(x, 2.5), torch.tanh(x / 2.5) * 2.5)
op = getattr(torch.ops, k.__name__).softcap
torch.library.opcheck(op, (x, 2.5))
compiled = torch.compile(lambda t: k.softcap(t, 4.0), fullgraph=True)
assert torch.allclose(compiled(x), torch.tanh(x / 4.0) * 4.0)
print(json.dumps({{"module": k.__name__, "file": k.__file__}}))
"""


def probe(load: str, env: dict | None = None, cwd: Path = REPO) -> dict:
    return run_py(PROBE.format(load=load), env=env, cwd=cwd)


@pytest.fixture
def farm(tmp_path: Path) -> Path:
    """A farm root (variants.json + kernels/softcap) with the kernel built."""
    root = tmp_path / "farm"
    (root / "kernels").mkdir(parents=True)
    shutil.copy(REPO / "variants.json", root / "variants.json")
    shutil.copytree(FIXTURE, root / "kernels" / "softcap")
    proc = pybuild("build", str(root / "kernels" / "softcap"))
    assert "torch-cuda" in proc.stdout and "torch-cpu" in proc.stdout
    return root


def test_build_layout_metadata_and_check(farm: Path) -> None:
    kernel = farm / "kernels" / "softcap"
    assert sorted(p.name for p in (kernel / "build").iterdir()) == ["torch-cpu", "torch-cuda"]
    from kernels_data import Digest, DigestAlgorithm, Metadata

    ids = set()
    for backend in ("cpu", "cuda"):
        variant = kernel / "build" / f"torch-{backend}"
        files = sorted(str(p.relative_to(variant)) for p in variant.rglob("*") if p.is_file())
        assert files == ["metadata.json", "softcap/__init__.py", "softcap/_ops.py"]
        meta = json.loads((variant / "metadata.json").read_text())
        assert meta["backend"] == {"type": backend}  # no archs: nothing was compiled
        assert meta["id"].startswith(f"_softcap_{backend}_")
        ids.add(meta["id"])
        ops_py = (variant / "softcap" / "_ops.py").read_text()
        assert f"torch.ops.{meta['id']}" in ops_py and "from . import" not in ops_py
        parsed = Metadata.read_from_file(variant / "metadata.json")
        parsed.digest.validate(Digest.hash_variant(DigestAlgorithm.SHA256, variant))
    assert len(ids) == 2

    proc = pybuild("check", str(kernel), "--variants", str(farm / "variants.json"))
    rows = {tuple(c.strip() for c in line.split("│")[1:4]) for line in proc.stdout.splitlines() if "│" in line}
    for check in ("metadata", "digest", "abi3", "sources", "import"):
        assert ("torch-cpu", check, "pass") in rows, (check, proc.stdout)
    assert ("*", "variants", "pass") in rows

    # up to date on a second run; a changed source makes a new id
    proc = pybuild("build", str(kernel))
    assert proc.stdout.count("up to date") == 2, proc.stdout
    init = kernel / "torch-ext" / "softcap" / "__init__.py"
    init.write_text(init.read_text() + "\n# changed\n")
    pybuild("build", str(kernel))
    new = json.loads((kernel / "build" / "torch-cpu" / "metadata.json").read_text())["id"]
    assert new not in ids and new.startswith("_softcap_cpu_")


def test_loads_with_kernels_and_passes_opcheck_and_compile(farm: Path, tmp_path: Path) -> None:
    kernel = farm / "kernels" / "softcap"
    out = probe(f"kernels.get_local_kernel(Path({str(kernel)!r}))", cwd=tmp_path)
    assert out["module"].startswith(f"_softcap_{LOADED}_") and f"/build/torch-{LOADED}/" in out["file"]
    env = {**os.environ, "LOCAL_KERNELS": f"org/softcap={kernel}"}
    out = probe('kernels.get_kernel("org/softcap", version=1)', env=env, cwd=tmp_path)
    assert out["module"].startswith(f"_softcap_{LOADED}_")


CUDA_PROBE = """
import json, torch, kernels
k = kernels.get_kernel("org/softcap", version=1)
x = torch.randn(4096, 512, device="cuda", dtype=torch.bfloat16)
torch.testing.assert_close(k.softcap(x, 2.5), torch.tanh(x / 2.5) * 2.5)
torch.library.opcheck(getattr(torch.ops, k.__name__).softcap, (x, 2.5))
compiled = torch.compile(lambda t: k.softcap(t, 4.0), fullgraph=True)
torch.testing.assert_close(compiled(x), torch.tanh(x / 4.0) * 4.0)
print(json.dumps({"module": k.__name__, "file": k.__file__, "device": str(k.softcap(x, 1.0).device)}))
"""


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_get_kernel_picks_torch_cuda_and_runs_on_the_gpu(farm: Path, tmp_path: Path) -> None:
    kernel = farm / "kernels" / "softcap"
    env = {**os.environ, "LOCAL_KERNELS": f"org/softcap={kernel}"}
    proc = run([sys.executable, "-c", CUDA_PROBE], env=env, cwd=tmp_path)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["module"].startswith("_softcap_cuda_") and "/build/torch-cuda/" in out["file"], out
    assert out["device"].startswith("cuda"), out


def test_a_compiled_file_in_a_noarch_variant_fails_check_and_wheel(farm: Path, tmp_path: Path) -> None:
    kernel = farm / "kernels" / "softcap"
    stray = kernel / "build" / "torch-cpu" / "softcap" / "_stray.abi3.so"
    shutil.copy(sys.executable, stray)  # any ELF file
    proc = pybuild("check", str(kernel), "--no-import", ok=False)
    assert proc.returncode == 8
    flat = " ".join(proc.stdout.split())
    assert "_stray.abi3.so in a pure-Python variant" in flat.replace("│ ", ""), proc.stdout
    proc = pybuild("wheel", str(kernel), "-o", str(tmp_path / "dist"), ok=False)
    assert proc.returncode != 0 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (tmp_path / "dist").exists() or not list((tmp_path / "dist").iterdir())


def test_wheels_are_pure_python(farm: Path, tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    pybuild("wheel", str(farm / "kernels" / "softcap"), "-o", str(dist))
    wheels = sorted(p.name for p in dist.iterdir())
    assert wheels == ["softcap-1.0.0+torchcpu-py3-none-any.whl", "softcap-1.0.0+torchcuda-py3-none-any.whl"]
    with zipfile.ZipFile(dist / wheels[0]) as z:
        meta = Metadata.from_email(z.read("softcap-1.0.0+torchcpu.dist-info/METADATA"))
        wheel = z.read("softcap-1.0.0+torchcpu.dist-info/WHEEL").decode()
    assert [str(r) for r in meta.requires_dist or []] == ["torch"]
    assert "Tag: py3-none-any" in wheel and "Root-Is-Purelib: true" in wheel


def test_collect_places_a_noarch_result(farm: Path, tmp_path: Path) -> None:
    kernel = farm / "kernels" / "softcap"
    result = tmp_path / "result"
    result.mkdir()
    shutil.move(str(kernel / "build" / "torch-cuda"), result / "torch-cuda")
    pybuild("collect", str(result), "--farm", str(farm))
    assert (kernel / "build" / "torch-cuda" / "metadata.json").is_file()
    assert json.loads((kernel / "build" / "torch-cuda" / "metadata.json").read_text())["backend"]["type"] == "cuda"


def test_publish_and_get_kernel_from_the_hub(farm: Path, tmp_path: Path) -> None:
    kernel = farm / "kernels" / "softcap"
    with HubServer() as hub:
        env = hub_subprocess_env(hub.endpoint, tmp_path / "hub")
        # compliant as built: nothing compiled, so no --allow-noncompliant
        pybuild(
            "publish",
            str(kernel),
            "--repo-id",
            "org/softcap",
            "--version",
            "1.0.0",
            "--variants",
            str(farm / "variants.json"),
            env=env,
        )
        refs = hub.store.refs("kernel", "org/softcap")
        commit = refs["tags"]["v1.0.0"]
        assert refs["branches"]["v1"] == commit
        files = set(hub.store.get_repo("kernel", "org/softcap").commits[commit].files)
        assert {"build/torch-cpu/metadata.json", "build/torch-cuda/softcap/_ops.py", "build.toml"} <= files
        work = tmp_path / "work"
        work.mkdir()
        out = probe('kernels.get_kernel("org/softcap", version=1)', env=env, cwd=work)
        assert out["module"].startswith(f"_softcap_{LOADED}_"), out
        assert f"snapshots/{commit}/build/torch-{LOADED}/" in out["file"], out


def test_build_removes_and_check_fails_variants_of_the_other_kind(farm: Path, guide_kernel: Path) -> None:
    kernel = farm / "kernels" / "softcap"
    stale = kernel / "build" / "torch213-cxx11-cpu-x86_64-linux"  # as if softcap used to compile
    shutil.copytree(kernel / "build" / "torch-cpu", stale)
    proc = pybuild("check", str(kernel), "--no-import", ok=False)
    assert proc.returncode == 8
    assert "left from before the kernel became pure Python" in " ".join(proc.stdout.split()), proc.stdout
    proc = pybuild("build", str(kernel))
    assert "removed build/torch213-cxx11-cpu-x86_64-linux/: the kernel is pure Python now" in proc.stderr
    assert not stale.exists() and (kernel / "build" / "torch-cpu").is_dir()
    pybuild("check", str(kernel), "--no-import")

    # the other way round: a compiled kernel (the guide's) with a torch-cuda folder from its pure-Python days
    from pybuild.build import other_kind_variants
    from pybuild.manifest import load_manifest

    (guide_kernel / "build" / "torch-cuda").mkdir(parents=True)
    (guide_kernel / "build" / "torch211-cxx11-cu130-x86_64-linux").mkdir()
    assert [d.name for d in other_kind_variants(load_manifest(guide_kernel))] == ["torch-cuda"]
