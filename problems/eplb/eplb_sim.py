"""EPLB simulator: expert-load workloads, placement checks, GPU loads and the score.

Trusted code shared by `evaluator.evaluate()` (in the sandbox) and `score()` (a
clean process that never loads the candidate); a broken rule raises kit.Invalid.
Setting (DeepSeek-V3-like, as in ADRS): 58 MoE layers, 256 experts in 8 groups,
288 slots on 4 nodes x 8 GPUs, 9 per GPU: slot p on GPU p // 9, node p // 72.
"""

from __future__ import annotations

import base64
import math
import zlib
from dataclasses import dataclass

import numpy as np

from evaluators import kit

NUM_LAYERS = 58
NUM_EXPERTS = 256
NUM_GROUPS = 8
NUM_REPLICAS = 288
NUM_NODES = 4
NUM_GPUS = 32
TOP_K = 8  # experts per token (DeepSeek-V3 routes each token to 8 of 256)

# Score (ADRS leaderboard form): 90 * balancedness + a bounded runtime term.
BALANCE_WEIGHT = 90.0
SPEED_WEIGHT = 5.0
SPEED_REF_S = 0.002  # 2 ms per call earns SPEED_WEIGHT; capped at SPEED_CAP times that
SPEED_CAP = 2.0
SLOW_S = 0.010  # calls slower than this pay a penalty...
SLOW_PER_DECADE = 5.0  # ...of 5 points per factor of 10 above it...
SLOW_MAX = 10.0  # ...up to 10 points
MIN_CALL_S = 1e-6  # reported call times are clamped into [MIN_CALL_S, MAX_CALL_S]
MAX_CALL_S = 600.0


# ---------------------------------------------------------------- workloads


@dataclass(frozen=True)
class Regime:
    """How expert popularity behaves over time in one generated trace.

    Per layer, expert e has a log-popularity z = group effect + expert effect,
    each a stationary AR(1) process stepped `steps` times per window with
    per-window persistence `rho` (1 = frozen, 0 = redrawn every window).
    Bursts multiply one expert's popularity by a factor in `burst_gain` for a
    geometric number of windows (mean `burst_windows`); `burst_rate` new ones
    per layer per window on average. A window's load is the sum over its steps
    of Poisson(tokens/steps * TOP_K * softmax(z + bursts)), drawn as one Poisson
    of the summed rates.
    """

    name: str
    rho: float
    skew: float  # std of the expert effect (per layer, scaled by U(0.7, 1.3))
    group_skew: float  # std of the group effect
    burst_rate: float
    burst_gain: tuple[float, float]
    burst_windows: float
    tokens: int = 16384  # tokens per window
    steps: int = 8


DRIFT = Regime("drift", rho=0.9, skew=1.0, group_skew=0.5, burst_rate=0.3,
               burst_gain=(3.0, 8.0), burst_windows=2.0)
STABLE = Regime("stable", rho=0.97, skew=1.1, group_skew=0.6, burst_rate=0.1,
                burst_gain=(2.0, 5.0), burst_windows=3.0)
FAST = Regime("fast", rho=0.6, skew=0.9, group_skew=0.4, burst_rate=0.3,
              burst_gain=(3.0, 8.0), burst_windows=1.5)
BURSTY = Regime("bursty", rho=0.9, skew=0.8, group_skew=0.4, burst_rate=1.5,
                burst_gain=(4.0, 12.0), burst_windows=1.5)

WINDOWS = 12  # windows per trace; the placement from window i is scored on window i + 1

# split -> [(trace name, public seed, regime)]; `test` is held out: other seeds, other regimes.
# A run draws its traces under its private seed instead (kit.seed in make_traces).
SPLITS: dict[str, list[tuple[str, int, Regime]]] = {
    "train": [("drift-a", 101, DRIFT), ("drift-b", 102, DRIFT)],
    "test": [("stable", 201, STABLE), ("fast", 202, FAST), ("bursty", 203, BURSTY)],
}


def generate_trace(seed: int, regime: Regime, windows: int = WINDOWS,
                   layers: int = NUM_LAYERS, experts: int = NUM_EXPERTS,
                   groups: int = NUM_GROUPS) -> np.ndarray:
    """Expert loads [windows, layers, experts] (float64 token counts), seeded.

    Uses numpy's legacy RandomState, whose streams numpy keeps frozen across
    versions, so a seed gives the same trace in every environment. A seed past 32 bits (a
    run's private one, kit.seed) seeds it as two 32-bit words.
    """
    rng = np.random.RandomState(seed if seed < 2**32 else [seed & 0xFFFFFFFF, seed >> 32])
    group_size = experts // groups
    layer_skew = regime.skew * rng.uniform(0.7, 1.3, size=(layers, 1))
    z_exp = rng.standard_normal((layers, experts))
    z_grp = rng.standard_normal((layers, groups))
    rho = regime.rho ** (1.0 / regime.steps)
    innov = math.sqrt(max(0.0, 1.0 - rho * rho))
    boost = np.zeros((layers, experts))  # log-multiplier of the active bursts
    left = np.zeros((layers, experts), dtype=np.int64)  # windows a burst still lasts
    lam_per_step = regime.tokens / regime.steps * TOP_K
    out = np.zeros((windows, layers, experts))
    lo, hi = math.log(regime.burst_gain[0]), math.log(regime.burst_gain[1])
    for w in range(windows):
        expired = left <= 0
        boost[expired] = 0.0
        n_new = rng.poisson(regime.burst_rate * layers)
        if n_new:
            lay = rng.randint(0, layers, n_new)
            exp = rng.randint(0, experts, n_new)
            boost[lay, exp] = rng.uniform(lo, hi, n_new)
            left[lay, exp] = rng.geometric(1.0 / regime.burst_windows, n_new)
        rate = np.zeros((layers, experts))
        for _ in range(regime.steps):
            z_exp = rho * z_exp + innov * rng.standard_normal(z_exp.shape)
            z_grp = rho * z_grp + innov * rng.standard_normal(z_grp.shape)
            logits = layer_skew * z_exp + regime.group_skew * np.repeat(z_grp, group_size, axis=1)
            logits = logits + boost
            p = np.exp(logits - logits.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            rate += lam_per_step * p
        out[w] = rng.poisson(rate)
        left -= 1
    return out


def make_traces(split: str) -> list[tuple[str, np.ndarray]]:
    """[(trace name, loads [windows, layers, experts])] for a split: from the public seeds
    below, or under a run's private seed (kit.seed), so a candidate cannot replay them."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {sorted(SPLITS)}")
    return [(name, generate_trace(kit.seed(seed), regime)) for name, seed, regime in SPLITS[split]]


# ---------------------------------------------------------------- placements


def as_int_array(raw: object, name: str) -> np.ndarray:
    """An integer ndarray from a candidate's return value, or kit.Invalid."""
    if type(raw).__module__.startswith("torch"):  # a torch tensor: accept its numpy view
        raw = raw.detach().cpu().numpy()  # type: ignore[attr-defined]
    try:
        arr = np.asarray(raw)
    except Exception as e:  # ragged lists and the like
        raise kit.Invalid(f"{name} is not an array: {type(e).__name__}: {e}"[:300]) from None
    if arr.dtype.kind == "f" and arr.size and not np.isfinite(arr).all():
        raise kit.Invalid(f"{name} contains NaN or infinity; it must be an integer array")
    if arr.dtype.kind not in "iu":
        raise kit.Invalid(f"{name} must be an integer array, got dtype {arr.dtype}")
    return arr.astype(np.int64, copy=False)


def check_placement(phy2log: np.ndarray, log2phy: np.ndarray, logcnt: np.ndarray,
                    weight: np.ndarray, num_replicas: int = NUM_REPLICAS) -> None:
    """Raise kit.Invalid unless the three mappings are one consistent placement.

    phy2log [L, R] in [0, E); logcnt [L, E] counts each expert's slots and sums
    to R per layer; every expert has at least one slot (the next window's
    tokens may go to any expert; 288 slots >= 256 experts makes this free);
    log2phy [L, E, K] lists, for each expert, exactly its slots (any order)
    in the first logcnt entries and -1 after them.
    """
    layers, experts = weight.shape
    if phy2log.shape != (layers, num_replicas):
        raise kit.Invalid(f"phy2log has shape {phy2log.shape}; expected {(layers, num_replicas)}")
    if logcnt.shape != (layers, experts):
        raise kit.Invalid(f"logcnt has shape {logcnt.shape}; expected {(layers, experts)}")
    if log2phy.ndim != 3 or log2phy.shape[:2] != (layers, experts) or not 1 <= log2phy.shape[2] <= num_replicas:
        raise kit.Invalid(f"log2phy has shape {log2phy.shape}; expected ({layers}, {experts}, "
                           f"max_replicas) with 1 <= max_replicas <= {num_replicas}")
    bad = (phy2log < 0) | (phy2log >= experts)
    if bad.any():
        lay, p = np.argwhere(bad)[0]
        raise kit.Invalid(f"phy2log[{lay}, {p}] = {phy2log[lay, p]} is not an expert id in [0, {experts})")
    sums = logcnt.sum(axis=1)
    if (sums != num_replicas).any():
        lay = int(np.flatnonzero(sums != num_replicas)[0])
        raise kit.Invalid(f"logcnt of layer {lay} sums to {int(sums[lay])}; the replica counts must "
                           f"sum to the {num_replicas} physical slots")
    counts = np.zeros((layers, experts), dtype=np.int64)
    np.add.at(counts, (np.arange(layers)[:, None], phy2log), 1)
    if (counts != logcnt).any():
        lay, e = np.argwhere(counts != logcnt)[0]
        raise kit.Invalid(f"logcnt[{lay}, {e}] = {logcnt[lay, e]} but expert {e} fills {counts[lay, e]} "
                           f"slots of phy2log[{lay}]; the mappings are inconsistent")
    orphan = logcnt == 0
    if orphan.any():  # loaded ones first: the clearer message
        lay, e = np.argwhere(orphan & (weight > 0))[0] if (orphan & (weight > 0)).any() else np.argwhere(orphan)[0]
        raise kit.Invalid(f"expert {e} of layer {lay} has no replica (its load this window: "
                           f"{weight[lay, e]:g}); every expert needs at least one slot, since any "
                           "expert may receive tokens in the next window")
    k = log2phy.shape[2]
    if int(logcnt.max()) > k:
        raise kit.Invalid(f"log2phy has room for {k} replicas per expert but logcnt has up to "
                           f"{int(logcnt.max())}")
    used = np.arange(k)[None, None, :] < logcnt[:, :, None]
    pad = log2phy[~used]
    if (pad != -1).any():
        lay, e, r = np.argwhere(~used & (log2phy != -1))[0]
        raise kit.Invalid(f"log2phy[{lay}, {e}, {r}] = {log2phy[lay, e, r]}, but expert {e} has "
                           f"{logcnt[lay, e]} replicas: entries past logcnt must be -1")
    slots = log2phy[used]
    lay = np.broadcast_to(np.arange(layers)[:, None, None], log2phy.shape)[used]
    exp = np.broadcast_to(np.arange(experts)[None, :, None], log2phy.shape)[used]
    out_of_range = (slots < 0) | (slots >= num_replicas)
    if out_of_range.any():
        i = int(np.flatnonzero(out_of_range)[0])
        raise kit.Invalid(f"log2phy lists slot {slots[i]} for expert {exp[i]} of layer {lay[i]}; "
                           f"slots are in [0, {num_replicas})")
    wrong = phy2log[lay, slots] != exp
    if wrong.any():
        i = int(np.flatnonzero(wrong)[0])
        raise kit.Invalid(f"log2phy says slot {slots[i]} of layer {lay[i]} holds expert {exp[i]}, "
                           f"but phy2log[{lay[i]}, {slots[i]}] = {phy2log[lay[i], slots[i]]}")
    hits = np.bincount(lay * num_replicas + slots, minlength=layers * num_replicas)
    if (hits != 1).any():
        i = int(np.flatnonzero(hits != 1)[0])
        raise kit.Invalid(f"log2phy lists slot {i % num_replicas} of layer {i // num_replicas} "
                           f"{int(hits[i])} times; each slot must appear exactly once")


# ---------------------------------------------------------------- metric


def gpu_loads(phy2log: np.ndarray, load: np.ndarray, num_gpus: int = NUM_GPUS) -> np.ndarray:
    """Load per GPU [L, num_gpus]: each expert's load split evenly over its replicas,
    summed over the GPU's consecutive slots. Experts without a replica add nothing."""
    layers, experts = load.shape
    rows = np.arange(layers)[:, None]
    counts = np.zeros((layers, experts))
    np.add.at(counts, (rows, phy2log), 1.0)
    per_replica = np.divide(load, counts, out=np.zeros_like(load, dtype=float), where=counts > 0)
    slot_load = per_replica[rows, phy2log]
    return slot_load.reshape(layers, num_gpus, -1).sum(axis=2)


def balancedness(phy2log: np.ndarray, load: np.ndarray, num_gpus: int = NUM_GPUS) -> float:
    """Mean over layers of (mean GPU load / max GPU load); an idle layer counts as 1."""
    g = gpu_loads(phy2log, load, num_gpus)
    top = g.max(axis=1)
    ratio = np.divide(g.mean(axis=1), top, out=np.ones_like(top), where=top > 0)
    return float(ratio.mean())


def runtime_terms(call_s: float) -> tuple[float, float]:
    """(speed bonus, slowness penalty) for a median call time in seconds, both in [0, 10]."""
    t = min(max(float(call_s), MIN_CALL_S), MAX_CALL_S)
    speed = SPEED_WEIGHT * min(SPEED_REF_S / t, SPEED_CAP)
    penalty = min(SLOW_MAX, SLOW_PER_DECADE * math.log10(t / SLOW_S)) if t > SLOW_S else 0.0
    return speed, penalty


def combined_score(balance: float, call_s: float) -> float:
    speed, penalty = runtime_terms(call_s)
    return BALANCE_WEIGHT * balance + speed - penalty


# ---------------------------------------------------------------- transport


def pack_array(a: np.ndarray) -> dict:
    """An int array as JSON: shape + base64(zlib(int16 little-endian bytes))."""
    raw = np.ascontiguousarray(a, dtype="<i2").tobytes()
    return {"shape": list(a.shape), "data": base64.b64encode(zlib.compress(raw, 1)).decode("ascii")}


def unpack_array(obj: object, name: str, max_elems: int) -> np.ndarray:
    """The inverse of pack_array, bounded (no decompression bombs); kit.Invalid on junk."""
    if not isinstance(obj, dict) or not isinstance(obj.get("shape"), list) or not isinstance(obj.get("data"), str):
        raise kit.Invalid(f"{name}: expected {{'shape': [...], 'data': '...'}}")
    shape = obj["shape"]
    if not all(type(d) is int and 0 <= d <= max_elems for d in shape) or math.prod(shape) > max_elems:
        raise kit.Invalid(f"{name}: bad shape {shape!r}")
    n = math.prod(shape)
    try:
        packed = base64.b64decode(obj["data"], validate=True)
        d = zlib.decompressobj()
        raw = d.decompress(packed, 2 * n + 1)
    except (ValueError, zlib.error) as e:
        raise kit.Invalid(f"{name}: undecodable data ({e})") from None
    if len(raw) != 2 * n:
        raise kit.Invalid(f"{name}: {len(raw)} bytes for shape {shape}")
    return np.frombuffer(raw, dtype="<i2").astype(np.int64).reshape(shape)
