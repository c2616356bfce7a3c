"""Evaluator for the job-shop problem: a dispatching rule inside a fixed Giffler-Thompson generator.

Two halves with different trust. `evaluate()` runs inside the sandbox and calls
priority() in the candidate's own, confined process (the kit's proxy): the
candidate sees one schedulable operation's features per call (an `Op` record),
never this module, the instance or the operations to come. It only reports
which job was dispatched at each decision. `score()` runs on the trusted side,
never imports the candidate, reloads the instances and replays every decision
through the same generator: each reported job must be in the Giffler-Thompson
conflict set at that step, and the makespan is recomputed from the replay.

The instances, the generator and the replay are in jssp_sim.py (its docstring
describes the generator). Gap of an instance = 100 * (makespan - ref) / ref,
ref = the proven optimum, or the best known upper bound where none is proven; on
a run's private variants of the held-out instances (jssp_sim.make_instances), a
lower bound. A split's gap_pct is the mean over its instances; score = -gap_pct.
"""

from __future__ import annotations

import jssp_sim as sim  # the generator next to this file

from evaluators import kit

# How many decisions are replayed after scheduling to check that priority() is a pure function.
PURITY_SAMPLES = 32


def _check_purity(priority, samples: list) -> None:
    """Replay recorded conflict sets in reverse order, twice each, in one batch; a pure
    priority() picks the same operation."""
    replays = [s for s in reversed(samples) for _ in range(2)]
    raws = kit.proxy(priority).map([(op,) for ops, _ in replays for op in ops])
    at = 0
    for ops, pos in replays:
        values = [sim.as_priority(r) for r in raws[at : at + len(ops)]]
        at += len(ops)
        again = values.index(max(values))
        if again != pos:
            raise kit.Invalid(
                f"priority() chose job {ops[again].job} when replayed but job {ops[pos].job} "
                "during scheduling; it must be a pure function of its op: no global state or "
                "randomness"
            )


def _run(priority, split: str) -> tuple[dict, dict]:
    """Sandbox side: run the candidate's rule on every instance of the split."""
    instances = sim.make_instances(split)
    per_instance = max(1, PURITY_SAMPLES // len(instances))
    at = [(k, i) for k in range(len(instances)) for i in range(0, 6 * per_instance, 6)]
    sequences, samples = sim.schedule(priority, instances, at)
    _check_purity(priority, samples)
    ops = sum(i.n_jobs * i.n_machines for i in instances)
    return {"sequences": sequences}, {"instances": len(instances), "operations": ops}


def evaluate(program_path: str, split: str) -> dict:
    return kit.evaluate(program_path, split, "priority", _run)


def _judge(outputs: object, split: str) -> dict:
    """Trusted side: replay every instance's decisions and score the gaps."""
    instances = sim.make_instances(split)
    if not isinstance(outputs, dict) or not isinstance(outputs.get("sequences"), list):
        raise kit.Invalid("outputs must be a dict with a 'sequences' list")
    reported = outputs["sequences"]
    if len(reported) != len(instances):
        raise kit.Invalid(f"expected {len(instances)} instances, got {len(reported)}")
    gaps: dict[str, float] = {}
    groups: dict[str, list[float]] = {}
    for inst, seq in zip(instances, reported, strict=True):
        makespan = sim.replay(inst, seq)
        gap = 100.0 * (makespan - inst.ref) / inst.ref
        gaps[inst.name] = gap
        groups.setdefault(sim.family(inst.name), []).append(gap)
        if sim.family(inst.name) == "ta":
            groups.setdefault(f"ta_{inst.size}", []).append(gap)
    gap_pct = sum(gaps.values()) / len(gaps)
    metrics: dict[str, float] = {"gap_pct": gap_pct, "instances": len(gaps)}
    metrics.update({f"gap_pct_{g}": sum(v) / len(v) for g, v in groups.items()})
    metrics.update({f"gap_{name}": g for name, g in gaps.items()})
    worst = sorted(gaps.items(), key=lambda kv: -kv[1])[:3]
    per_family = ", ".join(
        f"{g} {sum(v) / len(v):.1f}%" for g, v in groups.items() if not g.startswith("ta_")
    )
    what = "gap to a lower bound" if sim.private_variant(split) else "optimality gap"
    hint = (
        f"Mean {what} {gap_pct:.2f}% over {len(gaps)} instances ({per_family}); "
        "worst: " + ", ".join(f"{n} {g:.1f}%" for n, g in worst) + ". On train FIFO is 21.8%, "
        "MWKR (the seed) 22.2%, MOPNR 22.5%, SPT 57.1%; the train instances' optima are known, "
        "so 0% is reachable only in principle (a dispatching rule builds one schedule)."
    )
    return {"score": -gap_pct, "metrics": metrics, "artifacts": {"hint": hint}}


def score(outputs: object, split: str) -> dict:
    return kit.score(outputs, split, _judge)


if __name__ == "__main__":
    raise SystemExit(kit.main(__name__, list(sim.SPLITS)))
