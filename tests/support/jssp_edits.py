"""Canned jssp edits that the scripted LLM serves (data only).

Mixes improvements and failures so a scripted evolution run exercises both;
each entry is (name, note, priority source) and the source is the whole body
of the EVOLVE block. Expected outcomes on problems/jssp, whose seed is MWKR
(train score -22.239): mwkr_tiebreak dispatches exactly as the seed (a
tie-break that never changes the winner's order), spt passes the quick
cascade but scores far worse (train -57.1), lwkr fails the quick
cascade, syntax_error fails to import, runtime_error raises NameError,
non_finite and not_a_number are invalid, and mwkr_idle (most work remaining,
penalising the machine idle time a choice creates) is the one that beats the
seed (train -15.82).
"""

JSSP_VARIANTS: list[tuple[str, str, str]] = [
    (
        "mwkr_tiebreak",
        "MWKR, breaking ties toward the lower job index explicitly.",
        "def priority(op) -> float:\n    return op.remaining_work - 1e-6 * op.job / op.n_jobs\n",
    ),
    (
        "spt",
        "Shortest processing time first frees machines sooner.",
        "def priority(op) -> float:\n    return float(-op.processing_time)\n",
    ),
    (
        "lwkr",
        "Least work remaining first finishes jobs early.",
        "def priority(op) -> float:\n    return float(-op.remaining_work)\n",
    ),
    (
        "syntax_error",
        "Weigh remaining work by the machine load.",
        "def priority(op) -> float:\n    return op.remaining_work * (op.machine_load\n",
    ),
    (
        "runtime_error",
        "Normalise by the instance's horizon.",
        "def priority(op) -> float:\n    return op.remaining_work / HORIZON\n",
    ),
    (
        "non_finite",
        "Jobs not started yet go first, unconditionally.",
        "def priority(op) -> float:\n"
        "    return float('inf') if op.op_index == 0 else float(op.remaining_work)\n",
    ),
    (
        "not_a_number",
        "Return the full feature vector and let the generator decide.",
        "def priority(op) -> float:\n    return [op.remaining_work, -op.processing_time]\n",
    ),
    (
        "mwkr_idle",
        "MWKR, penalising the idle time a choice leaves on the machine.",
        "def priority(op) -> float:\n"
        "    idle = max(0, op.earliest_start - op.machine_ready)\n"
        "    return op.remaining_work - 3.0 * idle\n",
    ),
]
