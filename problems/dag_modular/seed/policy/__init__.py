"""The scheduler the evaluator loads: list scheduling composed of two evolving modules.

schedule(wf, platform) is called once per workflow. It keeps the ready tasks (every parent
placed) and repeats: ordering.select picks which ready task goes next, mapping.choose picks
its processor, and the Timeline (helpers.py, the evaluator's own arithmetic) places it at
its earliest idle gap there. Each module has a prepare(wf, platform) called once per
workflow, whose result it gets back with every decision. This file is fixed: only
ordering.py and mapping.py evolve. Every decision is checked here as it is made, and the
evaluator checks the whole schedule again and replays it.
"""

import numbers

from policy import mapping, ordering
from policy.helpers import Timeline


class DecisionError(ValueError):
    """A module's decision broke a rule (the evaluator reports it as invalid)."""


def _task(got, ready, step):
    if isinstance(got, bool) or not isinstance(got, numbers.Integral) or got not in ready:
        shown = sorted(ready)[:8]
        raise DecisionError(
            f"ordering.select at step {step} returned {got!r:.40}; expected one of the "
            f"{len(ready)} ready tasks (e.g. {shown})"
        )
    return int(got)


def _processor(got, task, n_procs):
    if isinstance(got, bool) or not isinstance(got, numbers.Integral) or not 0 <= got < n_procs:
        raise DecisionError(
            f"mapping.choose for task {task} returned {got!r:.40}; expected a processor "
            f"0..{n_procs - 1}"
        )
    return int(got)


def schedule(wf, platform):
    """The (task, processor) pairs in placement order, every task once, after its parents."""
    timeline = Timeline(wf, platform)
    order_state = ordering.prepare(wf, platform)
    map_state = mapping.prepare(wf, platform)
    waiting = [len(ps) for ps in wf["parents"]]
    ready = [i for i in range(wf["n"]) if waiting[i] == 0]  # in the order they became ready
    while ready:
        task = _task(
            ordering.select(tuple(ready), timeline, order_state), ready, len(timeline.order)
        )
        ready.remove(task)
        proc = _processor(mapping.choose(task, timeline, map_state), task, len(platform["speed"]))
        timeline.place(task, proc)
        for child, _ in wf["children"][task]:
            waiting[child] -= 1
            if waiting[child] == 0:
                ready.append(child)
    return timeline.order
