"""Dispatching rule for the job-shop problem inside a fixed Giffler-Thompson generator
(seed: MWKR, most work remaining).

Fixed API (the code outside the EVOLVE block): at each decision the generator
finds the conflict set (the jobs whose next operation is on the machine m* of
the earliest-finishing offered operation and could start before that finish,
C*) and, when it has two or more members, calls priority(op) once per member;
the highest priority is dispatched, ties to the lowest job index. `op` has the
integer attributes job, op_index, machine, processing_time, earliest_start,
earliest_finish, job_ready, machine_ready, remaining_work (this operation and
the job's later ones), remaining_ops (this one included), job_total_work,
machine_load (work still to run on this machine, this operation included),
machine_remaining_ops, time (C*), n_candidates, n_jobs and n_machines.
Return one finite real number. priority() must be a pure function of op.
"""

import math  # noqa: F401  (available to the evolved block)


# EVOLVE-BLOCK-START
def priority(op) -> float:
    """MWKR: the job with the most work remaining first."""
    return float(op.remaining_work)


# EVOLVE-BLOCK-END
