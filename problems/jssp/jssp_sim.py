"""The job-shop problem's trusted code: instances, the Giffler-Thompson generator, the replay.

It lives beside evaluator.py (which imports it) so that the evaluator keeps only the
evaluate()/score() plumbing. Shared by `evaluator.evaluate()` (in the sandbox, driving
the candidate's priority() through the kit's proxy) and `score()` (a clean process that
never loads the candidate and replays every reported decision); a broken rule raises
kit.Invalid.

The generator (Giffler & Thompson 1960, active schedules), per instance:

1. Every unfinished job offers its next operation o, on machine m(o), with
   earliest start est(o) = max(job ready, machine ready) and earliest finish
   ect(o) = est(o) + p(o).
2. C* = min ect over those operations; m* = the machine of the lowest-indexed
   job whose operation reaches C*.
3. Conflict set = the offered operations on m* with est < C* (and the one that
   reaches C*, which matters only for a 0-length operation), in job order.
   With one member it is dispatched without asking; otherwise priority(op) is
   called once per member and the highest priority wins, ties to the lowest
   job index (the first maximum).
4. The winner starts at its est; its job and m* are busy until est + p.

Makespan = the last finish.
"""

from __future__ import annotations

import heapq
import math
import random
import re

from evaluators import kit

TRAIN_FILE = "jssp_train.json"  # abz, ft, la, orb: readable in every split
TEST_FILE = "jssp_test.json"  # ta, swv, yn: readable only in the held-out splits
FAMILIES = {
    "abz": TRAIN_FILE,
    "ft": TRAIN_FILE,
    "la": TRAIN_FILE,
    "orb": TRAIN_FILE,
    "swv": TEST_FILE,
    "ta": TEST_FILE,
    "yn": TEST_FILE,
}
QUICK = ("ft06", "ft10", "la01", "la16", "orb01", "abz5")  # the cascade's screen (train instances)
SPLITS: dict[str, tuple[str, ...]] = {  # split -> families (or, for quick, instance names)
    "quick": QUICK,
    "train": ("abz", "ft", "la", "orb"),
    "test": ("ta", "swv", "yn"),
    **{f: (f,) for f in FAMILIES},
}
HELD_OUT = ("test", "ta", "swv", "yn")  # the splits that may read TEST_FILE
PRIVATE_SEED = 7301  # the public part of the private test's seed (kit.seed mixes in the run's)

OP_FIELDS = (
    "job",  # the job's index in the instance, 0-based
    "op_index",  # the operation's position in its job, 0-based
    "machine",  # the machine it needs (m*, the same for every member of the conflict set)
    "processing_time",  # p(o)
    "earliest_start",  # est(o) = max(job_ready, machine_ready)
    "earliest_finish",  # est(o) + p(o)
    "job_ready",  # when the job's previous operation finishes (its arrival time on the machine)
    "machine_ready",  # when the machine finishes its last dispatched operation
    "remaining_work",  # sum of p over this operation and the job's later ones
    "remaining_ops",  # operations of the job not yet dispatched, this one included
    "job_total_work",  # sum of p over the whole job
    "machine_load",  # sum of p over the operations still to run on this machine, this one included
    "machine_remaining_ops",  # how many operations still need this machine, this one included
    "time",  # C*, the decision time: the earliest finish over all offered operations
    "n_candidates",  # size of the conflict set
    "n_jobs",
    "n_machines",
)


class Op:
    """The features of one operation of the conflict set, as priority() receives them."""

    __slots__ = OP_FIELDS
    fields = OP_FIELDS

    def __init__(  # noqa: PLR0913 - one argument per feature, assigned directly (it is hot)
        self,
        job: int,
        op_index: int,
        machine: int,
        processing_time: int,
        earliest_start: int,
        earliest_finish: int,
        job_ready: int,
        machine_ready: int,
        remaining_work: int,
        remaining_ops: int,
        job_total_work: int,
        machine_load: int,
        machine_remaining_ops: int,
        time: int,
        n_candidates: int,
        n_jobs: int,
        n_machines: int,
    ) -> None:
        self.job = job
        self.op_index = op_index
        self.machine = machine
        self.processing_time = processing_time
        self.earliest_start = earliest_start
        self.earliest_finish = earliest_finish
        self.job_ready = job_ready
        self.machine_ready = machine_ready
        self.remaining_work = remaining_work
        self.remaining_ops = remaining_ops
        self.job_total_work = job_total_work
        self.machine_load = machine_load
        self.machine_remaining_ops = machine_remaining_ops
        self.time = time
        self.n_candidates = n_candidates
        self.n_jobs = n_jobs
        self.n_machines = n_machines

    def __repr__(self) -> str:
        return "Op(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in OP_FIELDS) + ")"


class Instance:
    """One job-shop instance: machines[j][k] and durations[j][k] of job j's k-th operation, and
    ref, the optimum (or best known upper bound) the gap is measured against; for a run's
    private variant of a held-out instance (`private_variant`), a lower bound."""

    __slots__ = ("name", "machines", "durations", "ref", "optimal")

    def __init__(
        self, name: str, machines: list, durations: list, ref: float, optimal: bool = True
    ) -> None:
        self.name, self.machines, self.durations = name, machines, durations
        self.ref, self.optimal = ref, optimal

    @property
    def n_jobs(self) -> int:
        return len(self.machines)

    @property
    def n_machines(self) -> int:
        return len(self.machines[0])

    @property
    def size(self) -> str:
        return f"{self.n_jobs}x{self.n_machines}"


def family(name: str) -> str:
    """'la' for 'la01', 'ta' for 'ta71', 'abz' for 'abz5'."""
    m = re.match(r"[a-z]+", name)
    return m.group(0) if m else name


def _parse(name: str, raw: object, file: str) -> Instance:
    """One instance of the data file, checked (a square, consistent, job-shop matrix)."""
    try:
        assert isinstance(raw, dict)
        machines, durations, meta = raw["machines_matrix"], raw["duration_matrix"], raw["metadata"]
        n, m = len(machines), len(machines[0])
        assert n > 0 and m > 0 and len(durations) == n
        for mj, dj in zip(machines, durations, strict=True):
            assert sorted(mj) == list(range(m)) and len(dj) == m
            assert all(type(d) is int and d >= 0 for d in dj)  # orb07 has a 0
        ref = meta["optimum"] if meta.get("optimum") is not None else meta["upper_bound"]
        assert type(ref) is int and ref > 0
    except (AssertionError, KeyError, TypeError, IndexError):
        raise ValueError(f"{file}: instance {name} is malformed") from None
    return Instance(name, machines, durations, float(ref), meta.get("optimum") is not None)


def disguised(inst: Instance, seed: int) -> Instance:
    """The same instance under other names: its jobs shuffled, its machines relabelled and,
    for one draw in two, every job's route reversed. None of these changes the optimum (a
    schedule read backwards is a schedule of the reversed instance with the same makespan),
    so the published optimum or bound still measures the gap; but no decision state of the
    published instance (job, operation, machine, times) is one of its states."""
    rng = random.Random(seed)
    jobs, labels = list(range(inst.n_jobs)), list(range(inst.n_machines))
    rng.shuffle(jobs)
    rng.shuffle(labels)
    reverse = rng.random() < 0.5
    machines, durations = [], []
    for j in jobs:
        route = [(labels[mm], d) for mm, d in zip(inst.machines[j], inst.durations[j], strict=True)]
        route = route[::-1] if reverse else route
        machines.append([mm for mm, _ in route])
        durations.append([d for _, d in route])
    return Instance(inst.name, machines, durations, inst.ref, inst.optimal)


def perturbed(inst: Instance, seed: int) -> Instance:
    """The instance's routes with every processing time redrawn uniformly from the instance's
    own range [min, max] (Taillard's U[1, 99] for ta, U[1, 100] for swv, U[10, 50] for yn,
    as their generators draw them): a fresh draw of its family's generator on its routes, so
    no schedule memorised for the published instance fits it better than any other. Its
    optimum is unknown: ref is `lower_bound`, which no schedule can beat."""
    rng = random.Random(seed)
    low = min(min(d) for d in inst.durations)
    high = max(max(d) for d in inst.durations)
    durations = [[rng.randint(low, high) for _ in dj] for dj in inst.durations]
    out = Instance(inst.name, inst.machines, durations, 1.0, optimal=False)
    out.ref = float(max(1, lower_bound(out)))
    return out


def _one_machine_bound(ops: list[tuple[int, int, int]]) -> int:
    """max(C + q) of Jackson's preemptive schedule of (head r, p, tail q) operations on one
    machine (at each moment the released operation with the longest tail runs): the optimum
    of the preemptive one-machine relaxation, so a lower bound on any schedule's makespan."""
    ops = sorted(ops)
    ready: list[tuple[int, int, int]] = []  # (-q, p left, q)
    t = best = at = 0
    while at < len(ops) or ready:
        if not ready and t < ops[at][0]:
            t = ops[at][0]
        while at < len(ops) and ops[at][0] <= t:
            r, p, q = ops[at]
            heapq.heappush(ready, (-q, p, q))
            at += 1
        neg, left, q = heapq.heappop(ready)
        run = left if at == len(ops) else min(left, ops[at][0] - t)
        t += run
        if run < left:
            heapq.heappush(ready, (neg, left - run, q))
        else:
            best = max(best, t + q)
    return best


def lower_bound(inst: Instance) -> int:
    """A lower bound on the instance's optimal makespan: the largest one-machine preemptive
    bound with heads and tails (Carlier & Pinson's classic bound), which also covers the
    longest job and the most loaded machine."""
    per_machine: list[list[tuple[int, int, int]]] = [[] for _ in range(inst.n_machines)]
    for mj, dj in zip(inst.machines, inst.durations, strict=True):
        total, head = sum(dj), 0
        for mm, d in zip(mj, dj, strict=True):
            per_machine[mm].append((head, d, total - head - d))
            head += d
    return max(_one_machine_bound(ops) for ops in per_machine)


def private_variant(split: str) -> bool:
    """Whether the split's instances are the run's private variants (held out, under a run's
    private data seed): disguised and perturbed, their gaps measured against lower bounds."""
    return split in HELD_OUT and kit.private_data()


def make_instances(split: str) -> list[Instance]:
    """The split's instances, in the data files' order (family by family, name order). Under
    a run's private data seed the held-out ones are private variants: disguised, then their
    processing times redrawn (Taillard's instances come from a published generator and
    seeds, and every held-out instance has published optimal schedules: a candidate could
    rebuild one, or recognise it, and replay a memorised answer)."""
    out = _published_instances(split)
    if private_variant(split):
        out = [
            perturbed(
                disguised(inst, kit.seed(PRIVATE_SEED, inst.name)),
                kit.seed(PRIVATE_SEED, inst.name, "times"),
            )
            for inst in out
        ]
    return out


def _published_instances(split: str) -> list[Instance]:
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {list(SPLITS)}")
    names = SPLITS[split]
    files = sorted({FAMILIES[family(n)] for n in names})
    out = []
    for file in files:
        data = kit.read_json(kit.data_path(__file__, file))
        if not isinstance(data, dict):
            raise ValueError(f"{file}: expected an object of instances")
        for name in sorted(data):
            if (split == "quick" and name in names) or (split != "quick" and family(name) in names):
                out.append(_parse(name, data[name], file))
    if not out:
        raise ValueError(f"split {split!r}: no instances in the data files")
    return out


class GT:
    """The Giffler-Thompson generator on one instance, one decision at a time."""

    def __init__(self, inst: Instance) -> None:
        self.inst = inst
        n, m = inst.n_jobs, inst.n_machines
        self.next = [0] * n  # next operation per job
        self.next_machine = [mj[0] for mj in inst.machines]
        self.next_duration = [dj[0] for dj in inst.durations]
        self.live = list(range(n))  # the unfinished jobs
        self.job_ready = [0] * n
        self.machine_ready = [0] * m
        self.job_work = [sum(d) for d in inst.durations]
        self.job_left = list(self.job_work)  # work remaining per job
        self.machine_load = [0] * m
        self.machine_ops = [0] * m
        for mj, dj in zip(inst.machines, inst.durations, strict=True):
            for mm, d in zip(mj, dj, strict=True):
                self.machine_load[mm] += d
                self.machine_ops[mm] += 1
        self.makespan = 0
        self.steps = 0
        self.sequence: list[int] = []  # the dispatched job per step
        self.total = n * m

    @property
    def done(self) -> bool:
        return self.steps == self.total

    def conflict(self) -> tuple[list[int], int, int]:
        """(the conflict set's jobs in index order, m*, C*)."""
        nm, nd, jr, mr = self.next_machine, self.next_duration, self.job_ready, self.machine_ready
        live = self.live  # unfinished jobs, in index order
        assert live, "conflict() on a finished schedule"
        ests = [jr[j] if jr[j] > mr[nm[j]] else mr[nm[j]] for j in live]
        ects = [e + nd[j] for e, j in zip(ests, live, strict=True)]
        c_star = min(ects)
        best = live[ects.index(c_star)]  # the lowest-indexed job reaching C*
        m_star = nm[best]
        jobs = [
            j
            for j, est in zip(live, ests, strict=True)
            if nm[j] == m_star and (est < c_star or j == best)
        ]  # `j == best`: an operation of length 0 (orb07 has one) has est == C*
        return jobs, m_star, c_star

    def features(self, jobs: list[int], m_star: int, c_star: int) -> list[Op]:
        inst, out = self.inst, []
        for j in jobs:
            k = self.next[j]
            p = inst.durations[j][k]
            est = max(self.job_ready[j], self.machine_ready[m_star])
            out.append(
                Op(
                    j,
                    k,
                    m_star,
                    p,
                    est,
                    est + p,
                    self.job_ready[j],
                    self.machine_ready[m_star],
                    self.job_left[j],
                    inst.n_machines - k,
                    self.job_work[j],
                    self.machine_load[m_star],
                    self.machine_ops[m_star],
                    c_star,
                    len(jobs),
                    inst.n_jobs,
                    inst.n_machines,
                )
            )
        return out

    def dispatch(self, j: int) -> None:
        k = self.next[j]
        mm, p = self.next_machine[j], self.next_duration[j]
        finish = max(self.job_ready[j], self.machine_ready[mm]) + p
        self.job_ready[j] = self.machine_ready[mm] = finish
        self.next[j] = k + 1
        if k + 1 < self.inst.n_machines:
            self.next_machine[j] = self.inst.machines[j][k + 1]
            self.next_duration[j] = self.inst.durations[j][k + 1]
        else:
            self.live.remove(j)
        self.job_left[j] -= p
        self.machine_load[mm] -= p
        self.machine_ops[mm] -= 1
        self.makespan = max(self.makespan, finish)
        self.steps += 1
        self.sequence.append(j)

    def advance(self) -> tuple[list[int], list[Op]] | None:
        """Dispatch forced decisions (a conflict set of one) until a choice is due; then the
        choice's jobs and features, or None when the schedule is complete."""
        while not self.done:
            jobs, m_star, c_star = self.conflict()
            if len(jobs) > 1:
                return jobs, self.features(jobs, m_star, c_star)
            self.dispatch(jobs[0])
        return None


def as_priority(raw: object) -> float:
    """Validate one priority() return: a finite real number."""
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        try:
            import numpy as np  # numpy scalars count as numbers

            ok = isinstance(raw, (np.integer, np.floating)) and not isinstance(raw, np.bool_)
        except ImportError:  # pragma: no cover - numpy is in every sandbox
            ok = False
        if not ok:
            raise kit.Invalid(
                f"priority() must return a real number (int or float), got {type(raw).__name__}"
            )
    value = float(raw)  # type: ignore[arg-type]
    if not math.isfinite(value):
        raise kit.Invalid("priority() returned NaN or infinity; every priority must be finite")
    return value


def _choose(raws: list, inst: Instance, step: int, jobs: list[int]) -> int:
    """The position of the first maximum priority in the conflict set, validating each return."""
    try:
        values = [as_priority(r) for r in raws]
    except kit.Invalid as e:
        raise kit.Invalid(
            f"instance {inst.name}, step {step} (conflict set: jobs {jobs}): {e}"
        ) from None
    return values.index(max(values))


def schedule(priority, instances: list[Instance], sample_at=()) -> tuple[list[list[int]], list]:
    """Run the generator on every instance with `priority` (the kit's proxy or a plain function).

    The instances advance side by side: at each round every instance with a
    choice due sends its conflict set, all in one batch (one round trip to the
    candidate's process). Returns the dispatched job per step of each instance
    and, for each (instance, choice number) in `sample_at`, (features, chosen
    position) for the purity replay.
    """
    priority = kit.proxy(priority)
    gens = [GT(inst) for inst in instances]
    sample_at = set(sample_at)
    samples = []
    choices = [0] * len(gens)
    pending = {k: g.advance() for k, g in enumerate(gens)}
    while True:
        live = [(k, due) for k, due in pending.items() if due is not None]
        if not live:
            break
        calls = [(op,) for _, (_, ops) in live for op in ops]
        raws = priority.map(calls)
        at = 0
        for k, (jobs, ops) in live:
            pos = _choose(raws[at : at + len(jobs)], instances[k], gens[k].steps, jobs)
            at += len(jobs)
            if (k, choices[k]) in sample_at:
                samples.append((ops, pos))
            choices[k] += 1
            gens[k].dispatch(jobs[pos])
            pending[k] = gens[k].advance()
    return [g.sequence for g in gens], samples


def replay(inst: Instance, sequence: object) -> int:
    """Trusted side: the makespan of a reported dispatch sequence, every step checked against
    the generator's conflict set; kit.Invalid otherwise."""
    total = inst.n_jobs * inst.n_machines
    if not isinstance(sequence, list) or len(sequence) != total:
        raise kit.Invalid(
            f"instance {inst.name}: expected a list of {total} job indices, one per operation"
        )
    gen = GT(inst)
    for step, j in enumerate(sequence):
        if type(j) is not int:
            raise kit.Invalid(f"instance {inst.name}, step {step}: job indices must be integers")
        jobs, _, _ = gen.conflict()
        if j not in jobs:
            raise kit.Invalid(
                f"instance {inst.name}, step {step}: job {j} is not in the Giffler-Thompson "
                f"conflict set {jobs}"
            )
        gen.dispatch(j)
    return gen.makespan
