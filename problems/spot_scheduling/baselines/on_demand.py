"""Spot instance scheduling policy for one deadline-bound job (Can't Be Late, NSDI'24).

Fixed API (the code outside the EVOLVE block): the evaluator calls
decide(state) once per tick (10 minutes) until the job is done or the deadline
passes, and runs what it returns for that tick: SPOT, ON_DEMAND or NONE.

state (times in hours, prices in $/hour; writing to it changes nothing):
  tick, elapsed        ticks / hours since the job was submitted
  gap                  tick length (1/6 h)
  deadline, time_left  the deadline, and deadline - elapsed
  work_total, work_done, work_left   hours of work (48 in all)
  restart_overhead     hours every (re)start of an instance costs before progress resumes
  overhead_left        overhead still to pay on the instance running now (0 if none)
  has_spot             whether a spot instance can be had during this tick
  current              what is running now: SPOT, ON_DEMAND or NONE (a spot instance
                       that was preempted at this tick shows as NONE)
  spot_price, on_demand_price        0.97 and 3.06
  memory               a dict kept across the ticks of one job (fresh for every job)

Rules: SPOT when has_spot is False is invalid. Switching to a different
instance type (or starting from NONE) pays restart_overhead; NONE releases the
instance. Work done is kept across preemptions. Missing the deadline in any
scenario fails the candidate. decide must depend only on state and
state.memory (no global state across jobs, no randomness).
"""

SPOT, ON_DEMAND, NONE = "SPOT", "ON_DEMAND", "NONE"


# EVOLVE-BLOCK-START
def decide(state):
    """Always on-demand: one start, no preemptions, the most expensive safe policy."""
    return ON_DEMAND


# EVOLVE-BLOCK-END
