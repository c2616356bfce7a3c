"""Evaluator for SoC scheduling (DS3 applications streaming onto a 16-PE SoC; mean job latency).

Two halves with different trust. `evaluate()` runs inside the sandbox: it steps every
scenario of the split through the simulator side by side, calling the candidate's
schedule(state) once per epoch of each live scenario (one round trip per step for all of
them), and logs the checked decisions. `score()` runs in a clean process that never imports
the candidate: it regenerates the arrivals, replays every log in a fresh simulator (which
re-checks each decision) and computes the latencies, so a candidate that patches this
module or the simulator in memory gains nothing.
"""

from __future__ import annotations

import soc_sim as sim  # the simulator next to this file

from evaluators import kit


def _setup(split: str):
    scenarios = sim.scenarios(split)
    apps = sim.load_apps(sorted({a for sc in scenarios for a in sc.mix}))
    return scenarios, sim.load_soc(), apps


def run_policy(schedule, split: str) -> tuple[dict, dict]:
    """Sandbox side: every scenario to its end; returns each one's decision log."""
    schedule = kit.proxy(schedule)
    scenarios, soc, apps = _setup(split)
    sims = [sim.Sim(soc, {a: apps[a] for a in sc.mix}, sim.arrivals(sc)) for sc in scenarios]
    memories = [kit.Memory() for _ in scenarios]
    logs: list[list] = [[] for _ in scenarios]
    while True:
        live = [k for k, s in enumerate(sims) if s.advance()]
        if not live:
            break
        states = []
        for k in live:
            st = sims[k].state()
            st["memory"] = memories[k]
            if not logs[k]:  # the first epoch carries the static tables
                st["platform"] = sim.platform_arg(soc)
                st["apps"] = sim.apps_arg({a: apps[a] for a in scenarios[k].mix})
            states.append(st)
        for k, raw in zip(live, schedule.each(states), strict=True):
            try:
                logs[k].append(sims[k].apply(raw))
            except kit.Invalid as e:
                raise kit.Invalid(
                    f"scenario {scenarios[k].name}, epoch {len(logs[k])} (t={sims[k].now} us): {e}"
                ) from None
    return {"logs": logs}, {"scenarios": len(scenarios), "epochs": sum(map(len, logs))}


def evaluate(program_path: str, split: str) -> dict:
    return kit.evaluate(program_path, split, "schedule", run_policy)


def _judge(outputs: object, split: str) -> dict:
    """Trusted side: replay every log and score the mean job latency."""
    scenarios, soc, apps = _setup(split)
    logs = outputs.get("logs") if isinstance(outputs, dict) else None
    if not isinstance(logs, list) or len(logs) != len(scenarios):
        raise kit.Invalid(
            f"outputs must be a dict with a 'logs' list of {len(scenarios)} decision logs"
        )
    metrics: dict[str, float] = {}
    means, parts = [], []
    for sc, log in zip(scenarios, logs, strict=True):
        if not isinstance(log, list):
            raise kit.Invalid(f"scenario {sc.name}: its decision log must be a list")
        res = sim.replay(soc, {a: apps[a] for a in sc.mix}, sim.arrivals(sc), log, sc.name)
        lat = res["latency"]
        mean = sum(lat) / len(lat)
        means.append(mean)
        metrics[f"latency_us_{sc.name}"] = mean
        apps_part = ", ".join(
            f"{a} {sum(x) / len(x):.0f}" for a, x in sorted(res["per_app"].items())
        )
        parts.append(f"{sc.name}: mean {mean:.1f} us, max {max(lat)} us ({apps_part})")
    latency = sum(means) / len(means)
    metrics = {"latency_us": latency, **metrics}
    hint = (
        "; ".join(parts)
        + ". Mean job latency (us) per scenario (name@rate in jobs/ms); the score is "
        "minus their mean. Transfers into an FFT accelerator are slow (bandwidth 10 vs 1000)."
    )
    return {"score": -latency, "metrics": metrics, "artifacts": {"hint": hint}}


def score(outputs: object, split: str) -> dict:
    return kit.score(outputs, split, _judge)


if __name__ == "__main__":
    raise SystemExit(kit.main(__name__, list(sim.SPLITS)))
