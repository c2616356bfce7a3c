"""Transaction scheduling: order transactions to minimise makespan (baseline: sequential).

Fixed API (the code outside the EVOLVE block): the evaluator calls
schedule(txns) once per workload. txns[i] is transaction i, a list of
operations, each a tuple: ("r", key) reads key, ("w", key) writes key,
("*", "") touches no shared key; keys are strings. Return an order: a list
holding every index 0..len(txns)-1 exactly once.

Cost model (the one the score uses; `Timeline` below implements it): every
operation takes one time unit and a transaction's operations run at
consecutive times from its start. Transactions are placed in the returned
order; each starts at the earliest time >= 1 at which each of its operations
on a key comes strictly after every conflicting operation on that key by the
transactions placed before it (write-write, write-read and read-write
conflict; read-read does not). Makespan = the time the last one ends.
"""

import random  # noqa: F401  (for policies: the seed samples with it)


class Timeline:
    """The scoring model, incrementally: place transactions one after another."""

    def __init__(self):
        self.last_read = {}  # key -> latest time a placed transaction reads it
        self.last_write = {}  # key -> latest time a placed transaction writes it
        self.makespan = 0

    def start_time(self, txn):
        """Earliest start of `txn` after everything placed so far."""
        start = 1
        for j, (kind, key) in enumerate(txn):
            if kind == "w":
                bound = max(self.last_write.get(key, 0), self.last_read.get(key, 0))
            elif kind == "r":
                bound = self.last_write.get(key, 0)
            else:
                continue
            start = max(start, bound - j + 1)
        return start

    def end_time(self, txn):
        """When `txn` would end if placed next."""
        return self.start_time(txn) + len(txn) - 1

    def place(self, txn):
        """Place `txn` next; returns its start time."""
        start = self.start_time(txn)
        for j, (kind, key) in enumerate(txn):
            if kind != "*":
                table = self.last_write if kind == "w" else self.last_read
                table[key] = max(table.get(key, 0), start + j)
        self.makespan = max(self.makespan, start + len(txn) - 1)
        return start

    def copy(self):
        other = Timeline()
        other.last_read, other.last_write = dict(self.last_read), dict(self.last_write)
        other.makespan = self.makespan
        return other


# EVOLVE-BLOCK-START
def schedule(txns):
    """Sequential: the transactions in the order they were submitted."""
    return list(range(len(txns)))


# EVOLVE-BLOCK-END
