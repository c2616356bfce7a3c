"""Baseline: greedy across zones; moves to the first zone with spot when preempted.

Only the EVOLVE-BLOCK: `evolve eval` completes it with seed.py's fixed code (the API
docstring and the constants SPOT, ON_DEMAND, NONE)."""

# EVOLVE-BLOCK-START
def decide(state):
    """Greedy across zones: stay on a running spot instance; when preempted (or idle), move to
    the first zone with spot; wait when no zone has spot; switch to on-demand only once the
    slack forces it, then stay."""
    if state.current == ON_DEMAND:
        return ON_DEMAND  # committed: the slack is gone
    if state.has_spot:
        zone = state.zone
    elif any(state.spot):
        zone = state.spot.index(True)
    else:
        zone = None
    if zone is not None:
        running = state.current == SPOT and zone == state.zone
        overhead = state.overhead_left if running else state.restart_overhead
        progress = max(0.0, state.gap - overhead)  # work this tick adds, even if preempted next
    else:
        progress = 0.0
    # Safe to spend this tick only if on-demand started at the next tick still finishes in time.
    if state.time_left - state.gap >= state.work_left - progress + state.restart_overhead + 1e-9:
        return NONE if zone is None else (SPOT, zone)
    return ON_DEMAND


# EVOLVE-BLOCK-END
