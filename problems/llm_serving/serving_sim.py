"""A discrete-event model of one continuous-batching LLM inference server (trusted code).

One server (Llama2-70B, 8 x A100-80GB, tensor parallel 8) runs one iteration
(one forward pass) at a time. Each iteration processes a plan chosen by the
policy: for some requests in the system, a number of their pending tokens.

Request bookkeeping (all in tokens):
  prompt     the prompt length (the trace's ContextTokens)
  output     the true output length (GeneratedTokens), never shown to the policy
  generated  output tokens emitted so far
  cached     tokens whose KV is held in the cache
  pending    prompt + generated - cached: what must be processed before the next output
             token; prompt for a new request, 1 for a request that is decoding

A plan entry (rid, c) processes c of the request's pending tokens, 1 <= c <= pending
(c < pending is a prefill chunk). When c == pending the iteration ends with one new
output token (the first one ends the prefill: TTFT; later ones are decode steps: TBT).
A request that has emitted `output` tokens finishes and frees its KV.

Iteration time, from splitwise-sim's measured perf model (perf_model.csv, rows
llama2-70b / a100-80gb / tensor_parallel 8 / token_size 128, median of the repeats):
  T(n, b) = max(D(b), P(n)) milliseconds, n = tokens in the plan, b = requests in it,
  P(n) = prefill time of n tokens: piecewise linear in n through (0, 0) and the measured
         points keyed by prompt_size x batch_size (the mean where two rows give the same n),
  D(b) = decode-step time at batch size b (the prompt_size 512 rows), piecewise linear,
         extended linearly beyond b = 64 with the last segment's slope.
A pass is bound by the larger of its memory time (weights and KV read once, measured as a
decode step of that batch) and its compute time (the measured prefill of that many tokens).

KV memory: sum(cached) <= KV_CAPACITY after every iteration. A plan that needs more (the
tokens it adds) is made to fit by recompute preemption, vLLM's rule extended to plans:
first the resident requests the plan does not run lose their KV, latest arrival first;
if that is not enough, requests in the plan lose their KV and their entry, latest arrival
first. A preempted request keeps its generated tokens; its cached drops to 0, so its
pending becomes prompt + generated (recomputed by prefill; no swap).

An empty plan idles the server until the next arrival (or ends the run if none is left).
A run ends when every request has finished or the clock passes the last arrival plus
DRAIN_S; requests unfinished then miss their SLOs.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterable

import numpy as np

MODEL, HARDWARE, TP, TOKEN_SIZE = "llama2-70b", "a100-80gb", "8", "128"
KV_CAPACITY = 131_072  # tokens of KV cache (40 GiB at Llama2-70B's 320 KiB per token)
MAX_TOKENS = 16_384  # tokens one iteration may process (the measured range of P)
MAX_BATCH = 256  # requests one iteration may run (vLLM's default max_num_seqs)
SLO_TTFT_S = 2.0  # time to first token
SLO_TBT_S = 0.2  # every gap between two consecutive output tokens
DRAIN_S = 60.0  # simulated seconds after the last arrival before the run stops


class Invalid(ValueError):
    """A plan broke a rule; the evaluator turns it into kit.Invalid."""


class PerfModel:
    """Iteration times (seconds) by tokens and batch size, from the perf-model CSV."""

    def __init__(self, prefill: list[tuple[float, float]], decode: list[tuple[float, float]]):
        self.p_x = np.array([0.0] + [n for n, _ in prefill])
        self.p_y = np.array([0.0] + [t for _, t in prefill]) / 1000.0
        self.d_x = np.array([b for b, _ in decode])
        self.d_y = np.array([t for _, t in decode]) / 1000.0
        self.d_slope = (self.d_y[-1] - self.d_y[-2]) / (self.d_x[-1] - self.d_x[-2])
        self._cache: dict[tuple[int, int], float] = {}

    def prefill_s(self, n: float) -> float:
        return float(np.interp(n, self.p_x, self.p_y))

    def decode_s(self, b: float) -> float:
        if b > self.d_x[-1]:
            return float(self.d_y[-1] + self.d_slope * (b - self.d_x[-1]))
        return float(np.interp(b, self.d_x, self.d_y))

    def iteration_s(self, n: int, b: int) -> float:
        key = (n, b)
        t = self._cache.get(key)
        if t is None:
            t = self._cache[key] = max(self.decode_s(b), self.prefill_s(n))
        return t


def load_perf_model(path: str) -> PerfModel:
    """The rows this model uses (see the module doc), median per (prompt_size, batch_size)."""
    groups: dict[tuple[int, int], list[tuple[float, float]]] = {}
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if (row["model"], row["hardware"], row["tensor_parallel"], row["token_size"]) != (
                MODEL,
                HARDWARE,
                TP,
                TOKEN_SIZE,
            ):
                continue
            key = (int(row["prompt_size"]), int(row["batch_size"]))
            groups.setdefault(key, []).append((float(row["prompt_time"]), float(row["token_time"])))
    if not groups:
        raise ValueError(f"{path}: no {MODEL}/{HARDWARE}/TP{TP} rows")
    by_tokens: dict[int, list[float]] = {}
    decode = []
    for (p, b), runs in sorted(groups.items()):
        by_tokens.setdefault(p * b, []).append(float(np.median([r[0] for r in runs])))
        if p == 512:
            decode.append((float(b), float(np.median([r[1] for r in runs]))))
    prefill = [(float(n), float(np.mean(ts))) for n, ts in sorted(by_tokens.items())]
    return PerfModel(prefill, decode)


def load_trace(path: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(arrival seconds since the first request, prompt tokens, output tokens), file order.

    Rows are `YYYY-MM-DD hh:mm:ss.fffffff,ContextTokens,GeneratedTokens` (one day)."""
    with open(path, encoding="utf-8") as f:
        header = f.readline().strip()
        if header != "TIMESTAMP,ContextTokens,GeneratedTokens":
            raise ValueError(f"unexpected header {header[:80]!r}")
        times, prompts, outputs = [], [], []
        for line in f:
            ts, ctx, gen = line.split(",")
            hh, mm, ss = ts[11:].split(":")
            times.append(int(hh) * 3600 + int(mm) * 60 + float(ss))
            prompts.append(int(ctx))
            outputs.append(int(gen))
    if not times:
        raise ValueError("no requests")
    t = np.array(times)
    return t - t[0], np.array(prompts, dtype=np.int64), np.array(outputs, dtype=np.int64)


def predictions(outputs: np.ndarray, seed: int, sigma: float) -> np.ndarray:
    """Noisy output-length predictions: round(output x exp(sigma x z)), z ~ N(0, 1), at least 1;
    one draw per trace row from default_rng(seed), so a row's prediction never depends on the
    window."""
    z = np.random.default_rng(seed).standard_normal(len(outputs))
    return np.maximum(1, np.round(outputs * np.exp(sigma * z))).astype(np.int64)


class Scenario:
    """One run: requests (arrival order) with arrival times already scaled to the load."""

    def __init__(self, name, arrival, prompt, output, predicted, kv_capacity=KV_CAPACITY):
        self.name = name
        self.arrival = np.asarray(arrival, dtype=np.float64)
        self.prompt = np.asarray(prompt, dtype=np.int64)
        self.output = np.asarray(output, dtype=np.int64)
        self.predicted = np.asarray(predicted, dtype=np.int64)
        self.kv_capacity = int(kv_capacity)
        if len(self.arrival) and (np.diff(self.arrival) < 0).any():
            raise ValueError(f"{name}: arrivals out of order")
        if len(self.prompt) and int((self.prompt + self.output).max()) > self.kv_capacity:
            raise ValueError(f"{name}: a request needs more KV than the cache holds")

    def __len__(self) -> int:
        return len(self.arrival)


def parse_plan(raw: object, pending: dict[int, int]) -> list[tuple[int, int]]:
    """A policy's return as [(rid, tokens)], or Invalid saying what is wrong.

    Accepts a dict {rid: tokens} or a sequence of (rid, tokens) pairs; rids must be
    requests in the system, each at most once, 1 <= tokens <= its pending tokens, at most
    MAX_BATCH entries and MAX_TOKENS tokens in all."""
    if isinstance(raw, dict):
        items = list(raw.items())
    elif isinstance(raw, (list, tuple)):
        items = list(raw)
        for e in items:
            if not isinstance(e, (list, tuple)) or len(e) != 2:
                raise Invalid(f"plan entry {e!r:.60} is not a (request id, tokens) pair")
    else:
        raise Invalid(
            f"schedule() returned {type(raw).__name__}; expected a dict {{request id: tokens}} "
            "or a list of (request id, tokens) pairs"
        )
    if len(items) > MAX_BATCH:
        raise Invalid(f"plan has {len(items)} requests; at most {MAX_BATCH} per iteration")
    plan, total = [], 0
    for rid, c in items:
        if type(rid) is not int:
            rid = _as_int(rid, "request id")
        if type(c) is not int:
            c = _as_int(c, "token count")
        p = pending.get(rid)
        if p is None:
            raise Invalid(f"request {rid} is not in the system (not arrived, or finished)")
        if not 1 <= c <= p:
            raise Invalid(f"request {rid}: {c} tokens, expected 1..{p} (its pending tokens)")
        total += c
        plan.append((rid, c))
    if len({rid for rid, _ in plan}) != len(plan):
        seen: set[int] = set()
        dup = next(r for r, _ in plan if r in seen or seen.add(r))  # type: ignore[func-returns-value]
        raise Invalid(f"request {dup} appears twice in the plan")
    if total > MAX_TOKENS:
        raise Invalid(f"plan processes {total} tokens; at most {MAX_TOKENS} per iteration")
    return plan


def _as_int(v: object, what: str) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise Invalid(f"{what} {v!r:.40} ({type(v).__name__}) is not an integer")
    return int(v)


_ITEM = re.compile(r"(\d{1,9})(?:-(\d{1,9})|:(\d{1,9}))?\Z")


def encode_plan(plan: list[tuple[int, int]]) -> str:
    """A parsed plan as the log's text: entries by request id, comma-separated; "r:c" is c
    tokens of request r, "r" one token, "a-b" one token of each of requests a..b."""
    out: list[str] = []
    pairs = sorted(plan)
    k = 0
    while k < len(pairs):
        rid, c = pairs[k]
        if c != 1:
            out.append(f"{rid}:{c}")
            k += 1
            continue
        j = k
        while j + 1 < len(pairs) and pairs[j + 1] == (pairs[j][0] + 1, 1):
            j += 1
        out.append(f"{rid}-{pairs[j][0]}" if j > k else str(rid))
        k = j + 1
    return ",".join(out)


def decode_plan(text: object, n_requests: int) -> list[tuple[int, int]]:
    """The log's text back into (rid, tokens) pairs; Invalid if it is not in encode_plan's form."""
    if not isinstance(text, str):
        raise Invalid(f"a logged plan must be a string, got {type(text).__name__}")
    if not text:
        return []
    plan = []
    for item in text.split(","):
        m = _ITEM.match(item)
        if m is None:
            raise Invalid(f"malformed plan entry {item!r:.40}")
        a, b, c = m.groups()
        if b is not None:
            lo, hi = int(a), int(b)
            if not lo < hi < n_requests:
                raise Invalid(f"plan range {item!r:.40} is not a range of request ids")
            plan += [(r, 1) for r in range(lo, hi + 1)]
        else:
            plan.append((int(a), int(c) if c is not None else 1))
        if len(plan) > MAX_BATCH:
            raise Invalid(f"plan has more than {MAX_BATCH} requests")
    return plan


class Server:
    """The simulator's state for one scenario; `step(plan)` runs one iteration."""

    def __init__(self, sc: Scenario, perf: PerfModel):
        self.sc, self.perf = sc, perf
        n = len(sc)
        self.now = 0.0
        self.next_arrival = 0  # index of the next request to arrive
        self.active: list[int] = []  # arrived, unfinished, in arrival order
        self.generated = [0] * n
        self.cached = [0] * n
        self.first = [math.nan] * n  # time of the first output token
        self.last = [math.nan] * n  # time of the latest output token
        self.max_gap = [0.0] * n
        self.finish = [math.nan] * n
        self.preempted = [0] * n
        self.gaps: list[float] = []  # every inter-token gap, all requests
        self.kv_used = 0
        self.iterations = 0
        self.busy_s = 0.0
        self.done = n == 0
        self.end = float(sc.arrival[-1]) + DRAIN_S if n else 0.0
        self._prompt = sc.prompt.tolist()
        self._output = sc.output.tolist()

    def pending(self, rid: int) -> int:
        return self._prompt[rid] + self.generated[rid] - self.cached[rid]

    def advance(self) -> bool:
        """Admit arrivals; jump idle time. False (and done) once the run is over."""
        arr = self.sc.arrival
        n = len(arr)
        while not self.done:
            if not self.active and self.next_arrival < n:
                self.now = max(self.now, float(arr[self.next_arrival]))
            while self.next_arrival < n and arr[self.next_arrival] <= self.now:
                self.active.append(self.next_arrival)
                self.next_arrival += 1
            if not self.active and self.next_arrival >= n:
                self.done = True
            elif self.now > self.end:
                self.done = True
            else:
                return True
        return False

    def state_arrays(self) -> dict:
        """What the policy sees about the requests in the system (numpy arrays, arrival order)."""
        idx = np.array(self.active, dtype=np.int64)
        gen = np.array([self.generated[i] for i in self.active], dtype=np.int64)
        cached = np.array([self.cached[i] for i in self.active], dtype=np.int64)
        prompt = self.sc.prompt[idx]
        return {
            "rid": idx,
            "arrival": self.sc.arrival[idx],
            "prompt": prompt,
            "generated": gen,
            "cached": cached,
            "pending": prompt + gen - cached,
            "predicted": self.sc.predicted[idx],
            "last_token": np.array([self.last[i] for i in self.active], dtype=np.float64),
        }

    def step(self, raw: object, log: bool = True) -> str:
        """Validate and run one iteration; return the plan as logged (encode_plan's text)."""
        prompt, gen, cached = self._prompt, self.generated, self.cached
        pend = {i: prompt[i] + gen[i] - cached[i] for i in self.active}
        plan = parse_plan(raw, pend)
        self.apply(plan)
        return encode_plan(plan) if log else ""

    def _evict(self, rid: int) -> None:
        self.kv_used -= self.cached[rid]
        self.cached[rid] = 0
        self.preempted[rid] += 1

    def apply(self, plan: list[tuple[int, int]]) -> None:
        """Run a parsed plan: preempt to fit (module doc), advance the clock, emit tokens."""
        if not plan:
            if self.next_arrival < len(self.sc):
                self.now = max(self.now, float(self.sc.arrival[self.next_arrival]))
            else:
                self.done = True
            return
        need = sum(c for _, c in plan)
        cap = self.sc.kv_capacity
        if self.kv_used + need > cap:
            planned = {rid for rid, _ in plan}
            for rid in reversed(self.active):
                if self.kv_used + need <= cap:
                    break
                if rid not in planned and self.cached[rid] > 0:
                    self._evict(rid)
            while self.kv_used + need > cap:
                rid, c = max(plan)  # the latest arrival in the plan
                plan = [e for e in plan if e[0] != rid]
                need -= c
                if self.cached[rid] > 0:  # one without KV just waits for a later iteration
                    self._evict(rid)
            if not plan:
                return  # everything was preempted; the next iteration re-plans
        tokens = sum(c for _, c in plan)
        dt = self.perf.iteration_s(tokens, len(plan))
        self.now += dt
        self.busy_s += dt
        self.iterations += 1
        self.kv_used += tokens
        now = self.now
        prompt, gen, cached, output = self._prompt, self.generated, self.cached, self._output
        finished = False
        for rid, c in plan:
            cr = cached[rid] = cached[rid] + c
            g = gen[rid]
            if cr < prompt[rid] + g:
                continue  # a prefill chunk: no output token yet
            g = gen[rid] = g + 1
            if g == 1:
                self.first[rid] = now
            else:
                gap = now - self.last[rid]
                self.gaps.append(gap)
                if gap > self.max_gap[rid]:
                    self.max_gap[rid] = gap
            self.last[rid] = now
            if g >= output[rid]:
                self.finish[rid] = now
                self.kv_used -= cr
                cached[rid] = 0
                finished = True
        if finished:
            self.active = [i for i in self.active if math.isnan(self.finish[i])]

    def results(self) -> dict:
        """Per-request outcomes as arrays (after the run)."""
        arr = self.sc.arrival
        first = np.array(self.first)
        finish = np.array(self.finish)
        stop = self.now
        ttft = np.where(np.isnan(first), np.maximum(stop - arr, 0.0), first - arr)
        done = ~np.isnan(finish)
        max_gap = np.array(self.max_gap)
        met = done & (ttft <= SLO_TTFT_S + 1e-9) & (max_gap <= SLO_TBT_S + 1e-9)
        return {
            "ttft": ttft,
            "got_first": ~np.isnan(first),
            "done": done,
            "max_gap": max_gap,
            "met": met,
            "gaps": np.array(self.gaps),
            "tokens": int(sum(self.generated)),
            "duration": max(stop, 1e-9),
            "preemptions": int(sum(self.preempted)),
            "iterations": self.iterations,
            "busy_s": self.busy_s,
        }


def replay(sc: Scenario, perf: PerfModel, log: Iterable[object]) -> Server:
    """Trusted re-run of one scenario from its logged plans (encode_plan's texts), each
    re-validated against the replayed state."""
    server = Server(sc, perf)
    for k, text in enumerate(log):
        if not server.advance():
            raise Invalid(
                f"scenario {sc.name}: the log has more iterations ({k} or more) than the run"
            )
        try:
            server.step(decode_plan(text, len(sc)), log=False)
        except Invalid as e:
            raise Invalid(f"scenario {sc.name}, iteration {k}: {e}") from None
    if server.advance():
        raise Invalid(f"scenario {sc.name}: the log stops before the run ended")
    return server
