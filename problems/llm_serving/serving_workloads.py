"""The llm_serving benchmark, shared by the problems on its simulator (trusted code).

What a serving problem's evaluator needs besides its policy's API: the splits (trace
windows and loads), the traces with their output-length predictions, the private
variants a run's data seed draws (windows: `private_starts`, output lengths:
`private_lengths`), the state a policy sees, the run loop that calls the policy before
every iteration, the trusted replay of the logs and the SLO metrics. llm_serving's
evaluator uses it as it is; llm_serving_modular's (problem.toml `include`) with a
server that lets the policy choose its preemptions. Data paths are the calling
evaluator's (`evaluator_file`), so a problem reads its own data/ copy.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from evaluators import kit

sim = kit.include(__file__, "serving_sim.py")

PERF_FILE = "perf_model.csv"
TRACES = {"code": "AzureLLMInferenceTrace_code.csv", "conv": "AzureLLMInferenceTrace_conv.csv"}
# The prediction noise, one draw per trace row: these public seeds, or a run's private one
# (kit.seed), since a candidate that replays the noise reads the true length off `predicted`.
SEEDS = {"code": 20231, "conv": 20232}
PREDICTION_SIGMA = 0.5  # log-normal noise of the output-length prediction
# A run draws its train and test windows' starts under its private seed too (private_starts):
# the public windows below are in this file, and the traces are public, true output lengths
# included. `quick` keeps its window: it only screens (FCFS must pass it, whatever the seed),
# and knowing its requests wins nothing but a train evaluation on private windows.
WINDOW_SEED = 20233  # the public part of the windows' seed (kit.seed mixes in the run's)
WINDOW_BAND = (0.8, 1.25)  # a drawn window holds this many times the published one's requests
PUBLIC_WINDOWS = ("quick",)  # the splits whose windows stay public under a run's seed

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


def perf_model(evaluator_file: str) -> sim.PerfModel:
    return sim.load_perf_model(kit.data_path(evaluator_file, PERF_FILE))


def read_trace(
    evaluator_file: str, name: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A trace's arrivals, prompt and output lengths, with its output-length predictions."""
    path = kit.data_path(evaluator_file, TRACES[name])
    try:
        t, p, o = sim.load_trace(path)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{path}: data file missing (`evolve data fetch PROBLEM` downloads it)"
        ) from None
    except (KeyError, ValueError, IndexError) as e:
        raise ValueError(f"{path}: not an Azure LLM inference trace ({e})") from None
    return t, p, o, sim.predictions(o, kit.seed(SEEDS[name]), PREDICTION_SIGMA)


def _window(t: np.ndarray, start: float, length: float) -> np.ndarray:
    return (t >= start) & (t < start + length)


def private_starts(split: str, times: dict[str, np.ndarray]) -> dict[str, float]:
    """Each scenario's window start under the run's private data seed: a whole second, drawn
    uniformly among the starts whose window holds WINDOW_BAND times the published window's
    requests (as busy, so its load means the same) and overlaps no published window of its
    trace (public answers) nor the split's other windows (no scenario shows another's
    requests); where none does, among those closest in count."""
    taken: dict[str, list[tuple[float, float]]] = {}
    for scenarios in SPLITS.values():
        for _, trace, start, length, _ in scenarios:
            taken.setdefault(trace, []).append((start, start + length))
    out = {}
    for name, trace, start, length, _ in SPLITS[split]:
        t = times[trace]
        grid = np.arange(0.0, max(1.0, float(t[-1]) - length), 1.0)  # candidate starts, 1 s apart
        counts = np.searchsorted(t, grid + length) - np.searchsorted(t, grid)
        target = int(_window(t, start, length).sum())
        free = np.ones(len(grid), dtype=bool)
        for a, b in taken[trace]:  # [g, g + length) may not meet [a, b)
            free &= (grid + length <= a) | (grid >= b)
        low, high = WINDOW_BAND
        ok = free & (counts >= low * target) & (counts <= high * target)
        if not ok.any():
            far = np.abs(np.log((counts + 1.0) / (target + 1.0)))
            ok = free & (far <= far[free].min())
        rng = np.random.default_rng(kit.seed(WINDOW_SEED, split, name))
        at = float(rng.choice(grid[ok]))
        taken[trace].append((at, at + length))
        out[name] = at
    return out


LENGTH_SEED = 20234  # the public part of the private output lengths' seed (kit.seed)
LENGTH_BIN = 50  # rows of similar prompt length whose output lengths a run shuffles


def private_lengths(
    trace: str, t: np.ndarray, p: np.ndarray, o: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The trace with its output lengths shuffled under the run's private seed among rows of
    similar prompt length (consecutive LENGTH_BIN rows in prompt order), then predicted
    with the private noise: the marginal of each length and their joint by prompt size stay
    the trace's, but a candidate carrying the public trace can no longer look a request's
    true output length up (it learns only the ~50 lengths it was drawn from)."""
    rng = np.random.default_rng(kit.seed(LENGTH_SEED, trace))
    by_prompt = np.argsort(p, kind="stable")
    out = o.copy()
    for lo in range(0, len(o), LENGTH_BIN):
        rows = by_prompt[lo : lo + LENGTH_BIN]
        out[rows] = o[rng.permutation(rows)]
    return t, p, out, sim.predictions(out, kit.seed(SEEDS[trace]), PREDICTION_SIGMA)


def make_scenarios(evaluator_file: str, split: str) -> list[sim.Scenario]:
    """The split's scenarios, in a fixed order (see SPLITS); under a run's private data seed,
    train's and test's on windows drawn under that seed (`private_starts`), with output
    lengths shuffled under it (`private_lengths`)."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {list(SPLITS)}")
    traces: dict[str, tuple] = {}
    for _, name, *_ in SPLITS[split]:
        if name not in traces:
            traces[name] = read_trace(evaluator_file, name)
    starts = {name: start for name, _, start, _, _ in SPLITS[split]}
    if kit.private_data() and split not in PUBLIC_WINDOWS:
        starts = private_starts(split, {k: v[0] for k, v in traces.items()})
        traces = {k: private_lengths(k, *v[:3]) for k, v in traces.items()}
    out = []
    for name, which, _, length, load in SPLITS[split]:
        t, p, o, pred = traces[which]
        start = starts[name]
        sel = _window(t, start, length)
        arrival = (t[sel] - start) / load
        out.append(sim.Scenario(name, arrival, p[sel], o[sel], pred[sel]))
    return out


def state(server: sim.Server, memory: kit.Memory) -> State:
    """What the policy sees of `server` before its next iteration."""
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


def run_policy(
    schedule, scenarios: list[sim.Scenario], perf: sim.PerfModel, server: Callable = sim.Server
) -> list[list[str]]:
    """Step every scenario to its end, calling schedule() before each iteration; the scenarios
    advance side by side (one batch of calls per iteration). Returns each one's log (what
    `server(scenario, perf).step` logs)."""
    schedule = kit.proxy(schedule)
    servers = [server(sc, perf) for sc in scenarios]
    memories = [kit.Memory() for _ in scenarios]
    logs: list[list[str]] = [[] for _ in scenarios]
    while True:
        live = [k for k, s in enumerate(servers) if s.advance()]
        if not live:
            return logs
        plans = schedule.each([state(servers[k], memories[k]) for k in live])
        for k, raw in zip(live, plans, strict=True):
            at = servers[k]
            try:
                logs[k].append(at.step(raw))
            except sim.Invalid as e:
                raise kit.Invalid(
                    f"scenario {scenarios[k].name}, iteration {len(logs[k])} (t={at.now:.3f} s): {e}"
                ) from None


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


def judge(
    outputs: object,
    scenarios: list[sim.Scenario],
    perf: sim.PerfModel,
    replay: Callable = sim.replay,
) -> dict:
    """Trusted side: replay every log through a fresh simulator (`replay(scenario, perf, log)`
    returns the server at the run's end) and score it."""
    logs = outputs.get("plans") if isinstance(outputs, dict) else None
    if not isinstance(logs, list) or len(logs) != len(scenarios):
        raise kit.Invalid(f"outputs must be a dict with a 'plans' list of {len(scenarios)} logs")
    results = []
    for sc, log in zip(scenarios, logs, strict=True):
        if not isinstance(log, list):
            raise kit.Invalid(f"scenario {sc.name}: its plan log must be a list")
        try:
            results.append(replay(sc, perf, log).results())
        except sim.Invalid as e:
            raise kit.Invalid(str(e)) from None
    metrics, hint = summarize(results, [sc.name for sc in scenarios])
    return {"score": metrics["slo_attainment"], "metrics": metrics, "artifacts": {"hint": hint}}
