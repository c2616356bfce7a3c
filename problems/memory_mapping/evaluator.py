"""Evaluator for memory mapping (MiniMalloc's instances under a fast-memory budget).

Two halves with different trust. `evaluate()` runs inside the sandbox: it sends
every case of the split (buffers and capacity) to the candidate's allocate() in
the candidate's own confined process (one round trip), checks each answer for an
early, precise error and reports the offsets. `score()` runs in a clean process
that never imports the candidate: it rebuilds the cases, re-checks every answer
(one entry per buffer, inside the capacity, no two placed buffers overlapping in
time and address) and counts the bytes served from fast memory, so a candidate
that patches this module or the simulator in memory gains nothing.
"""

from __future__ import annotations

import mem_sim as sim  # the simulator next to this file

from evaluators import kit


def _checked(variants: list, answers: list) -> list[list[int | None]]:
    """Each answer as checked offsets, or kit.Invalid naming the case."""
    out = []
    for v, raw in zip(variants, answers, strict=True):
        try:
            out.append(sim.check_offsets(raw, v.buffers, v.capacity))
        except kit.Invalid as e:
            raise kit.Invalid(f"case {v.name}: {e}") from None
    return out


def _allocate_all(fn, split: str) -> dict:
    """Sandbox side: one allocate() call per case of the split, all in one round trip."""
    variants = sim.make_variants(split)
    raws = fn.map([([list(b) for b in v.buffers], v.capacity) for v in variants])
    if not isinstance(raws, list) or len(raws) != len(variants):
        raise kit.Invalid(f"expected {len(variants)} answers, got {type(raws).__name__}")
    return {"offsets": _checked(variants, raws)}


def evaluate(program_path: str, split: str) -> dict:
    return kit.evaluate(program_path, split, "allocate", _allocate_all)


def _judge(outputs: object, split: str) -> dict:
    """Trusted side: re-check each answer and count the bytes served from fast memory."""
    variants = sim.make_variants(split)
    if not isinstance(outputs, dict) or not isinstance(outputs.get("offsets"), list):
        raise kit.Invalid("outputs must be a dict with an 'offsets' list")
    if len(outputs["offsets"]) != len(variants):
        raise kit.Invalid(
            f"expected {len(variants)} answers (one per case), got {len(outputs['offsets'])}"
        )
    checked = _checked(variants, outputs["offsets"])
    per_case: dict[str, float] = {}
    fractions, counts, full_fit, parts = [], [], 0, []
    for v, offsets in zip(variants, checked, strict=True):
        frac = sim.served_bytes(offsets, v.buffers) / v.total_bytes
        placed = sum(o is not None for o in offsets)
        fractions.append(frac)
        counts.append(placed / len(v.buffers))
        if v.name.endswith("/full") and placed == len(v.buffers):
            full_fit += 1
        per_case[f"served_{v.name.replace('/', '_')}"] = frac
        parts.append(
            f"{v.name} {frac:.4f} ({placed}/{len(v.buffers)} buffers, capacity {v.capacity})"
        )
    served = sum(fractions) / len(fractions)
    metrics = {
        "served_fraction": served,
        "buffers_placed": sum(counts) / len(counts),
        "full_cases_packed": float(full_fit),
        **per_case,
    }
    hint = (
        "served fraction (bytes in fast memory / all bytes) per case: "
        + "; ".join(parts)
        + ". At full capacity every buffer fits (MiniMalloc packs them all): 1.0 is reachable there."
    )
    return {"score": served, "metrics": metrics, "artifacts": {"hint": hint}}


def score(outputs: object, split: str) -> dict:
    return kit.score(outputs, split, _judge)


if __name__ == "__main__":
    raise SystemExit(kit.main(__name__, list(sim.SPLITS)))
