"""Canned dag_modular edits that the scripted LLM serves (data only).

Each entry is (name, note, source): the whole body of one evolving file's EVOLVE block;
which file (policy/ordering.py or policy/mapping.py) is the contract row's `path`
(problems/dag_modular/conformance.toml). Expected outcomes on problems/dag_modular, whose
seed is HEFT (train score -4.5142): bad_processor, not_ready and float_processor are
invalid (a decision the composer refuses), runtime_error raises NameError, syntax_error
fails to import, spin never returns. BEST_OF_RULES is a reply that edits both files at once:
the ordering module searches eleven priority rules per workflow and keeps the shortest list
schedule, the mapping module follows the same plan (train -4.4262, dag_scheduling's
best_of_rules).
"""

_PREPARE = "def prepare(wf, platform):\n    return None\n\n\n"

DAG_MODULAR_VARIANTS: list[tuple[str, str, str]] = [
    (
        "bad_processor",
        "Add a virtual processor for the exit tasks.",
        _PREPARE
        + 'def choose(task, timeline, state):\n    return len(timeline.platform["speed"])\n',
    ),
    (
        "float_processor",
        "Return the processor's speed index as a float.",
        _PREPARE + "def choose(task, timeline, state):\n    return 2.0\n",
    ),
    (
        "not_ready",
        "Schedule backwards from the last task.",
        _PREPARE + "def select(ready, timeline, state):\n    return -1\n",
    ),
    (
        "runtime_error",
        "Weight ranks by the processor count.",
        "def prepare(wf, platform):\n    return upward_ranks(wf, platform) * NUM_PROCS\n\n\n"
        "def select(ready, timeline, rank):\n    return ready[0]\n",
    ),
    (
        "syntax_error",
        "Break ties by runtime.",
        _PREPARE
        + "def choose(task, timeline, state):\n    return min(range(6), key=lambda p: (timeline.eft(task, p), p)\n",
    ),
    (
        "spin",
        "Think harder about each choice.",
        _PREPARE + "def select(ready, timeline, state):\n    while True:\n        pass\n",
    ),
]

_ORDERING = '''def _list_schedule(wf, platform, prio):
    """Ready-list scheduling: highest priority ready task, min-EFT processor."""
    procs = range(len(platform["speed"]))
    timeline = Timeline(wf, platform)
    waiting = [len(ps) for ps in wf["parents"]]
    ready = [(-prio[i], i) for i in range(wf["n"]) if waiting[i] == 0]
    heapq.heapify(ready)
    while ready:
        _, i = heapq.heappop(ready)
        timeline.place(i, min(procs, key=lambda p: (timeline.eft(i, p), p)))
        for j, _ in wf["children"][i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                heapq.heappush(ready, (-prio[j], j))
    return timeline


def best_plan(wf, platform):
    """Several priority rules (rank_u, rank_u + rank_d, rank_u + runtime, eight perturbed
    rank_u): the (task, processor) order of the shortest list schedule."""
    up, down = upward_ranks(wf, platform), downward_ranks(wf, platform)
    rules = [up, [u + d for u, d in zip(up, down)], [u + r for u, r in zip(up, wf["runtime"])]]
    rng = random.Random(1)
    for _ in range(8):
        rules.append([u * (1.0 + 0.2 * rng.random()) for u in up])
    return min((_list_schedule(wf, platform, r) for r in rules), key=lambda t: t.makespan).order


def prepare(wf, platform):
    """Each task's position in the best plan."""
    return {t: k for k, (t, _) in enumerate(best_plan(wf, platform))}


def select(ready, timeline, position):
    """The ready task that comes first in the plan (it is always the plan's next one)."""
    return min(ready, key=lambda i: position[i])
'''

_MAPPING = '''from policy.ordering import best_plan


def prepare(wf, platform):
    """The processor of every task in the ordering module's best plan."""
    return dict(best_plan(wf, platform))


def choose(task, timeline, processor_of):
    return processor_of[task]
'''


def _fenced(path: str, body: str) -> str:
    return f"{path}\n```python\n# EVOLVE-BLOCK-START\n{body.strip()}\n# EVOLVE-BLOCK-END\n```\n"


BEST_OF_RULES = (
    "Try several priority rules per workflow and keep the shortest schedule; the mapping "
    "follows the same plan.\n\n"
    + _fenced("policy/ordering.py", _ORDERING)
    + "\n"
    + _fenced("policy/mapping.py", _MAPPING)
)
