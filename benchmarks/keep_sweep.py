"""Write sweep results (``python -m pybuild bench --sweep N`` or ``--shapes``, ``--out DIR``) in the
form benchmarks/results/sweeps/ keeps them: without the per-round arrays, gzipped, named for their
run (sweep-<kernels>-<device>-seed<S>.json.gz, given-<kernels>-<device>.json.gz; a run of a variant
loaded by name has it in the device part, sweep-rms_norm-nvidia-h200-torch215-cxx11-cu132-seed4).

    python3 benchmarks/keep_sweep.py OUT/sweep-rms_norm-nvidia-h200.json
    python3 benchmarks/keep_sweep.py OUT/*.json --to benchmarks/results/sweeps
"""

from __future__ import annotations

import argparse
import sys
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the farm's pybuild, from any folder

from pybuild.bench import sweep_report  # noqa: E402 - after the path above

DEFAULT_TO = Path(__file__).resolve().parent / "results" / "sweeps"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="keep_sweep.py", description=__doc__.strip().splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path, help="sweep JSON files written by bench --sweep/--shapes")
    parser.add_argument("--to", type=Path, default=DEFAULT_TO, help="folder to write to (default: %(default)s)")
    args = parser.parse_args(argv)
    kept = []
    for path in args.results:  # every file is read and checked before any is written
        try:
            doc = sweep_report.read(path)
            if doc.get("kind") != "sweep":
                raise ValueError("not a sweep (kind is not 'sweep')")
            if "partial" in doc:
                raise ValueError(f"a run that stopped early ({doc['partial']})")
            kept.append((sweep_report.kept_name(doc), sweep_report.kept_bytes(doc)))
        except (OSError, EOFError, zlib.error, ValueError, KeyError, TypeError, AttributeError) as e:
            print(
                f"error: {path}: {e}; pass a whole sweep JSON written by `python -m pybuild bench --sweep N --out DIR`",
                file=sys.stderr,
            )
            return 2
    args.to.mkdir(parents=True, exist_ok=True)
    for name, data in kept:
        tmp = args.to / f".{name}.tmp"
        tmp.write_bytes(data)
        tmp.replace(args.to / name)
        print(args.to / name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
