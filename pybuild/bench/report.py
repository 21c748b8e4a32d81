"""A bench result as a terminal table, a markdown table (docs/performance.md), a plot and JSON."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

SUMMARY_COLUMNS = (
    "kernel op",
    "shape",
    "dtype",
    "ours µs",
    "ours GB/s",
    "eager",
    "compile",
    "copy same",
    "÷copy same",
    "÷copy large",
    "÷compile",
    "÷other compile",
    "targets met",
)
MARK = {"met": "✓", "tie": "≈ tie", "beyond copy": "✗ beyond copy", "missed": "✗"}


def _targets_cell(targets: list[dict[str, Any]]) -> str:
    if not targets:
        return "-"
    if all(t["met"] for t in targets):
        return "yes"
    return ", ".join(f"{t['verdict']}: {t['target']}" for t in targets if not t["met"])


def summary_rows(doc: dict[str, Any]) -> list[tuple[str, ...]]:
    """One row per case, in SUMMARY_COLUMNS: GB/s of ours and the baselines, ratios, targets."""
    rows: list[tuple[str, ...]] = []
    for r in doc["results"]:
        t = r["timings"]

        def g(name: str, t: dict[str, Any] = t) -> str:
            return f"{t[name]['gbps']:.0f}" if name in t else "-"

        ratios = r["ratios"]
        rows.append(
            (
                f"{r['kernel']} {r['op']}",
                r["label"],
                r["dtype"],
                f"{t['ours']['ms'] * 1e3:.1f}",
                g("ours"),
                g("eager"),
                g("compile"),
                g("copy_same"),
                f"{ratios.get('copy_same', 0):.2f}",
                f"{ratios.get('copy_large', 0):.2f}",
                f"{ratios['compile']:.2f}" if "compile" in ratios else "-",
                " ".join(
                    f"{k.removesuffix('-compile')} {v:.2f}"
                    for k, v in ratios.items()
                    if k.endswith("-compile") and not k.endswith("-launch")
                )
                or "-",
                _targets_cell(r["targets"]),
            )
        )
    return rows


def missed_targets(doc: dict[str, Any]) -> tuple[list[str], int]:
    """Every target not met, one line each, and how many targets the run had."""
    missed = [
        f"{r['kernel']} {r['op']} {r['label']} {r['dtype']}: {t['target']} (got {t['ratio'] or 0:.3f}; "
        f"{t.get('verdict', 'missed')})"
        for r in doc["results"]
        for t in r["targets"]
        if not t["met"]
    ]
    return missed, sum(len(r["targets"]) for r in doc["results"])


def _markdown_targets(targets: list[dict[str, Any]]) -> str:
    return (
        "; ".join(
            f"{MARK.get(x.get('verdict', 'met' if x['met'] else 'missed'), '?')} {x['target'].removeprefix('ours ')}"
            + ("" if x["met"] else f" ({x['ratio']:.3f})")
            for x in targets
        )
        or "–"
    )


def markdown_table(doc: dict[str, Any]) -> list[str]:
    """The result as the markdown table of docs/performance.md, and a line of totals under it."""
    out = [
        "| kernel op | shape | dtype | µs | GB/s | compile GB/s | eager GB/s | copy (same bytes) GB/s "
        "| ÷ copy same | ÷ copy 1 GiB | ÷ compile | targets |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in doc["results"]:
        t, ratios = r["timings"], r["ratios"]
        compile_ratio = f"{ratios['compile']:.3f}" if "compile" in ratios else "-"
        if "dynamic-compile" in ratios:
            compile_ratio += f" (dynamic {ratios['dynamic-compile']:.2f})"
        out.append(
            f"| {r['kernel']} `{r['op']}` | {r['label']} | {r['dtype']} | {t['ours']['ms'] * 1e3:.1f} "
            f"| {t['ours']['gbps']:.0f} | {t.get('compile', {}).get('gbps', 0):.0f} | {t['eager']['gbps']:.0f} "
            f"| {t['copy_same']['gbps']:.0f} | {ratios['copy_same']:.2f} | {ratios['copy_large']:.2f} "
            f"| {compile_ratio} | {_markdown_targets(r['targets'])} |"
        )
    missed, n = missed_targets(doc)
    out += [
        "",
        f"{n - len(missed)} of {n} targets met; large copy {doc['copy_large']['gbps']:.0f} GB/s; "
        f"source {doc['environment'].get('git')}",
    ]
    return out


# --------------------------------------------------------------------------------------------
# Plot

STYLES = {
    "ours": ("C3", "o", "-"),
    "eager": ("C0", "s", "--"),
    "compile": ("C2", "^", "--"),
    "copy_same": ("0.4", "x", ":"),
}


def _panel(ax: Any, title: str, rs: list[dict[str, Any]], large_gbps: float) -> None:
    rs = sorted(rs, key=lambda r: r["bytes"])
    xs = list(range(len(rs)))
    for name, (color, marker, ls) in STYLES.items():
        ys = [r["timings"][name]["gbps"] if name in r["timings"] else float("nan") for r in rs]
        ax.plot(
            xs, ys, color=color, marker=marker, linestyle=ls, label="copy (same bytes)" if name == "copy_same" else name
        )
    extra = sorted({k for r in rs for k in r["timings"] if k.endswith("-compile")})
    for i, name in enumerate(extra):
        ys = [r["timings"][name]["gbps"] if name in r["timings"] else float("nan") for r in rs]
        ax.plot(xs, ys, color=f"C{4 + i}", marker="v", linestyle="-.", linewidth=0.9, label=name)
    ax.axhline(large_gbps, color="0.2", linewidth=0.8, label="copy (1 GiB)")
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("shape (MB moved per call)")
    ax.set_ylabel("GB/s")
    ax.set_ylim(bottom=0)
    ax.set_xticks(xs)
    ax.set_xticklabels([f"{r['label']}\n({r['bytes'] / 1e6:.3g} MB)" for r in rs], rotation=30, fontsize=7)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)


def plot(doc: dict[str, Any], path: Path) -> bool:
    """GB/s per case (ordered by bytes moved), one panel per (kernel, op, dtype). False without matplotlib."""
    try:
        import matplotlib  # type: ignore[import-not-found]

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # type: ignore[import-not-found]
    except ImportError:
        return False
    panels: dict[str, list[dict[str, Any]]] = {}
    for r in doc["results"]:
        panels.setdefault(r["panel"], []).append(r)
    n = len(panels)
    cols = min(3, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.8 * rows), squeeze=False)
    for ax, (title, rs) in zip(axes.flat, panels.items(), strict=False):
        _panel(ax, title, rs, doc["copy_large"]["gbps"])
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    env = doc["environment"]
    fig.suptitle(f"{env['device']['name']} · torch {env['torch']} · {doc['method']['timing']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def write_json(doc: dict[str, Any], path: Path) -> Path:
    """``path``, written whole then renamed into place (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    tmp.replace(path)
    return path


def write_outputs(doc: dict[str, Any], out_dir: Path, name: str, with_plot: bool = True) -> list[Path]:
    """``<name>.json`` and (``with_plot``, matplotlib installed) ``<name>.png`` under ``out_dir``."""
    written = [write_json(doc, out_dir / f"{name}.json")]
    png = out_dir / f"{name}.png"
    if with_plot and plot(doc, png):
        written.append(png)
    return written
