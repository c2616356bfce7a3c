"""Multi-zone spot instance scheduling policy for one deadline-bound job (seed: Uniform Progress, one zone).

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
    """Uniform Progress (Can't Be Late, NSDI'24) in the starting zone; never moves.

    Keep pace with the line work_total * elapsed / deadline: spot whenever
    available; without spot, on-demand if the job is behind the line, else
    wait. Once on on-demand, stay there while spot is missing or the job would
    not be ahead of the line even 2 restart overheads from now (hysteresis). A
    safety net forces on-demand when one more lost tick could make the deadline
    unreachable.
    """
    rate = state.work_total / state.deadline
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
