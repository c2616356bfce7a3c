"""Multi-zone spot instance scheduling policy for one deadline-bound job (ADRS multi-region Can't Be Late).

Fixed API (the code outside the EVOLVE block): the evaluator calls
decide(state) once per tick (195 s) until the job is done or the deadline
passes, and runs what it returns for that tick: SPOT, ON_DEMAND or NONE in the
current zone, or a pair (SPOT or ON_DEMAND, zone index) to run in that zone.

state (times in hours, prices in $/hour; writing to it changes nothing):
  tick, elapsed        ticks / hours since the job was submitted
  gap                  tick length (195 s = 0.0542 h)
  deadline, time_left  the deadline, and deadline - elapsed
  work_total, work_done, work_left   hours of work (48 in all)
  restart_overhead     hours every start of an instance costs before progress resumes
  overhead_left        overhead still to pay on the instance running now (0 if none)
  zones, n_zones       the zone names of this scenario (2 to 9 AWS zones), and how many
  spot                 tuple of bools: spot available in each zone during this tick
  zone                 the zone of the instance running now (or of the last one; 0 at first)
  has_spot             spot[zone]
  current              what is running now: SPOT, ON_DEMAND or NONE (a spot instance
                       that was preempted at this tick shows as NONE)
  spot_price, on_demand_price        0.97 and 3.06 (the same in every zone)
  memory               a dict kept across the ticks of one job (fresh for every job)

Rules: SPOT in a zone whose spot entry is False is invalid. Starting an
instance, switching between SPOT and ON_DEMAND, or moving to another zone pays
restart_overhead; NONE releases the instance. Work done is kept across
preemptions and moves. Missing the deadline in any scenario fails the
candidate. decide must depend only on state and state.memory (no global state
across jobs, no randomness).
"""

SPOT, ON_DEMAND, NONE = "SPOT", "ON_DEMAND", "NONE"


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
