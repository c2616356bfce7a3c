"""Baseline: Uniform Progress, the policy of Can't Be Late (NSDI'24).

Only the EVOLVE-BLOCK: `evolve eval` completes it with seed.py's fixed code (the API
docstring and the constants SPOT, ON_DEMAND, NONE)."""

# EVOLVE-BLOCK-START
def decide(state):
    """Uniform Progress (Can't Be Late, NSDI'24): keep pace with the line work_total * t / deadline.

    Spot whenever available. Without spot: on-demand if the job is behind the
    line, else wait. Once on on-demand, stay there while spot is missing or the
    job would not be ahead of the line even 2 restart overheads from now
    (hysteresis against flapping). A safety net forces on-demand when one more
    lost tick could make the deadline unreachable.
    """
    rate = state.work_total / state.deadline  # hours of work per hour on the uniform-progress line
    behind = state.work_done < state.elapsed * rate
    if state.has_spot:
        choice = SPOT
    else:
        choice = ON_DEMAND if behind else NONE
    if state.current == ON_DEMAND and (
        not state.has_spot or state.work_done < (state.elapsed + 2 * state.restart_overhead) * rate
    ):
        choice = ON_DEMAND
    if choice == ON_DEMAND:
        return ON_DEMAND
    if choice == SPOT:
        overhead = state.overhead_left if state.current == SPOT else state.restart_overhead
        progress = max(0.0, state.gap - overhead)
    else:
        progress = 0.0
    if state.time_left - state.gap >= state.work_left - progress + state.restart_overhead + 1e-9:
        return choice
    return ON_DEMAND


# EVOLVE-BLOCK-END
