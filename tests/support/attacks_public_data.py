"""Candidates that carry a problem's public data and look their held-out tasks up in it.

Issue 37 item 1: under a run's private data seed the held-out noise, faults and windows
were new, but the content was still the published data, so a candidate that embedded it
found its task and answered with the truth (telemetry_repair: 1.0 held out) or planned
with the future known (the spot problems). Each builder here writes such a candidate's
EVOLVE block, with the public data read at test time; without a match it falls back to
the problem's best baseline, so under private data it should score like that baseline.
`python -m tests.support.attacks_public_data OUT_DIR` writes the three as whole programs, for
`evolve eval PROBLEM OUT_DIR/PROBLEM_carried.py --split test [--data-seed N]`.
"""

from __future__ import annotations

# ---------------------------------------------------------------- telemetry_repair

TELEMETRY = '''
TABLE = __TABLE__  # the ground truth of every public snapshot: [{if_id: (rx, tx)}]


def _fit(truth, telemetry):
    """Share of the counters within 3% of a snapshot's truth (noise is 2%; faults are 20%+)."""
    hits = n = 0
    for if_id, d in telemetry.items():
        g = truth.get(if_id)
        if g is None:
            return 0.0
        for value, gt in ((d["rx_rate"], g[0]), (d["tx_rate"], g[1])):
            n += 1
            hits += abs(value - gt) <= 0.03 * max(gt, 1.0)
    return hits / max(n, 1)


def _pair(mine, theirs, prior):
    """Link symmetry; where the two ends disagree, the one nearer the closest snapshot wins."""
    if mine <= 0 and theirs <= 0:
        return (prior, 0.5) if prior > 0 else (0.0, 1.0)
    if mine <= 0 or theirs <= 0:
        return max(mine, theirs), 0.8
    if abs(mine - theirs) / max(mine, theirs) <= 0.05:
        return (mine + theirs) / 2.0, 1.0
    if prior > 0:
        return min((mine, theirs), key=lambda v: abs(v - prior) / prior), 0.8
    return (mine + theirs) / 2.0, 0.5


def repair_network_telemetry(telemetry, topology):
    best = max(TABLE, key=lambda t: _fit(t, telemetry))
    if _fit(best, telemetry) >= 0.5:  # found: answer with its truth
        return {i: {"rx_rate": (d["rx_rate"], best[i][0], 1.0), "tx_rate": (d["tx_rate"], best[i][1], 1.0),
                    "interface_status": ("up", "up", 1.0)} for i, d in telemetry.items()}
    ratios = sorted(d[f] / g[k] for i, d in telemetry.items() for k, f in ((0, "rx_rate"), (1, "tx_rate"))
                    for g in (best.get(i, (0.0, 0.0)),) if g[k] > 1 and d[f] > 0)
    scale = ratios[len(ratios) // 2] if ratios else 1.0
    out = {}
    for i, d in telemetry.items():
        peer = telemetry.get(d["connected_to"])
        g = best.get(i, (0.0, 0.0))
        row = {"interface_status": (d["interface_status"], d["interface_status"], 1.0)}
        for k, field, mirror in ((0, "rx_rate", "tx_rate"), (1, "tx_rate", "rx_rate")):
            theirs = float(peer[mirror]) if peer else float(d[field])
            row[field] = (d[field], *_pair(float(d[field]), theirs, g[k] * scale))
        out[i] = row
    return out
'''


def telemetry_block(snapshots: list) -> str:
    """The attack on telemetry_repair, carrying `snapshots`' truth (rounded to 0.01 Mbps)."""
    table = [
        {i: (round(rx, 2), round(tx, 2)) for i, (rx, tx) in s.truth.items()} for s in snapshots
    ]
    return TELEMETRY.replace("__TABLE__", repr(table))


# ---------------------------------------------------------------- the spot problems

# What both spot attacks share: the window is found by its history of availability (a
# string per zone); the future of a found window plans the job.
SPOT_SHARED = '''
MIN_MATCH = 6  # ticks of history before a match counts
MAX_PLACES = 64  # places a history may match and still be followed
PLAN_PLACES = 4  # places it may match and plan on the worst of their futures


def _positions(trace, hist):
    at, out = trace.find(hist), []
    while at >= 0:
        out.append(at)
        at = trace.find(hist, at + 1)
    return out


def _spot_progress(future, state, start):
    """Hours of work spot alone gives from tick `start` of `future` ('1' = spot) to the deadline:
    each spell of spot pays one restart overhead."""
    ticks = int(state.time_left / state.gap + 0.999999)
    spells = future[start:ticks].split("0")
    return sum(max(0.0, len(s) * state.gap - state.restart_overhead) for s in spells if s)


def _safe(state, choice, running):
    """The baselines' safety net: spend this tick only if on-demand from the next still finishes."""
    if choice == ON_DEMAND:
        return True
    overhead = state.overhead_left if running else state.restart_overhead
    progress = max(0.0, state.gap - overhead) if choice == SPOT else 0.0
    return state.time_left - state.gap >= state.work_left - progress + state.restart_overhead + 1e-9
'''

SPOT_SINGLE = (
    SPOT_SHARED
    + '''
TRACES = __TRACES__  # every public trace: '1' where spot is available, one char per tick


def _futures(state):
    """The rest of this window ('1' = spot, from this tick on) at every place of the carried
    traces whose history matches this window's; None while there are too many."""
    mem = state.memory
    hist = mem.get("h", "") + ("1" if state.has_spot else "0")
    mem["h"] = hist
    found = mem.get("m")
    if found is not None:  # one more tick: keep the places that agree with it
        found = [(n, a) for n, a in found if TRACES[n][a + len(hist) - 1:a + len(hist)] == hist[-1]]
    elif len(hist) >= MIN_MATCH and len(hist) % 2 == 0 and len(set(hist)) > 1:
        found = [(name, at) for name, t in TRACES.items() for at in _positions(t, hist)]
    mem["m"] = found if found is not None and len(found) <= MAX_PLACES else None
    if not mem["m"] or len(found) > PLAN_PLACES:
        return None
    ticks = int(state.time_left / state.gap + 0.999999)
    return {TRACES[n][a + len(hist) - 1:a + len(hist) - 1 + ticks] for n, a in found}


def _uniform_progress(state):
    rate = state.work_total / state.deadline
    behind = state.work_done < state.elapsed * rate
    choice = SPOT if state.has_spot else (ON_DEMAND if behind else NONE)
    if state.current == ON_DEMAND and (
        not state.has_spot or state.work_done < (state.elapsed + 2 * state.restart_overhead) * rate
    ):
        choice = ON_DEMAND
    return choice


def decide(state):
    futures = _futures(state)
    if futures is None:
        choice = _uniform_progress(state)
    elif state.has_spot:
        choice = SPOT
    else:  # wait while the spot to come (in the worst of the futures) still finishes the job
        spare = state.gap + state.restart_overhead
        worst = min(_spot_progress(f, state, 1) for f in futures)
        choice = NONE if worst >= state.work_left + spare else ON_DEMAND
    return choice if _safe(state, choice, state.current == choice) else ON_DEMAND
'''
)

SPOT_MULTI = (
    SPOT_SHARED
    + '''
TRACES = __TRACES__  # zone -> its public trace: '1' where spot is available, one char per tick


_ANY = {48 + bits: "1" for bits in range(1, 1 << 9)}  # a joint character: does any zone have spot
_JOINT = {}  # zones -> their traces as one string, a character per tick (pure data, cached)


def _joint(zones):
    if zones not in _JOINT:
        cols = zip(*(TRACES[z] for z in zones))
        _JOINT[zones] = "".join(chr(48 + int("".join(c)[::-1], 2)) for c in cols)
    return _JOINT[zones]


def _futures(state):
    """Per zone, the rest of this window (from this tick on), and last where any zone has spot,
    if the zones' history matches one place."""
    mem = state.memory
    zones = tuple(state.zones)
    if any(z not in TRACES for z in zones):
        return None
    joint = _joint(zones)
    now = chr(48 + sum(1 << i for i, s in enumerate(state.spot) if s))
    hist = mem.get("h", "") + now
    mem["h"] = hist
    k = len(hist) - 1
    found = mem.get("m")
    if found is not None:
        found = [a for a in found if joint[a + k:a + k + 1] == now]
    elif k + 1 >= MIN_MATCH and (k + 1) % 2 == 0 and len(set(hist)) > 1:
        found = _positions(joint, hist)
    mem["m"] = found if found is not None and len(found) <= MAX_PLACES else None
    if not mem["m"] or len(found) != 1:
        return None
    ticks = int(state.time_left / state.gap + 0.999999)
    at = found[0] + k
    return [TRACES[z][at:at + ticks] for z in zones] + [joint[at:at + ticks].translate(_ANY)]


def _spell(future):
    end = future.find("0")
    return len(future) if end < 0 else end


def _up_multi(state):
    rate = state.work_total / state.deadline
    behind = state.work_done < state.elapsed * rate
    zone = state.zone if state.has_spot else (state.spot.index(True) if any(state.spot) else None)
    choice = SPOT if zone is not None else (ON_DEMAND if behind else NONE)
    if state.current == ON_DEMAND and (
        zone is None or state.work_done < (state.elapsed + 2 * state.restart_overhead) * rate
    ):
        choice = ON_DEMAND
    return choice, zone


def decide(state):
    futures = _futures(state)
    if futures is None:
        choice, zone = _up_multi(state)
    elif state.has_spot and state.current == SPOT:
        choice, zone = SPOT, state.zone
    elif any(state.spot):  # the zone whose spot lasts longest
        choice, zone = SPOT, max(range(len(futures) - 1), key=lambda z: _spell(futures[z]))
    else:
        anywhere = futures[-1]
        spare = state.gap + 2 * state.restart_overhead
        enough = _spot_progress(anywhere, state, 1) >= state.work_left + spare
        choice, zone = (NONE if enough else ON_DEMAND), None
    running = choice == state.current and (zone is None or zone == state.zone)
    if not _safe(state, choice, running):
        return ON_DEMAND
    return (SPOT, zone) if choice == SPOT else choice
'''
)


def availability(trace: bytes) -> str:
    """A trace as the attacks carry it: '1' where spot is available."""
    return trace.decode("latin-1").translate({0: "0", 1: "1"})


def spot_block(template: str, traces: dict[str, bytes]) -> str:
    """A spot attack's EVOLVE block carrying `traces` (name -> availability per tick)."""
    return template.replace("__TRACES__", repr({k: availability(v) for k, v in traces.items()}))


def write_all(out: str) -> list[str]:
    """The three attacks as whole programs in `out`, for `evolve eval` (see `__main__`)."""
    import sys
    from pathlib import Path

    from tests.support.problem_hostile import load_module, with_block

    root = Path(__file__).resolve().parents[2] / "problems"
    sys.path.insert(0, str(root / "telemetry_repair"))  # its evaluator imports its simulator
    tel = load_module(root / "telemetry_repair" / "evaluator.py").sim
    spot = load_module(root / "spot_scheduling" / "evaluator.py")
    multi = load_module(root / "spot_multi_region" / "evaluator.py")
    one = {f.stem: spot.sim.load_trace(str(f), spot.GAP_S)
           for f in sorted((root / "spot_scheduling" / "data" / spot.TRACE_DIR).glob("*.json"))}  # fmt: skip
    zones = {z: spot.sim.load_trace(str(root / "spot_multi_region" / "data" / multi.TRACE_DIR /
                                         f"{z}_v100_1.json"), multi.GAP_S) for z in multi.ZONES}  # fmt: skip
    blocks = {
        "telemetry_repair": telemetry_block(
            tel.load_snapshots(tel.TRAIN_FILE) + tel.load_snapshots(tel.TEST_FILE)
        ),
        "spot_scheduling": spot_block(SPOT_SINGLE, one),
        "spot_multi_region": spot_block(SPOT_MULTI, zones),
    }
    written = []
    for name, block in blocks.items():
        path = Path(out) / f"{name}_carried.py"
        with_block(root / name, block, Path(out)).rename(path)
        written.append(str(path))
    return written


if __name__ == "__main__":  # python -m tests.support.attacks_public_data OUT_DIR
    import sys

    print("\n".join(write_all(sys.argv[1])))
