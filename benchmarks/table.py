"""Print a bench or sweep result (``python -m pybuild bench [--sweep N] --out DIR``) as the markdown
table of docs/performance.md.

    python3 benchmarks/table.py benchmarks/results/gpu-nvidia-h200.json
    python3 benchmarks/table.py benchmarks/results/sweep-rms_norm-nvidia-h200.json
    python3 benchmarks/table.py benchmarks/results/sweeps/sweep-rms_norm-nvidia-h200-torch211-cxx11-cu130-seed2.json.gz
"""

from __future__ import annotations

import sys
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the farm's pybuild, from any folder

from pybuild.bench import markdown_table, sweep_report  # noqa: E402 - after the path above


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        doc = sweep_report.read(Path(argv[0]))
        lines = sweep_report.markdown_table(doc) if doc.get("kind") == "sweep" else markdown_table(doc)
    except (OSError, EOFError, zlib.error, ValueError, KeyError, TypeError, AttributeError) as e:
        print(
            f"error: {argv[0]}: not a readable bench result ({type(e).__name__}: {e}); "
            "pass a JSON written by `python -m pybuild bench --out DIR`",
            file=sys.stderr,
        )
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
