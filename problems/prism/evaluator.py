"""Evaluator for Prism model placement (minimise the worst GPU's KV-cache pressure).

Two halves with different trust. `evaluate()` runs inside the sandbox and calls
the program's `placement_names(gpu_num, models)` (the seed's fixed wrapper
around compute_model_placement) in the candidate's own, confined process once
per case; the models travel as records with the ADRS `Model` fields. It checks
each answer for an early, precise error and reports the placements as model
names per GPU. `score()` runs in a clean process that never imports the
candidate: it rebuilds the cases, re-checks every placement (GPU ids, every
model exactly once, at most 80 GB a GPU) and computes the KVPR itself
(prism_sim.py), so a candidate that patches this module or the simulator in
memory gains nothing.

score = 1 + 1 / mean over the split's cases of the worst GPU's KVPR: the ADRS
evaluator's combined_score (its success_rate is 1 for any valid candidate, since
one bad case fails the whole candidate here).
"""

from __future__ import annotations

import time

import prism_sim as sim  # the simulator next to this file

from evaluators import kit


class Model:
    """What the candidate receives per model: the ADRS evaluator's Model fields."""

    __slots__ = ("model_name", "model_size", "req_rate", "slo", "cur_gpu_id")
    fields = __slots__

    def __init__(self, model_name: str, model_size: int, req_rate: int, slo: int, cur_gpu_id: int):
        self.model_name, self.model_size, self.req_rate = model_name, model_size, req_rate
        self.slo, self.cur_gpu_id = slo, cur_gpu_id


def _models(case: sim.Case) -> list[Model]:
    rows = zip(case.names, case.sizes, case.rates, case.slos, strict=True)
    return [Model(n, m, r, s, j) for j, (n, m, r, s) in enumerate(rows)]


def _as_pairs(case: sim.Case, groups: list[list[int]]) -> list:
    """A checked placement as JSON-able [gpu_id, [model names]] pairs (JSON keys are strings)."""
    return [[g, [case.names[i] for i in members]] for g, members in enumerate(groups)]


def _run(place, split: str) -> tuple[dict, dict]:
    """Sandbox side: one placement per case, checked here for an early, precise error."""
    out, slowest = [], (0.0, "")
    for label, case in sim.make_cases(split):
        t = time.perf_counter()
        raw = place(case.gpu_num, _models(case))
        slowest = max(slowest, (time.perf_counter() - t, label))
        try:
            out.append(_as_pairs(case, sim.check_placement(case, raw)))
        except kit.Invalid as e:
            raise kit.Invalid(
                f"case {label} ({case.gpu_num} GPUs, {len(case.names)} models): {e}"
            ) from None
    return {"placements": out}, {"slowest_case": f"{slowest[1]}: {slowest[0]:.3f} s"}


def evaluate(program_path: str, split: str) -> dict:
    return kit.evaluate(program_path, split, "placement_names", _run)


def _placement(raw: object) -> dict:
    """[gpu_id, [names]] pairs back into a dict; a repeated GPU id is a broken output."""
    if not isinstance(raw, list) or not all(isinstance(p, list) and len(p) == 2 for p in raw):
        raise kit.Invalid("a placement must be a list of [gpu_id, [model names]] pairs")
    out: dict = {}
    for gpu, names in raw:
        if not isinstance(gpu, int) or isinstance(gpu, bool) or gpu in out:
            raise kit.Invalid(f"GPU id {gpu!r:.40} is not an int or appears twice")
        out[gpu] = names
    return out


def _judge(outputs: object, split: str) -> dict:
    """Trusted side: re-check every placement and compute its worst KVPR."""
    cases = sim.make_cases(split)
    if not isinstance(outputs, dict) or not isinstance(outputs.get("placements"), list):
        raise kit.Invalid("outputs must be a dict with a 'placements' list")
    if len(outputs["placements"]) != len(cases):
        raise kit.Invalid(
            f"expected {len(cases)} placements (one per case), got {len(outputs['placements'])}"
        )
    worst, bounds, families = [], [], {}
    for (label, case), raw in zip(cases, outputs["placements"], strict=True):
        try:
            groups = sim.check_placement(case, _placement(raw))
        except kit.Invalid as e:
            raise kit.Invalid(f"case {label}: {e}") from None
        worst.append(sim.max_kvpr(case, groups))
        bounds.append(sim.lower_bound(case))
        families.setdefault(label.rsplit("_", 1)[0], []).append(worst[-1])
    mean = sum(worst) / len(worst)
    bound = sum(bounds) / len(bounds)
    metrics = {
        "combined_score": 1.0 + 1.0 / mean,
        "inv_mean_max_kvpr": 1.0 / mean,  # ADRS's "max_kvpr" field
        "mean_max_kvpr": mean,
        "mean_lower_bound": bound,
        "gap_pct": 100.0 * (mean - bound) / bound,
        "full_gpu_cases": sum(w >= sim.FULL_KVPR for w in worst),
        **{f"mean_max_kvpr_{f}": sum(v) / len(v) for f, v in families.items()},
    }
    hint = (
        f"mean worst-GPU KVPR {mean:.5f} over {len(worst)} cases (lower bound {bound:.5f}, gap "
        f"{metrics['gap_pct']:.1f}%); score = 1 + 1/mean = {metrics['combined_score']:.4f}. "
        f"{metrics['full_gpu_cases']} cases have a GPU filled to exactly 80 GB (KVPR counted as 1e6)."
    )
    return {"score": metrics["combined_score"], "metrics": metrics, "artifacts": {"hint": hint}}


def score(outputs: object, split: str) -> dict:
    return kit.score(outputs, split, _judge)


if __name__ == "__main__":
    raise SystemExit(kit.main(__name__, sim.SPLITS))
