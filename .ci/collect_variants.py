"""The collector of the per-variant build jobs (.github/workflows/build-envs.yml, benchmarks/fanout.sh).

Each job leaves ``<kernel>/<variant>/`` trees (its kernels' ``build/<variant>/`` folders); this moves
every one into ``kernels/<kernel>/build/<variant>/`` of the farm, refusing a variant two jobs both
built, then runs ``python -m pybuild check`` on each kernel for the variants collected. Every check
must pass but manylinux_2_28: these are host builds (the runner's glibc), for development and
testing; release builds come from Nix (build.yml, release.yml).

    python .ci/collect_variants.py FARM ARTIFACT_DIR...
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

ACCEPTED = {"manylinux_2_28"}  # failed by every host build; see the docstring


def collect(farm: Path, artifacts: list[Path]) -> dict[str, list[str]]:
    """Move each artifact's ``<kernel>/<variant>/`` into the farm; ``{kernel: [variants]}``."""
    placed: dict[str, list[str]] = {}
    for artifact in artifacts:
        for variant_dir in sorted(p for p in artifact.glob("*/*") if p.is_dir()):
            kernel, variant = variant_dir.parent.name, variant_dir.name
            if not (farm / "kernels" / kernel / "build.toml").is_file():
                raise SystemExit(f"{variant_dir}: no kernels/{kernel}/build.toml in {farm}")
            if variant in placed.get(kernel, []):
                raise SystemExit(f"{kernel} {variant}: built by two jobs ({variant_dir}); each variant is one job's")
            dest = farm / "kernels" / kernel / "build" / variant
            if dest.exists():
                shutil.rmtree(dest)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(variant_dir, dest, symlinks=True)
            placed.setdefault(kernel, []).append(variant)
    return placed


def check(farm: Path, placed: dict[str, list[str]]) -> list[str]:
    """``pybuild check`` of what was collected; the failed checks that are not accepted."""
    failed = []
    for kernel, variants in sorted(placed.items()):
        cmd = [sys.executable, "-m", "pybuild", "check", f"kernels/{kernel}", "--json", "--no-import"]
        cmd += [a for v in variants for a in ("--variant", v)]
        out = subprocess.run(cmd, cwd=farm, capture_output=True, text=True, check=False)
        try:
            reports = json.loads(out.stdout)
        except json.JSONDecodeError:
            raise SystemExit(f"pybuild check kernels/{kernel} failed (exit {out.returncode}):\n{out.stderr}") from None
        for report in reports:
            for row in report["results"]:
                if row["status"] == "fail" and row["check"] not in ACCEPTED:
                    failed.append(f"{kernel} {row['variant']} {row['check']}: {row['detail']}")
    return failed


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    farm, artifacts = Path(argv[0]), [Path(a) for a in argv[1:]]
    placed = collect(farm, artifacts)
    if not placed:
        print(f"nothing to collect in {', '.join(map(str, artifacts))}", file=sys.stderr)
        return 1
    for kernel, variants in sorted(placed.items()):
        print(f"collected {kernel}: {', '.join(sorted(variants))}")
    failed = check(farm, placed)
    for line in failed:
        print(f"check failed: {line}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
