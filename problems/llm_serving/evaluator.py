"""Evaluator for llm_serving: batch scheduling on one continuous-batching LLM server.

Two halves with different trust. `evaluate()` runs inside the sandbox: it steps
the simulator (serving_sim.py) and, before every iteration, calls the
candidate's schedule(state) in the candidate's own confined process (the kit's
proxy); the scenarios of a split advance side by side, one round trip per
iteration. It validates each plan (for an early, precise error) and logs it.
`score()` runs in a clean process that never imports the candidate: it rebuilds
the scenarios from the data files and replays every logged plan through a fresh
simulator, re-validating each one, and computes the SLO metrics. A candidate
that patches the simulator or this module in memory changes nothing but its own
log; one that logs a plan the rules forbid is invalid.
"""

from __future__ import annotations

import numpy as np
import serving_sim as sim  # the simulator next to this file

from evaluators import kit

PERF_FILE = "perf_model.csv"
TRACES = {"code": "AzureLLMInferenceTrace_code.csv", "conv": "AzureLLMInferenceTrace_conv.csv"}
# The prediction noise, one draw per trace row: these public seeds, or a run's private one
# (kit.seed), since a candidate that replays the noise reads the true length off `predicted`.
SEEDS = {"code": 20231, "conv": 20232}
PREDICTION_SIGMA = 0.5  # log-normal noise of the output-length prediction

# split -> scenarios: (name, trace, window start s, window length s, load). A window is the
# requests whose trace time lies in [start, start + length); load L divides every
# inter-arrival gap by L (time compression: L x the trace's arrival rate).
SPLITS: dict[str, tuple[tuple[str, str, float, float, float], ...]] = {
    "quick": (("code_quick", "code", 1020.0, 60.0, 0.15),),  # the cascade's screen: 20 requests
    "train": (
        ("code_low", "code", 900.0, 180.0, 0.15),  # 319 requests over 1,200 s
        ("code_high", "code", 2100.0, 180.0, 0.2),  # 394 requests over 900 s
    ),
    "test": (
        ("conv_low", "conv", 900.0, 90.0, 0.5),  # 412 requests over 180 s
        ("conv_high", "conv", 1800.0, 90.0, 0.45),  # 719 requests over 200 s
    ),
}


class State:
    """What schedule() sees before one iteration (the candidate gets a plain copy).

    Per request in the system (arrived, unfinished), arrays in arrival order:
    rid, arrival (s), prompt, generated, cached, pending (tokens to process before
    its next output token: prompt for a new request, 1 while decoding, prompt +
    generated after a preemption), predicted (noisy prediction of the total output
    length), last_token (time of its latest output token, NaN before the first).
    Scalars: now (s), kv_capacity and kv_used (tokens), max_tokens, max_batch,
    slo_ttft_s, slo_tbt_s; memory is a dict kept across the iterations of one run.
    """

    __slots__ = (
        "now",
        "rid",
        "arrival",
        "prompt",
        "generated",
        "cached",
        "pending",
        "predicted",
        "last_token",
        "kv_capacity",
        "kv_used",
        "max_tokens",
        "max_batch",
        "slo_ttft_s",
        "slo_tbt_s",
        "memory",
    )
    fields = __slots__

    def __repr__(self) -> str:
        now, rid, kv = (getattr(self, k) for k in ("now", "rid", "kv_used"))
        return f"State(now={now!r}, requests={len(rid)}, kv_used={kv!r})"


def perf_model() -> sim.PerfModel:
    return sim.load_perf_model(kit.data_path(__file__, PERF_FILE))


def _trace(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    path = kit.data_path(__file__, TRACES[name])
    try:
        t, p, o = sim.load_trace(path)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{path}: data file missing (`evolve data fetch PROBLEM` downloads it)"
        ) from None
    except (KeyError, ValueError, IndexError) as e:
        raise ValueError(f"{path}: not an Azure LLM inference trace ({e})") from None
    return t, p, o, sim.predictions(o, kit.seed(SEEDS[name]), PREDICTION_SIGMA)


def make_scenarios(split: str) -> list[sim.Scenario]:
    """The split's scenarios, in a fixed order (see SPLITS)."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {list(SPLITS)}")
    traces: dict[str, tuple] = {}
    out = []
    for name, trace, start, length, load in SPLITS[split]:
        if trace not in traces:
            traces[trace] = _trace(trace)
        t, p, o, pred = traces[trace]
        sel = (t >= start) & (t < start + length)
        arrival = (t[sel] - start) / load
        out.append(sim.Scenario(name, arrival, p[sel], o[sel], pred[sel]))
    return out


def _state(server: sim.Server, memory: kit.Memory) -> State:
    st = State()
    values = {
        **server.state_arrays(),
        "now": server.now,
        "kv_capacity": server.sc.kv_capacity,
        "kv_used": server.kv_used,
        "max_tokens": sim.MAX_TOKENS,
        "max_batch": sim.MAX_BATCH,
        "slo_ttft_s": sim.SLO_TTFT_S,
        "slo_tbt_s": sim.SLO_TBT_S,
        "memory": memory,
    }
    for k, v in values.items():
        setattr(st, k, v)
    return st


def run_policy(schedule, scenarios: list[sim.Scenario], perf: sim.PerfModel) -> list[list[str]]:
    """Step every scenario to its end, calling schedule() before each iteration; the scenarios
    advance side by side (one batch of calls per iteration). Returns each one's plan log."""
    schedule = kit.proxy(schedule)
    servers = [sim.Server(sc, perf) for sc in scenarios]
    memories = [kit.Memory() for _ in scenarios]
    logs: list[list[str]] = [[] for _ in scenarios]
    while True:
        live = [k for k, s in enumerate(servers) if s.advance()]
        if not live:
            return logs
        plans = schedule.each([_state(servers[k], memories[k]) for k in live])
        for k, raw in zip(live, plans, strict=True):
            server = servers[k]
            try:
                logs[k].append(server.step(raw))
            except sim.Invalid as e:
                raise kit.Invalid(
                    f"scenario {scenarios[k].name}, iteration {len(logs[k])} (t={server.now:.3f} s): {e}"
                ) from None


def _run(schedule, split: str) -> tuple[dict, dict]:
    """Sandbox side: the plan logs of every scenario of the split."""
    scenarios = make_scenarios(split)
    logs = run_policy(schedule, scenarios, perf_model())
    return {"plans": logs}, {
        "scenarios": len(scenarios),
        "iterations": sum(map(len, logs)),
    }


def evaluate(program_path: str, split: str) -> dict:
    return kit.evaluate(program_path, split, "schedule", _run)


def _pct(x: np.ndarray, q: float) -> float:
    return float(np.percentile(x, q)) if len(x) else 0.0


def summarize(results: list[dict], names: list[str]) -> tuple[dict, str]:
    """Metrics over all the requests of the scenarios pooled; per-scenario attainment too."""
    met = np.concatenate([r["met"] for r in results])
    ttft = np.concatenate([r["ttft"] for r in results])
    gaps = np.concatenate([r["gaps"] for r in results])
    max_gap = np.concatenate([r["max_gap"] for r in results])
    done = np.concatenate([r["done"] for r in results])
    n = len(met)
    metrics: dict[str, float] = {
        "slo_attainment": float(met.mean()) if n else 0.0,
        "ttft_ok": float((ttft <= sim.SLO_TTFT_S + 1e-9).mean()) if n else 0.0,
        "tbt_ok": float((max_gap <= sim.SLO_TBT_S + 1e-9).mean()) if n else 0.0,
        "finished": float(done.mean()) if n else 0.0,
        "ttft_p50_s": _pct(ttft, 50),
        "ttft_p99_s": _pct(ttft, 99),
        "tbt_p99_s": _pct(gaps, 99),
        "throughput_tok_s": float(np.mean([r["tokens"] / r["duration"] for r in results])),
        "goodput_req_s": float(np.mean([r["met"].sum() / r["duration"] for r in results])),
        "preemptions": float(sum(r["preemptions"] for r in results)),
        "iterations": float(sum(r["iterations"] for r in results)),
        "requests": float(n),
    }
    parts = []
    for name, r in zip(names, results, strict=True):
        if not len(r["met"]):
            continue
        metrics[f"slo_attainment_{name}"] = float(r["met"].mean())
        parts.append(
            f"{name}: {int(r['met'].sum())}/{len(r['met'])} meet both SLOs "
            f"(TTFT ok {float((r['ttft'] <= sim.SLO_TTFT_S + 1e-9).mean()):.2f}, "
            f"TBT ok {float((r['max_gap'] <= sim.SLO_TBT_S + 1e-9).mean()):.2f}, "
            f"{r['preemptions']} preemptions, busy {100 * r['busy_s'] / r['duration']:.0f}%)"
        )
    hint = (
        "; ".join(parts)
        + f". SLOs: TTFT <= {sim.SLO_TTFT_S:g} s and every gap between output tokens <= "
        f"{sim.SLO_TBT_S:g} s. A long prefill in an iteration stalls every decoding request in it "
        "(Sarathi-Serve's chunked prefill bounds that); a queue of long prompts delays short ones."
    )
    return metrics, hint


def _judge(outputs: object, split: str) -> dict:
    """Trusted side: replay every plan log through a fresh simulator and score it."""
    scenarios = make_scenarios(split)
    logs = outputs.get("plans") if isinstance(outputs, dict) else None
    if not isinstance(logs, list) or len(logs) != len(scenarios):
        raise kit.Invalid(f"outputs must be a dict with a 'plans' list of {len(scenarios)} logs")
    perf = perf_model()
    results = []
    for sc, log in zip(scenarios, logs, strict=True):
        if not isinstance(log, list):
            raise kit.Invalid(f"scenario {sc.name}: its plan log must be a list")
        try:
            results.append(sim.replay(sc, perf, log).results())
        except sim.Invalid as e:
            raise kit.Invalid(str(e)) from None
    metrics, hint = summarize(results, [sc.name for sc in scenarios])
    return {"score": metrics["slo_attainment"], "metrics": metrics, "artifacts": {"hint": hint}}


def score(outputs: object, split: str) -> dict:
    return kit.score(outputs, split, _judge)


if __name__ == "__main__":
    raise SystemExit(kit.main(__name__, SPLITS))
