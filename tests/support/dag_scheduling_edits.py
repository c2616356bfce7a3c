"""Canned dag_scheduling edits that the scripted LLM serves (data only).

Mixes improvements and failures so a scripted evolution run exercises both;
each entry is (name, note, schedule source) and the source is the whole body
of the EVOLVE block. Expected outcomes on problems/dag_scheduling, whose seed
is HEFT (train score -4.5142): heft scores the same as the seed (it is the
seed's own block), fastest_only is valid but worse, syntax_error fails to
import, bad_processor, children_first and non_finite are invalid,
runtime_error raises NameError, and best_of_rules (list scheduling under
several priority rules, keeping the shortest schedule per workflow) is the
one that beats the seed (train -4.4262).
"""

DAG_VARIANTS: list[tuple[str, str, str]] = [
    (
        "heft",
        "HEFT: upward-rank order, the processor with the earliest finish time.",
        'def schedule(wf, platform):\n    """HEFT (Topcuoglu, Hariri, Wu, IEEE TPDS 2002): tasks by decreasing upward rank\n    (mean execution and communication costs), each on the processor giving the earliest\n    finish time, insertion into idle gaps allowed. Ties: the lower task / processor index."""\n    rank = upward_ranks(wf, platform)\n    order = sorted(range(wf["n"]), key=lambda i: (-rank[i], i))\n    timeline = Timeline(wf, platform)\n    for i in order:\n        best = min(range(len(platform["speed"])), key=lambda p: (timeline.eft(i, p), p))\n        timeline.place(i, best)\n    return timeline.order\n',
    ),
    (
        "best_of_rules",
        "Try several priority rules per workflow and keep the shortest schedule.",
        'def _list_schedule(wf, platform, prio):\n    """Ready-list scheduling: highest priority ready task, min-EFT processor."""\n    procs = range(len(platform["speed"]))\n    timeline = Timeline(wf, platform)\n    waiting = [len(ps) for ps in wf["parents"]]\n    ready = [(-prio[i], i) for i in range(wf["n"]) if waiting[i] == 0]\n    heapq.heapify(ready)\n    while ready:\n        _, i = heapq.heappop(ready)\n        timeline.place(i, min(procs, key=lambda p: (timeline.eft(i, p), p)))\n        for j, _ in wf["children"][i]:\n            waiting[j] -= 1\n            if waiting[j] == 0:\n                heapq.heappush(ready, (-prio[j], j))\n    return timeline\n\n\ndef schedule(wf, platform):\n    """Try several priority rules (HEFT\'s rank_u, rank_u + rank_d, rank_u scaled by the task\'s\n    runtime, and randomly perturbed rank_u) and keep the schedule with the smallest makespan."""\n    up, down = upward_ranks(wf, platform), downward_ranks(wf, platform)\n    rules = [up, [u + d for u, d in zip(up, down)], [u + r for u, r in zip(up, wf["runtime"])]]\n    rng = random.Random(1)\n    for _ in range(8):\n        rules.append([u * (1.0 + 0.2 * rng.random()) for u in up])\n    best = min((_list_schedule(wf, platform, r) for r in rules), key=lambda t: t.makespan)\n    return best.order\n',
    ),
    (
        "fastest_only",
        "Put every task on the fastest processor: no communication at all.",
        'def schedule(wf, platform):\n    rank = upward_ranks(wf, platform)\n    fast = max(range(len(platform["speed"])), key=lambda p: platform["speed"][p])\n    return [(i, fast) for i in sorted(range(wf["n"]), key=lambda i: -rank[i])]\n',
    ),
    (
        "syntax_error",
        "Break ties by runtime.",
        "def schedule(wf, platform):\n    rank = upward_ranks(wf, platform\n    return []\n",
    ),
    (
        "bad_processor",
        "Add a virtual processor for the exit tasks.",
        'def schedule(wf, platform):\n    return [(i, len(platform["speed"])) for i in topological_order(wf)]\n',
    ),
    (
        "children_first",
        "Schedule backwards from the exit tasks.",
        "def schedule(wf, platform):\n    return [(i, 0) for i in reversed(topological_order(wf))]\n",
    ),
    (
        "runtime_error",
        "Weight ranks by the processor count.",
        "def schedule(wf, platform):\n    rank = upward_ranks(wf, platform) * NUM_PROCS\n    return []\n",
    ),
    (
        "non_finite",
        "Leave the processor open: the simulator will pick one.",
        'def schedule(wf, platform):\n    return [(i, float("nan")) for i in topological_order(wf)]\n',
    ),
]
