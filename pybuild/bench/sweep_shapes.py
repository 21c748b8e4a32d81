"""The seeded shape distribution of ``python -m pybuild bench KERNEL --sweep N --seed S``.

Two kinds of op take shapes from here:

- ``rows`` ops take ``[rows, last]``: rows log-uniform over 1..10^6 (1 is decode), last dimension
  log-uniform over ``2..LAST_MAX`` (more than 2^18) in one of five forms (a power of two, a
  multiple of 64 that is not one, odd, prime, even but not a multiple of 4, so of no vector width
  but 2 elements). An op whose last dimension must be a multiple of ``step`` (activation: 2 d)
  draws ``last / step`` that way. Every dtype the op takes gets its share.
- ``image`` ops take ``[H, W]`` (one image) or ``[N, H, W]`` (a batch), each side log-uniform over
  1 up to 8640 x 15360, odd in half the draws, batches of 2..64.

Rows and last dimension are drawn from N equal strata each, shuffled (a Latin hypercube), so N
shapes cover both ranges end to end; the first few shapes of each op are fixed corners (1 x 2, a
million rows, 1 x LAST_MAX, the 3 x 151936 that fell off a cliff once). A shape that would move
more than ``max_bytes`` per call (inputs read once + outputs written once) gets fewer rows (or
images): three times in ten as many as fit, else log-uniform below that. The generator is seeded
per (seed, op), so one op's shapes do not change when another op is added.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

ROWS_MAX = 1_000_000
LAST_MAX = (1 << 18) + (1 << 16)  # 327680: past 2^18
IMAGE_MAX = (8640, 15360)
BATCH_MAX = 64
DEFAULT_MAX_BYTES = 128 << 20
LAST_FORMS = ("pow2", "vec64", "odd", "prime", "even-unaligned")
DTYPE_NAMES = ("float32", "float16", "bfloat16", "uint8")  # what --shapes may name


@dataclass(frozen=True)
class Shape:
    dims: tuple[int, ...]
    dtype: str
    form: str  # how the last dimension (or the image) was drawn, e.g. "prime", "corner", "batched"
    bytes: int

    @property
    def label(self) -> str:
        return "x".join(map(str, self.dims))


@dataclass(frozen=True)
class Distribution:
    """What ``draw`` draws from; ``describe()`` goes into the JSON so a run can be repeated."""

    seed: int
    n: int
    max_bytes: int = DEFAULT_MAX_BYTES
    rows: tuple[int, int] = (1, ROWS_MAX)
    last: tuple[int, int] = (2, LAST_MAX)
    image: tuple[int, int] = IMAGE_MAX
    batch: tuple[int, int] = (2, BATCH_MAX)
    forms: tuple[str, ...] = LAST_FORMS
    extra: dict[str, Any] = field(default_factory=dict)
    # `--shapes`: these instead of draws, each (dims, dtype or None for every dtype the op takes)
    given: tuple[tuple[tuple[int, ...], str | None], ...] = ()

    def describe(self) -> dict[str, Any]:
        if self.given:
            return {
                "given_shapes": [format_shape(dims, dtype) for dims, dtype in self.given],
                "shapes": "as given (--shapes): rows ops take ROWSxLAST, image ops HxW or NxHxW; "
                "every dtype the op takes where none is named",
            }
        return {
            "seed": self.seed,
            "n_per_op": self.n,
            "max_bytes_per_call": self.max_bytes,
            "rows": list(self.rows),
            "last_dim": list(self.last),
            "image_max_hw": list(self.image),
            "batch": list(self.batch),
            "last_dim_forms": list(self.forms),
            "rows_and_last": "log-uniform, N strata each, shuffled (Latin hypercube); fixed corners first",
            "images": "one image or a batch (2 in 5); H and W log-uniform, odd in half the draws",
            "over_max_bytes": "fewer rows (or images): 3 in 10 as many as fit, else log-uniform below",
            "generator": "random.Random(f'{seed}:{op}') per op",
        }


def format_shape(dims: Sequence[int], dtype: str | None) -> str:
    return "x".join(map(str, dims)) + (f":{dtype}" if dtype else "")


def parse_shapes(spec: str) -> tuple[tuple[tuple[int, ...], str | None], ...]:
    """``--shapes`` text, e.g. ``344x19373:float16,3x151936``: (dims, dtype or None) per shape.
    Raises ValueError with the part that is wrong."""
    shapes = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        dims_text, _, dtype = part.partition(":")
        dims_list = dims_text.lower().split("x")
        if not 2 <= len(dims_list) <= 3 or not all(d.isdigit() and int(d) > 0 for d in dims_list):
            raise ValueError(f"{part!r}: expected 2 or 3 positive sizes joined by 'x', e.g. 344x19373")
        if dtype and dtype not in DTYPE_NAMES:
            raise ValueError(f"{part!r}: unknown dtype {dtype!r}; one of {', '.join(DTYPE_NAMES)}")
        shapes.append((tuple(int(d) for d in dims_list), dtype or None))
    if not shapes:
        raise ValueError("no shapes")
    return tuple(shapes)


def is_prime(n: int) -> bool:
    if n < 2:
        return False
    if n % 2 == 0:
        return n == 2
    return all(n % f for f in range(3, math.isqrt(n) + 1, 2))


def _log_uniform(u: float, lo: int, hi: int) -> int:
    """The integer at fraction ``u`` (0..1) of the log range lo..hi."""
    return max(lo, min(hi, int(round(math.exp(math.log(lo) + u * (math.log(hi) - math.log(lo)))))))


def shape_last(v: int, form: str, lo: int, hi: int) -> int:
    """``v`` moved to the nearest value of ``form`` inside lo..hi (lo when none is)."""
    if form == "pow2":
        cands = [1 << k for k in range(0, hi.bit_length()) if lo <= 1 << k <= hi]
        return min(cands, key=lambda c: abs(math.log(c) - math.log(v))) if cands else lo
    if form == "vec64":
        c = max(64, round(v / 64) * 64)
        while c & (c - 1) == 0:  # a power of two (64, 128): the next multiple of 64
            c += 64
        return c if lo <= c <= hi else lo
    if form == "odd":
        c = v | 1
        return c if c <= hi else c - 2 if c - 2 >= lo else lo
    if form == "prime":
        c = v
        while c <= hi and not is_prime(c):
            c += 1
        if c > hi:
            c = v
            while c >= lo and not is_prime(c):
                c -= 1
        return c if lo <= c <= hi else lo
    if form == "even-unaligned":
        c = (v // 4) * 4 + 2
        return c if lo <= c <= hi else lo
    raise ValueError(f"unknown last-dimension form {form!r}")


def _fit(rng: random.Random, count: int, bytes_of: Callable[[int], int], max_bytes: int, most: bool = False) -> int:
    """``count`` (rows or images), or fewer so that one call moves at most ``max_bytes`` (with
    ``most``: as many as fit)."""
    if bytes_of(count) <= max_bytes:
        return count
    lo, hi = 1, count  # the most that fit: bytes_of is increasing
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if bytes_of(mid) <= max_bytes else (lo, mid - 1)
    if most or rng.random() < 0.3 or lo == 1:
        return lo
    return _log_uniform(rng.random(), 1, lo)


def _strata(rng: random.Random, n: int) -> list[float]:
    """n fractions, one in each of n equal strata of 0..1, shuffled."""
    us = [(i + rng.random()) / n for i in range(n)]
    rng.shuffle(us)
    return us


def _dtype_cycle(rng: random.Random, dtypes: Sequence[str], n: int) -> list[str]:
    out = [dtypes[i % len(dtypes)] for i in range(n)]
    rng.shuffle(out)
    return out


def draw_rows(
    op: str, dist: Distribution, dtypes: Sequence[str], bytes_of: Callable[[int, int, str], int], step: int = 1
) -> list[Shape]:
    """``dist.n`` shapes ``(rows, last)`` for a rows op; ``last`` is a multiple of ``step``;
    ``bytes_of(rows, last, dtype)`` is what one call moves."""
    rng = random.Random(f"{dist.seed}:{op}")
    lo_u, hi_u = max(1, -(-dist.last[0] // step)), dist.last[1] // step  # bounds of last / step
    rows_hi = dist.rows[1]
    corners = [
        (1, lo_u, "corner"),
        (rows_hi, lo_u, "corner"),
        (1, hi_u, "corner"),
        (3, 151936 // step, "corner"),
        (rows_hi, 64 // step or 1, "corner"),
        (7, hi_u, "corner"),
    ]
    corners = [c for c in corners if lo_u <= c[1] <= hi_u][: dist.n]
    n_rand = dist.n - len(corners)
    rows_u, last_u = _strata(rng, n_rand), _strata(rng, n_rand)
    dtypes_seq = _dtype_cycle(rng, dtypes, dist.n)
    picks: list[tuple[int, int, str]] = list(corners)
    for i in range(n_rand):
        form = rng.choice(dist.forms)
        unit = shape_last(_log_uniform(last_u[i], lo_u, hi_u), form, lo_u, hi_u)
        picks.append((_log_uniform(rows_u[i], dist.rows[0], rows_hi), unit, form))
    shapes = []
    for (rows, unit, form), dtype in zip(picks, dtypes_seq, strict=True):
        last = unit * step

        def moved(r: int, last: int = last, dtype: str = dtype) -> int:
            return bytes_of(r, last, dtype)

        rows = _fit(rng, rows, moved, dist.max_bytes)
        shapes.append(Shape((rows, last), dtype, form, bytes_of(rows, last, dtype)))
    return shapes


def _times(unit: int) -> Callable[[int], int]:
    """k -> k * unit: the bytes of k rows (or images) of ``unit`` bytes each."""
    return lambda k: k * unit


def draw_images(op: str, dist: Distribution, bytes_per_pixel: int) -> list[Shape]:
    """``dist.n`` uint8 image shapes, ``(H, W)`` or ``(N, H, W)``; a pixel moves ``bytes_per_pixel``."""
    rng = random.Random(f"{dist.seed}:{op}")
    h_max, w_max = dist.image
    corners = [
        ((1, 1), "corner"),
        ((1080, 1920), "corner"),
        ((3, 1079, 1921), "corner"),
        ((1, 1, 1), "corner"),
        ((h_max, w_max), "corner"),
    ][: dist.n]
    n_rand = dist.n - len(corners)
    h_u, w_u = _strata(rng, n_rand), _strata(rng, n_rand)
    shapes = []
    picks: list[tuple[tuple[int, ...], str]] = list(corners)
    for i in range(n_rand):
        h, w = _log_uniform(h_u[i], 1, h_max), _log_uniform(w_u[i], 1, w_max)
        odd = rng.random() < 0.5
        if odd:
            h, w = (h | 1 if h | 1 <= h_max else h), (w | 1 if w | 1 <= w_max else w)
        if rng.random() < 0.4:
            picks.append(((_log_uniform(rng.random(), *dist.batch), h, w), "batched-odd" if odd else "batched"))
        else:
            picks.append(((h, w), "single-odd" if odd else "single"))
    for dims, form in picks:
        h, w = dims[-2:]
        if h * w * bytes_per_pixel > dist.max_bytes:  # one image too large: as many of its rows as fit
            h = _fit(rng, h, _times(w * bytes_per_pixel), dist.max_bytes, most=True)
        per_image = h * w * bytes_per_pixel
        dims = (_fit(rng, dims[0], _times(per_image), dist.max_bytes), h, w) if len(dims) == 3 else (h, w)
        pixels = math.prod(dims)
        shapes.append(Shape(tuple(dims), "uint8", form, pixels * bytes_per_pixel))
    return shapes
