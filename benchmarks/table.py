"""Print a bench JSON (``python -m pybuild bench --out``) as the README's markdown table.

    python3 benchmarks/table.py benchmarks/results/gpu-nvidia-h200.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

MARK = {"met": "✓", "tie": "≈ tie", "beyond copy": "✗ beyond copy", "missed": "✗"}


def rows(doc: dict) -> list[str]:
    out = ["| kernel op | shape | dtype | µs | GB/s | compile GB/s | eager GB/s | copy (same bytes) GB/s "
           "| ÷ copy same | ÷ copy 1 GiB | ÷ compile | targets |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in doc["results"]:
        t, ratios = r["timings"], r["ratios"]
        compile_ratio = f"{ratios['compile']:.3f}" if "compile" in ratios else "-"
        if "dynamic-compile" in ratios:
            compile_ratio += f" (dynamic {ratios['dynamic-compile']:.2f})"
        targets = "; ".join(
            f"{MARK.get(x.get('verdict', 'met' if x['met'] else 'missed'), '?')} {x['target'].removeprefix('ours ')}"
            + ("" if x["met"] else f" ({x['ratio']:.3f})")
            for x in r["targets"]) or "–"
        out.append(
            f"| {r['kernel']} `{r['op']}` | {r['label']} | {r['dtype']} | {t['ours']['ms'] * 1e3:.1f} "
            f"| {t['ours']['gbps']:.0f} | {t.get('compile', {}).get('gbps', 0):.0f} | {t['eager']['gbps']:.0f} "
            f"| {t['copy_same']['gbps']:.0f} | {ratios['copy_same']:.2f} | {ratios['copy_large']:.2f} "
            f"| {compile_ratio} | {targets} |")
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        doc = json.loads(Path(argv[0]).read_text())
        doc["results"], doc["copy_large"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"error: {argv[0]}: not a readable bench result ({type(e).__name__}: {e}); "
              "pass a JSON written by `python -m pybuild bench --out DIR`", file=sys.stderr)
        return 2
    print("\n".join(rows(doc)))
    n = sum(len(r["targets"]) for r in doc["results"])
    met = sum(x["met"] for r in doc["results"] for x in r["targets"])
    print(f"\n{met} of {n} targets met; large copy {doc['copy_large']['gbps']:.0f} GB/s; "
          f"source {doc['environment'].get('git')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
