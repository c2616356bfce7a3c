"""Memory-mapping simulator: MiniMalloc's instances, the split's variants, the trusted check.

Trusted code shared by `evaluator.evaluate()` (in the sandbox) and `score()` (a clean
process that never loads the candidate); a broken rule raises kit.Invalid. A buffer is
(lower, upper, size): live over the half-open interval [lower, upper), as MiniMalloc's CSV
format states. Placed buffers must lie inside [0, capacity) and no two of them may overlap
in both time and address; an unplaced buffer (None) stays in slow memory.
"""

from __future__ import annotations

import csv
import io
import numbers
import os
import random
from dataclasses import dataclass

from evaluators import kit

Buffer = tuple[int, int, int]  # (lower, upper, size)

CAPACITY = 1048576  # the capacity MiniMalloc's file names carry (".1048576.csv")
TRAIN = ("A", "C", "E", "G", "I", "K")  # MiniMalloc's challenging suite, alternately
TEST = ("B", "D", "F", "H", "J")
SPLITS = ("train", "test")
TRAIN_FRACTIONS = (("half", 0.5), ("three_quarter", 0.75))  # of the instance's peak live bytes
TEST_FRACTIONS = (("low", 0.40, 0.60), ("high", 0.65, 0.85))  # drawn per variant, uniformly
TEST_KEEP = 0.9  # a test variant keeps each buffer with this probability
TEST_PUBLIC_SEED = 2023  # kit.seed's public seed: the README's test numbers use it


@dataclass(frozen=True)
class Variant:
    """One scored case: an instance's buffers (maybe a subset) and a fast-memory capacity."""

    name: str  # e.g. "A/half"
    buffers: tuple[Buffer, ...]
    capacity: int

    @property
    def total_bytes(self) -> int:
        return sum(b[2] for b in self.buffers)


def file_name(instance: str) -> str:
    return f"{instance}.{CAPACITY}.csv"


def parse_csv(text: str, where: str = "csv") -> list[Buffer]:
    """MiniMalloc's CSV (id,lower,upper,size; ids ignored, rows in file order) as buffers."""
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or [c.strip() for c in rows[0]] != ["id", "lower", "upper", "size"]:
        raise ValueError(f"{where}: expected the header id,lower,upper,size")
    out = []
    for k, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        try:
            lower, upper, size = (int(x) for x in row[1:4])
        except ValueError:
            raise ValueError(f"{where}: line {k}: expected integers, got {row}") from None
        if len(row) != 4 or not 0 <= lower < upper or size <= 0:
            raise ValueError(f"{where}: line {k}: expected 0 <= lower < upper and size > 0: {row}")
        out.append((lower, upper, size))
    return out


def load_instance(instance: str) -> list[Buffer]:
    path = kit.data_path(__file__, file_name(instance))
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: data file missing (`evolve data fetch memory_mapping`)")
    with open(path, encoding="utf-8") as f:
        return parse_csv(f.read(), file_name(instance))


def peak_bytes(buffers: list[Buffer] | tuple[Buffer, ...]) -> int:
    """The most bytes live at once (half-open: a buffer ending at t frees before one starting at t)."""
    events = sorted([(lo, s) for lo, _, s in buffers] + [(up, -s) for _, up, s in buffers])
    live = peak = 0
    for _, delta in events:
        live += delta
        peak = max(peak, live)
    return peak


def make_variants(split: str) -> list[Variant]:
    """Train: each instance at 1/2 and 3/4 of its peak and at the full published capacity.
    Test: each instance's buffers sub-sampled, at a low and a high drawn fraction of the
    subset's peak and at full capacity, all drawn under kit.seed (the run's secret seed)."""
    if split == "train":
        out = []
        for inst in TRAIN:
            bufs = tuple(load_instance(inst))
            peak = peak_bytes(bufs)
            out += [Variant(f"{inst}/{tag}", bufs, int(f * peak)) for tag, f in TRAIN_FRACTIONS]
            out.append(Variant(f"{inst}/full", bufs, CAPACITY))
        return out
    if split == "test":
        out = []
        for inst in TEST:
            full = load_instance(inst)
            if kit.private_data():  # a new instance of the suite's recipe, same size
                full = dissection(len(full), random.Random(kit.seed(PRIVATE_SEED, inst)))
            for tag, lo, hi in (*TEST_FRACTIONS, ("full", 1.0, 1.0)):
                rng = random.Random(kit.seed(TEST_PUBLIC_SEED, inst, tag))
                bufs = tuple(b for b in full if rng.random() < TEST_KEEP)
                frac = round(rng.uniform(lo, hi), 3)
                cap = CAPACITY if tag == "full" else int(frac * peak_bytes(bufs))
                out.append(Variant(f"{inst}/{tag}", bufs, cap))
        return out
    raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")


PRIVATE_SEED = 2024  # the public part of the private test instances' seed (kit.seed)
GRAIN = 1024  # every lower, upper and size of the suite is a multiple of 1 KiB


def dissection(count: int, rng: random.Random) -> list[Buffer]:
    """A new instance with a perfect packing at CAPACITY, drawn the way the suite's are laid
    out: the CAPACITY x CAPACITY square (time by address, both in GRAIN steps) cut into
    `count` rectangles, each cut splitting a rectangle drawn by area, across its longer side
    at a uniform grain position; each rectangle is a buffer (its time span, its height).
    Every address is live at every time, so the peak is CAPACITY and only an exact
    interlocking packs it all. A run's held-out instances, so no carried packing of a public
    instance fits."""
    side = CAPACITY // GRAIN
    rects = [(0, side, 0, side)]  # (t0, t1, a0, a1) in grains
    while len(rects) < count:
        areas = [(t1 - t0) * (a1 - a0) for t0, t1, a0, a1 in rects]
        k = rng.choices(range(len(rects)), weights=areas)[0]
        t0, t1, a0, a1 = rects[k]
        if max(t1 - t0, a1 - a0) < 2:
            continue
        if t1 - t0 >= a1 - a0:
            cut = rng.randint(t0 + 1, t1 - 1)
            rects[k : k + 1] = [(t0, cut, a0, a1), (cut, t1, a0, a1)]
        else:
            cut = rng.randint(a0 + 1, a1 - 1)
            rects[k : k + 1] = [(t0, t1, a0, cut), (t0, t1, cut, a1)]
    rng.shuffle(rects)
    return [(t0 * GRAIN, t1 * GRAIN, (a1 - a0) * GRAIN) for t0, t1, a0, a1 in rects]


def check_offsets(
    raw: object, buffers: tuple[Buffer, ...] | list[Buffer], capacity: int
) -> list[int | None]:
    """The candidate's answer as offsets (int, or None for slow memory), or kit.Invalid saying
    which buffer breaks which rule: one entry per buffer, inside [0, capacity), no two placed
    buffers overlapping in time and address."""
    if isinstance(raw, tuple):
        raw = list(raw)
    if not isinstance(raw, list):
        raise kit.Invalid(
            f"allocate() returned {type(raw).__name__}; expected a list of offsets (int or None)"
        )
    if len(raw) != len(buffers):
        raise kit.Invalid(f"returned {len(raw)} offsets; expected {len(buffers)} (one per buffer)")
    offsets: list[int | None] = []
    for i, x in enumerate(raw):
        if x is None:
            offsets.append(None)
            continue
        if isinstance(x, bool) or not isinstance(x, numbers.Integral):
            raise kit.Invalid(f"buffer {i}: offset {x!r} is not an integer or None")
        off, size = int(x), buffers[i][2]
        if off < 0 or off + size > capacity:
            raise kit.Invalid(
                f"buffer {i}: offset {off} + size {size} is outside the capacity [0, {capacity})"
            )
        offsets.append(off)
    _check_no_overlap(offsets, buffers)
    return offsets


def _check_no_overlap(offsets: list[int | None], buffers) -> None:
    """Sweep over time: each placed buffer against those still live when it starts."""
    order = sorted((buffers[i][0], i) for i, o in enumerate(offsets) if o is not None)
    live: list[int] = []
    for lower, i in order:
        live = [j for j in live if buffers[j][1] > lower]
        a0 = offsets[i]
        a1 = a0 + buffers[i][2]
        for j in live:
            b0 = offsets[j]
            if a0 < b0 + buffers[j][2] and b0 < a1:
                t0, t1 = lower, min(buffers[i][1], buffers[j][1])
                lo, hi = max(a0, b0), min(a1, b0 + buffers[j][2])
                a, b = min(i, j), max(i, j)
                raise kit.Invalid(
                    f"buffers {a} and {b} overlap in time [{t0}, {t1}) and address [{lo}, {hi})"
                )
        live.append(i)


def served_bytes(offsets: list[int | None], buffers) -> int:
    """Bytes of the buffers placed in fast memory (offsets already checked)."""
    return sum(b[2] for b, o in zip(buffers, offsets, strict=True) if o is not None)


def summary() -> str:
    lines = ["variant      buffers  capacity   total bytes  peak"]
    for split in SPLITS:
        for v in make_variants(split):
            lines.append(
                f"{split:5} {v.name:18} {len(v.buffers):4} {v.capacity:9} {v.total_bytes:11} "
                f"{peak_bytes(v.buffers):9}"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    print(summary())
