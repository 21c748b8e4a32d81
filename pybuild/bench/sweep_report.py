"""The sweep's summary, its JSON and its plot (an SVG: ours ÷ best peer over bytes moved)."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from .environment import device_slug

COLUMNS = (
    "kernel op",
    "device",
    "shapes",
    "correct",
    "min graph ratio",
    "at (graph)",
    "graph < thr",
    "min plain ratio",
    "at (plain)",
    "plain < thr",
)


def _where(r: dict[str, Any]) -> str:
    return f"{r['dtype']} {r['label']}"


def summarize(doc: dict[str, Any]) -> dict[str, Any]:
    """Per op: shapes, correct ones, the smallest graph and plain ratios and where they were."""
    thr = doc["method"]["thresholds"]
    out: dict[str, Any] = {}
    for r in doc["results"]:
        key = f"{r['kernel']} {r['op']}"
        s = out.setdefault(
            key,
            {
                "shapes": 0,
                "correct": 0,
                "wrong": [],
                "graph_below": 0,
                "plain_below": 0,
                "min_graph_ratio": math.inf,
                "min_graph_at": None,
                "min_graph_peer": None,
                "min_plain_ratio": math.inf,
                "min_plain_at": None,
            },
        )
        s["shapes"] += 1
        s["correct"] += bool(r["correct"])
        if not r["correct"]:
            s["wrong"].append(_where(r))
        s["graph_below"] += r["graph_ratio"] < thr["graph"]
        s["plain_below"] += r["plain_ratio"] < thr["plain"]
        if r["graph_ratio"] < s["min_graph_ratio"]:
            s["min_graph_ratio"], s["min_graph_at"], s["min_graph_peer"] = r["graph_ratio"], _where(r), r["best_peer"]
        if r["plain_ratio"] < s["min_plain_ratio"]:
            s["min_plain_ratio"], s["min_plain_at"] = r["plain_ratio"], _where(r)
    return out


def passed(doc: dict[str, Any]) -> bool:
    """Every shape correct and at or above both thresholds."""
    return all(
        s["correct"] == s["shapes"] and not s["graph_below"] and not s["plain_below"] for s in doc["summary"].values()
    )


def rows(doc: dict[str, Any]) -> list[tuple[str, ...]]:
    dev = doc["environment"]["device"]["name"]
    return [
        (
            k,
            dev,
            str(s["shapes"]),
            str(s["correct"]),
            f"{s['min_graph_ratio']:.3f}",
            str(s["min_graph_at"]),
            str(s["graph_below"]),
            f"{s['min_plain_ratio']:.3f}",
            str(s["min_plain_at"]),
            str(s["plain_below"]),
        )
        for k, s in doc["summary"].items()
    ]


def markdown_table(doc: dict[str, Any]) -> list[str]:
    """The summary as the markdown table of docs/performance.md, and a line naming the run under it."""
    thr = doc["method"]["thresholds"]
    out = [
        f"| op | correct | min graph ratio | at | fastest peer there | < {thr['graph']:g}x | min plain ratio | at "
        f"| < {thr['plain']:g}x |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for key, s in doc["summary"].items():
        out.append(
            f"| {key.split()[-1]} | {s['correct']}/{s['shapes']} | {s['min_graph_ratio']:.3f} "
            f"| {s['min_graph_at']} | {s['min_graph_peer']} | {s['graph_below']} | {s['min_plain_ratio']:.3f} "
            f"| {s['min_plain_at']} | {s['plain_below']} |"
        )
    env, dist = doc["environment"], doc["distribution"]
    out += [
        "",
        f"{env['device']['name']}; {drawn(dist)}; "
        + (f"{doc['seconds']:.0f} s; " if "seconds" in doc else "")
        + f"source {env.get('git')}"
        + (f"; variant {env['variant']}" if env.get("variant") else "")
        + built_note(doc)
        + partial_note(doc),
    ]
    return out


def built_note(doc: dict[str, Any]) -> str:
    """'' where every loaded build was made at the source commit the result names (or says
    nothing); else the commit each other one was made at (``-dirty`` if its tree or the kernel's
    sources differed from it)."""
    source = doc["environment"].get("git")
    notes = []
    for name, b in sorted((doc.get("builds") or {}).items()):
        if not b or not b.get("built-at"):
            continue
        made = b["built-at"] + ("-dirty" if b.get("built-dirty") or b.get("kernel-dirty") else "")
        if made != source:
            notes.append(f"; {name} built at {made}")
    return "".join(notes)


def partial_note(doc: dict[str, Any]) -> str:
    """'' for a whole run; for a checkpoint left by a run that stopped early, how far it got."""
    p = doc.get("partial")
    return f"; partial: {p['shapes_done']} of {p['shapes_planned']} shapes" if p else ""


# --------------------------------------------------------------------------------------------
# Plot


W, H = 980, 360  # one panel
PAD_L, PAD_R, PAD_T, PAD_B = 64, 180, 34, 46
COLORS = ("#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")


def _panel(doc: dict[str, Any], key: str, title: str, threshold: float, y0: int) -> list[str]:
    res = doc["results"]
    xs = [math.log10(max(1, r["bytes"])) for r in res]
    ys = [r[key] for r in res]
    x_lo, x_hi = math.floor(min(xs, default=0)), math.ceil(max(xs, default=1))
    x_hi = max(x_hi, x_lo + 1)
    y_lo = min(0.5, math.floor(min(ys, default=1) * 10) / 10)
    y_hi = max(2.0, math.ceil(max(ys, default=1) * 10) / 10)
    pw, ph = W - PAD_L - PAD_R, H - PAD_T - PAD_B

    def px(x: float) -> float:
        return PAD_L + (x - x_lo) / (x_hi - x_lo) * pw

    def py(y: float) -> float:
        return y0 + PAD_T + (1 - (min(max(y, y_lo), y_hi) - y_lo) / (y_hi - y_lo)) * ph

    out = [
        f'<text x="{W / 2}" y="{y0 + 20}" text-anchor="middle" font-size="14">{escape(title)}</text>',
        f'<rect x="{PAD_L}" y="{y0 + PAD_T}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>',
    ]
    for e in range(x_lo, x_hi + 1):
        out.append(f'<line x1="{px(e):.1f}" y1="{y0 + PAD_T}" x2="{px(e):.1f}" y2="{y0 + PAD_T + ph}" stroke="#ddd"/>')
        out.append(f'<text x="{px(e):.1f}" y="{y0 + PAD_T + ph + 16}" text-anchor="middle" font-size="11">1e{e}</text>')
    step = 0.25 if y_hi - y_lo <= 2.5 else 0.5
    y = math.ceil(y_lo / step) * step
    while y <= y_hi + 1e-9:
        out.append(f'<line x1="{PAD_L}" y1="{py(y):.1f}" x2="{PAD_L + pw}" y2="{py(y):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{PAD_L - 6}" y="{py(y) + 4:.1f}" text-anchor="end" font-size="11">{y:.2f}</text>')
        y += step
    out.append(
        f'<line x1="{PAD_L}" y1="{py(threshold):.1f}" x2="{PAD_L + pw}" y2="{py(threshold):.1f}" '
        f'stroke="#000" stroke-dasharray="5,3"/>'
    )
    out.append(f'<text x="{PAD_L + pw + 4}" y="{py(threshold) + 4:.1f}" font-size="11">{threshold:g}x</text>')
    out.append(
        f'<text x="{PAD_L + pw / 2}" y="{y0 + H - 8}" text-anchor="middle" font-size="12">bytes moved per call</text>'
    )
    ops = list(dict.fromkeys(f"{r['kernel']} {r['op']}" for r in res))
    for r, x, yv in zip(res, xs, ys, strict=True):
        c = COLORS[ops.index(f"{r['kernel']} {r['op']}") % len(COLORS)]
        tip = escape(f"{r['op']} {r['dtype']} {r['label']}: {yv:.3f}x")
        if r["correct"]:
            out.append(
                f'<circle cx="{px(x):.1f}" cy="{py(yv):.1f}" r="3" fill="{c}" fill-opacity="0.75">'
                f"<title>{tip}</title></circle>"
            )
        else:  # a wrong result: a cross, whatever its speed
            a, b = px(x), py(yv)
            out.append(
                f'<path d="M{a - 4:.1f},{b - 4:.1f}L{a + 4:.1f},{b + 4:.1f}M{a - 4:.1f},{b + 4:.1f}'
                f'L{a + 4:.1f},{b - 4:.1f}" stroke="#000" stroke-width="2"><title>WRONG {tip}</title></path>'
            )
    for i, name in enumerate(ops):
        ly = y0 + PAD_T + 14 + 16 * i
        out.append(f'<circle cx="{PAD_L + pw + 14}" cy="{ly - 4}" r="4" fill="{COLORS[i % len(COLORS)]}"/>')
        out.append(f'<text x="{PAD_L + pw + 24}" y="{ly}" font-size="11">{escape(name)}</text>')
    return out


def drawn(dist: dict[str, Any]) -> str:
    """Where a sweep's shapes came from, in a few words: its seed and count, or --shapes."""
    if "given_shapes" in dist:
        return f"{len(dist['given_shapes'])} given shapes"
    return f"seed {dist['seed']}, {dist['n_per_op']} shapes per op"


def svg(doc: dict[str, Any]) -> str:
    thr = doc["method"]["thresholds"]
    env = doc["environment"]
    dist = doc["distribution"]
    head = (
        f"{env['device']['name']} · torch {env['torch']} · {drawn(dist)} "
        f"· source {str(env.get('git'))[:10]}{partial_note(doc).replace(';', ' ·')}"
    )
    body = [f'<text x="{W / 2}" y="18" text-anchor="middle" font-size="13">{escape(head)}</text>']
    body += _panel(
        doc, "graph_ratio", "CUDA graphs: ours ÷ fastest of eager, compile, compile-static", thr["graph"], 24
    )
    body += _panel(doc, "plain_ratio", "plain calls: ours ÷ eager", thr["plain"], 24 + H)
    total_h = 24 + 2 * H
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{total_h}" viewBox="0 0 {W} {total_h}" '
        f'font-family="sans-serif">\n<rect width="100%" height="100%" fill="#fff"/>\n' + "\n".join(body) + "\n</svg>\n"
    )


def write(doc: dict[str, Any], out_dir: Path, name: str, with_plot: bool = True) -> list[Path]:
    """``<name>.json`` (written whole, then renamed) and ``<name>.svg``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    tmp.replace(path)
    written = [path]
    if with_plot:
        plot = out_dir / f"{name}.svg"
        plot.write_text(svg(doc))
        written.append(plot)
    return written


# The form a sweep is committed in (benchmarks/results/sweeps/, benchmarks/keep_sweep.py): without
# the per-round arrays, compact, gzipped without a timestamp (the same run gives the same bytes),
# named for what it ran: sweep-<kernels>-<device>-seed<S>.json.gz, or given-<kernels>-<device>.json.gz
# for shapes given with --shapes; a run of a variant loaded by name (PYBUILD_TEST_VARIANT: another
# torch than the machine's) has that variant in its device part (device_slug, variant_tag):
# sweep-<kernels>-<device>-torch215-cxx11-cu132-seed<S>.
KEPT_DROPS = ("graph_rounds_us", "plain_rounds_us")


def kept_name(doc: dict[str, Any]) -> str:
    kernels = "-".join(dict.fromkeys(r["kernel"] for r in doc["results"]))
    device = device_slug(doc).removeprefix("gpu-")
    dist = doc["distribution"]
    if "given_shapes" in dist:
        return f"given-{kernels}-{device}.json.gz"
    return f"sweep-{kernels}-{device}-seed{dist['seed']}.json.gz"


def kept_bytes(doc: dict[str, Any]) -> bytes:
    results = [{k: v for k, v in r.items() if k not in KEPT_DROPS} for r in doc["results"]]
    data = json.dumps({**doc, "results": results}, separators=(",", ":")).encode()
    return gzip.compress(data, compresslevel=9, mtime=0)


def read(path: Path) -> dict[str, Any]:
    """A sweep or bench result as written by ``--out`` (JSON) or kept (``.json.gz``)."""
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.name.endswith(".gz") else raw)
