"""SoC scheduling: pick a processing element for every ready task of streaming jobs (seed: ETF).

Fixed API (the code outside the EVOLVE block): the evaluator calls schedule(state) at every
epoch, an instant at which tasks became ready; schedule() keeps the scenario's static tables
in its memory and calls place(). Return a list of [ready index, PE] pairs, every ready task
exactly once, on a PE that can run its function; tasks join their PE's first-in first-out
queue in the order of the list. The evaluator replays the decisions in its own simulator.

state: "now" (us), "ready" (list of tasks, each a dict: "job", "app", "task" (index in the
app's graph), "func" (its function), "arrival" (the job's arrival, us), "parents": one
[PE, finish us, volume] per parent, all finished), "pe_free" (per PE, when its queue
drains), "pe_tasks" (per PE, tasks placed and not finished), "memory" (a dict kept across
the epochs of one scenario), and at the first epoch "platform" and "apps".
platform: "pe_names", "pe_types" (LTL = Arm A7, BIG = Arm A15, ACC_1 = matrix multiply,
ACC_2 = FFT, ACC_3 = Viterbi), "exec" (function -> per PE its time in us, None where the PE
cannot run it), "band" (PE x PE bandwidth). apps: name -> "funcs", "parents" and
"children" (per task a list of [task, volume]).

Simulator: a task starts at the latest of now, its PE's queue draining (pe_free) and each
parent's finish + int(volume / band[parent PE][PE]); it runs exec[func][PE] us. A job's
latency = its last task's finish - its arrival. Score = -(mean over scenarios of the mean
job latency in us).
"""

import heapq  # noqa: F401  (for policies)
import math  # noqa: F401


def exec_us(platform, func, pe):
    """Microseconds `func` takes on PE `pe`, or None if that PE cannot run it."""
    return platform["exec"][func][pe]


def capable(platform, func):
    """The PEs that can run `func`."""
    return [p for p, t in enumerate(platform["exec"][func]) if t is not None]


def comm_us(platform, volume, p, q):
    """Transfer time of `volume` from PE p to PE q (DS3: int(volume / bandwidth))."""
    return int(volume / platform["band"][p][q])


def data_ready(task, pe, platform, now):
    """When all of `task`'s input data can be on `pe`."""
    t = now
    for q, finish, volume in task["parents"]:
        t = max(t, finish + comm_us(platform, volume, q, pe))
    return t


def finish_us(task, pe, platform, now, pe_free):
    """When `task` would finish if appended to `pe`'s queue now (pe_free: per PE, when it drains)."""
    start = max(pe_free[pe], data_ready(task, pe, platform, now))
    return start + int(exec_us(platform, task["func"], pe))


def upward_ranks(app, platform):
    """HEFT's rank_u of each task of `app`: mean execution time over the capable PEs plus the
    largest (volume / mean bandwidth + rank_u) over its children."""
    m = len(platform["pe_names"])
    links = [platform["band"][p][q] for p in range(m) for q in range(m) if p != q]
    bbar = sum(links) / len(links)
    n = len(app["funcs"])
    rank = [None] * n

    def r(i):
        if rank[i] is None:
            times = [t for t in platform["exec"][app["funcs"][i]] if t is not None]
            rank[i] = sum(times) / len(times) + max(
                (v / bbar + r(c) for c, v in app["children"][i]), default=0.0
            )
        return rank[i]

    return [r(i) for i in range(n)]


def schedule(state):
    """Fixed entry point: keep the static tables, then ask place() for the epoch's decisions."""
    memory = state["memory"]
    if "platform" in state:
        memory["platform"], memory["apps"] = state["platform"], state["apps"]
    return place(state["ready"], state, memory["platform"], memory["apps"], memory)


# EVOLVE-BLOCK-START
def place(ready, state, platform, apps, memory):
    """ETF, as DS3's default scheduler: repeatedly take, over every unplaced ready task and
    every capable PE, the pair with the earliest finish time, place it, and update that PE's
    availability. Ties: the earlier task in `ready`, then the lower PE."""
    now, free = state["now"], list(state["pe_free"])
    left = list(range(len(ready)))
    out = []
    while left:
        best = None
        for i in left:
            for p in capable(platform, ready[i]["func"]):
                f = finish_us(ready[i], p, platform, now, free)
                if best is None or f < best[0]:
                    best = (f, i, p)
        f, i, p = best
        free[p] = f
        left.remove(i)
        out.append([i, p])
    return out


# EVOLVE-BLOCK-END
