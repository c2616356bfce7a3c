"""Fixed helpers of the DAG scheduler: costs, ranks and the simulator (Timeline).

The same helpers as problems/dag_scheduling/seed.py's fixed code. Timeline does the
evaluator's arithmetic, so a schedule built with place() scores exactly the makespan it
reports. ordering.py and mapping.py import what they need from here.
"""

import bisect
import heapq
import math


def exec_time(wf, platform, i, p):
    """Seconds task i takes on processor p."""
    return wf["runtime"][i] / platform["speed"][p]


def comm_time(platform, nbytes, p, q):
    """Seconds to move nbytes from processor p to processor q (0 on the same processor)."""
    return 0.0 if p == q else nbytes / platform["bandwidth"][p][q]


def mean_exec_times(wf, platform):
    """Per task, its execution time averaged over the processors (HEFT's w-bar)."""
    inv = sum(1.0 / s for s in platform["speed"]) / len(platform["speed"])
    return [r * inv for r in wf["runtime"]]


def mean_bandwidth(platform):
    """The mean bandwidth over ordered pairs of distinct processors (HEFT's B-bar)."""
    m = len(platform["speed"])
    links = [platform["bandwidth"][p][q] for p in range(m) for q in range(m) if p != q]
    return sum(links) / len(links) if links else math.inf


def topological_order(wf):
    """Tasks with every parent before its children (smallest ready index first)."""
    indeg = [len(ps) for ps in wf["parents"]]
    ready = [i for i in range(wf["n"]) if indeg[i] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for c, _ in wf["children"][i]:
            indeg[c] -= 1
            if indeg[c] == 0:
                heapq.heappush(ready, c)
    return order


def upward_ranks(wf, platform):
    """HEFT's rank_u: w-bar_i + max over children j of (bytes_ij / B-bar + rank_u(j))."""
    w, bbar = mean_exec_times(wf, platform), mean_bandwidth(platform)
    rank = [0.0] * wf["n"]
    for i in reversed(topological_order(wf)):
        rank[i] = w[i] + max((b / bbar + rank[j] for j, b in wf["children"][i]), default=0.0)
    return rank


def downward_ranks(wf, platform):
    """CPOP's rank_d: max over parents j of (rank_d(j) + w-bar_j + bytes_ji / B-bar)."""
    w, bbar = mean_exec_times(wf, platform), mean_bandwidth(platform)
    rank = [0.0] * wf["n"]
    for i in topological_order(wf):
        rank[i] = max((rank[j] + w[j] + b / bbar for j, b in wf["parents"][i]), default=0.0)
    return rank


class Timeline:
    """The evaluator's simulator, incrementally: place tasks one after another.

    The same arithmetic as the trusted replay, so a schedule built with place()
    scores exactly the makespan this object reports.
    """

    def __init__(self, wf, platform):
        self.wf, self.platform = wf, platform
        self.busy = [[] for _ in platform["speed"]]  # per processor: sorted (start, finish)
        self.start = [None] * wf["n"]
        self.finish = [None] * wf["n"]
        self.proc = [None] * wf["n"]
        self.order = []  # the (task, processor) pairs placed so far: the schedule
        self.makespan = 0.0

    def ready_time(self, i, p):
        """When all of task i's input data can be on processor p (its parents placed)."""
        ready = 0.0
        bw = self.platform["bandwidth"]
        for j, nbytes in self.wf["parents"][i]:
            q = self.proc[j]
            arrive = self.finish[j] if q == p else self.finish[j] + nbytes / bw[q][p]
            if arrive > ready:
                ready = arrive
        return ready

    def est(self, i, p):
        """Earliest start of task i on processor p: insertion into the first idle gap that fits."""
        duration = exec_time(self.wf, self.platform, i, p)
        start = self.ready_time(i, p)
        for s, f in self.busy[p]:
            if start + duration <= s:
                break
            if f > start:
                start = f
        return start

    def eft(self, i, p):
        """Earliest finish of task i on processor p."""
        return self.est(i, p) + exec_time(self.wf, self.platform, i, p)

    def place(self, i, p):
        """Put task i on processor p at est(i, p); returns its finish time."""
        s = self.est(i, p)
        f = s + exec_time(self.wf, self.platform, i, p)
        self.start[i], self.finish[i], self.proc[i] = s, f, p
        bisect.insort(self.busy[p], (s, f))
        self.order.append((i, p))
        self.makespan = max(self.makespan, f)
        return f
