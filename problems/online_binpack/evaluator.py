"""Evaluator for online bin packing in FunSearch's Weibull setup.

Two halves with different trust. `evaluate()` runs inside the sandbox and
calls priority() in the candidate's own, confined process (the kit's proxy):
the candidate sees one item and the feasible bins per call, never this
module, its frames or the instances to come. It only reports where each item
went. `score()` runs on the trusted side, never imports the candidate,
regenerates the instances and re-checks every placement.
"""

from __future__ import annotations

import numpy as np

from evaluators import kit

CAPACITY = 100
WEIBULL_SHAPE = 3.0
WEIBULL_SCALE = 45.0

# split -> (seed, instances, items per instance). "test" is held out: its own
# seed and FunSearch's "Weibull 5k" size.
SPLITS: dict[str, tuple[int, int, int]] = {
    "quick": (1001, 1, 200),
    "train": (2002, 5, 1_000),
    "test": (3003, 5, 5_000),
}

# How many (item, bins) states are replayed after packing to check that
# priority() is a pure function; a stateful candidate could otherwise count
# calls and peek at the (deterministic) item sequence.
PURITY_SAMPLES = 32


def make_instances(split: str) -> list[np.ndarray]:
    """Item sizes per instance: Weibull(shape 3) * 45, clipped to [1, 100], rounded to int."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {sorted(SPLITS)}")
    seed, n_instances, n_items = SPLITS[split]
    rng = np.random.default_rng(seed)
    instances = []
    for _ in range(n_instances):
        raw = rng.weibull(WEIBULL_SHAPE, n_items) * WEIBULL_SCALE
        instances.append(np.round(np.clip(raw, 1, CAPACITY)).astype(np.int64))
    return instances


def _as_priorities(raw: object, k: int) -> np.ndarray:
    """Validate one priority() return: k finite real numbers."""
    try:
        arr = np.asarray(raw)
    except (TypeError, ValueError) as e:
        raise kit.Invalid(f"priority() returned {type(raw).__name__}, not an array: {e}") from None
    if arr.dtype.kind not in "biuf":
        raise kit.Invalid(f"priority() must return real numbers, got dtype {arr.dtype}")
    if arr.shape != (k,):
        raise kit.Invalid(
            f"priority() returned shape {arr.shape}; expected ({k},), one entry per feasible bin"
        )
    if not np.isfinite(arr).all():
        raise kit.Invalid("priority() returned NaN or infinity; every priority must be finite")
    return arr


def pack(priority, instances: list[np.ndarray], sample_at=()) -> tuple[list[list[int]], list[tuple]]:
    """Place each instance's items online into its own pool of len(items) bins of CAPACITY.

    `priority` is the kit's proxy to the candidate. The instances advance side
    by side: the i-th items of all of them go to priority() in one batch (one
    round trip to the candidate's process), in instance order; they are drawn
    independently, so a batch says nothing about any instance's later items.
    Returns the bin index per item of each instance and, for each (instance,
    position) in `sample_at`, the (item, feasible capacities, chosen position)
    state for the purity replay.
    """
    priority = kit.proxy(priority)
    pools = [np.full(len(items), float(CAPACITY)) for items in instances]
    sizes = [items.tolist() for items in instances]
    sample_at = set(sample_at)
    assignments: list[list[int]] = [[] for _ in instances]
    samples = []
    for i in range(max(map(len, sizes), default=0)):
        live = [k for k in range(len(sizes)) if i < len(sizes[k])]
        calls, feasibles = [], []
        for k in live:
            item = float(sizes[k][i])
            feasible = np.flatnonzero(pools[k] >= item)
            feasibles.append(feasible)
            calls.append((item, pools[k][feasible]))  # a copy: the candidate cannot touch the real bins
        saved = {k: view.copy() for k, (_, view) in zip(live, calls, strict=True) if (k, i) in sample_at}
        for k, (item, _), feasible, raw in zip(live, calls, feasibles, priority.map(calls), strict=True):
            try:
                pos = int(np.argmax(_as_priorities(raw, len(feasible))))
            except kit.Invalid as e:
                raise kit.Invalid(
                    f"instance {k}, item {i} (size {sizes[k][i]}, {len(feasible)} feasible bins): {e}"
                ) from None
            if k in saved:
                samples.append((item, saved[k], pos))
            chosen = int(feasible[pos])
            pools[k][chosen] -= item
            assignments[k].append(chosen)
    return assignments, samples


def _check_purity(priority, samples: list[tuple]) -> None:
    """Replay recorded states in reverse order, twice each, in one batch; a pure priority()
    picks the same bin."""
    replays = [s for s in reversed(samples) for _ in range(2)]
    raws = kit.proxy(priority).map([(item, saved.copy()) for item, saved, _ in replays])
    for (item, saved, pos), raw in zip(replays, raws, strict=True):
        again = int(np.argmax(_as_priorities(raw, len(saved))))
        if again != pos:
            raise kit.Invalid(
                f"priority({item:g}, bins) chose position {again} when replayed but {pos} during "
                "packing; it must be a pure function of (item, bins): no global state or randomness"
            )


def _pack_all(priority, split: str) -> tuple[dict, dict]:
    """Sandbox side: run the candidate online on the split's instances."""
    instances = make_instances(split)
    per_instance = max(1, PURITY_SAMPLES // len(instances))
    at = [(k, i) for k, items in enumerate(instances)
          for i in np.linspace(0, len(items) - 1, per_instance).astype(int).tolist()]
    assignments, samples = pack(priority, instances, at)
    _check_purity(priority, samples)
    n_items = sum(len(items) for items in instances)
    return {"assignments": assignments}, {"instances": len(instances), "items": n_items}


def evaluate(program_path: str, split: str) -> dict:
    return kit.evaluate(program_path, split, "priority", _pack_all)


def _parse_assignments(outputs: object, instances: list[np.ndarray]) -> list[np.ndarray]:
    """Turn reported outputs into one int array per instance, or raise kit.Invalid."""
    if not isinstance(outputs, dict) or not isinstance(outputs.get("assignments"), list):
        raise kit.Invalid("outputs must be a dict with an 'assignments' list")
    reported = outputs["assignments"]
    if len(reported) != len(instances):
        raise kit.Invalid(f"expected {len(instances)} instances, got {len(reported)}")
    parsed = []
    for k, (items, a) in enumerate(zip(instances, reported, strict=True)):
        if not isinstance(a, list) or len(a) != len(items):
            raise kit.Invalid(f"instance {k}: expected a list of {len(items)} bin indices")
        if not all(type(x) is int for x in a):
            raise kit.Invalid(f"instance {k}: bin indices must be integers")
        if a and (min(a) < 0 or max(a) >= len(items)):
            raise kit.Invalid(f"instance {k}: bin index outside the pool [0, {len(items)})")
        parsed.append(np.asarray(a, dtype=np.int64))
    return parsed


def _judge(outputs: object, split: str) -> dict:
    """Trusted side: re-check the packing and score it; never imports the candidate."""
    instances = make_instances(split)
    assignments = _parse_assignments(outputs, instances)
    loads = []
    for k, (items, a) in enumerate(zip(instances, assignments, strict=True)):
        load = np.bincount(a, weights=items, minlength=len(items))
        if (load > CAPACITY).any():
            j = int(np.argmax(load))
            raise kit.Invalid(f"instance {k}: bin {j} holds {load[j]:g} > capacity {CAPACITY}")
        loads.append(load[load > 0])

    used = [len(load) for load in loads]
    bounds = [-(-int(items.sum()) // CAPACITY) for items in instances]  # L1 = ceil(sum / C)
    excess = float(np.mean([100.0 * (u - lb) / lb for u, lb in zip(used, bounds, strict=True)]))
    free = np.concatenate([CAPACITY - load for load in loads])
    slack = int((free >= 10).sum())
    hint = (
        f"{excess:.2f}% more bins than the L1 lower bound ({sum(used)} used vs {sum(bounds)}); "
        f"{slack} of {sum(used)} used bins were left with >= 10 units free "
        f"({int(free.sum())} units wasted in all). On 5,000-item instances first fit is ~4.2%, "
        "best fit ~4.0% and FunSearch reached 0.68%; shorter sequences show more excess."
    )
    return {
        "score": -excess,
        "metrics": {"excess_pct": excess, "bins_used": sum(used), "lower_bound": sum(bounds)},
        "artifacts": {"hint": hint},
    }


def score(outputs: object, split: str) -> dict:
    return kit.score(outputs, split, _judge)


if __name__ == "__main__":
    raise SystemExit(kit.main(__name__, SPLITS))
