"""What one finished run did with its LLM calls, read back from the archive.

Per answered call (failed attempts are not calls): did it give a valid program, a program
not evaluated before in the run (by normalised code hash, the controller's own test for a
clone), a duplicate, or a valid program whose train score no earlier program of the run has
(behaviourally new: a rewrite that changed the code but not what it does is not)? A reply
rejected as a clone (`rejected_duplicate`) or one that gave no program yields nothing new.

A tuned child (evolve/search/tune.py: the numbers of a model-written program scaled, no call)
belongs to the call that wrote the program it descends from: that call's point of the curve
counts it, and `tuned`, `tuned_new` say how many there were and how many behaved unlike
every earlier program. The per-call yields count the call's own program only.

An agent's turns are answered calls like any other (`calls`), so an agent row and a
single-call row compare on the same budget; `evaluations` counts candidates evaluated on
train (each call's program, tuned children), `agent_evals` the train evaluations agents ran
inside their sessions before submitting (evolve/agent/transcript.py), which are not candidates.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from evolve.agent import transcript
from evolve.archive import ArchiveReader, CallOutcome, ProgramRow, ProgramStatus
from evolve.benchmark.curve import Candidate, best_so_far
from evolve.benchmark.normalise import References
from evolve.search.tune import KIND as TUNED

# A candidate with one of these was never run on train
NOT_EVALUATED = (ProgramStatus.PENDING, ProgramStatus.INVALID_EDIT, ProgramStatus.DUPLICATE)
# Train scores equal to this many significant digits are the same behaviour.
DIGITS = 12


@dataclass
class RunResult:
    """One run of a benchmark; stored as `bench_runs.result_json`."""

    seed: int
    run_id: str
    status: str  # the run's: finished | stopped | failed | ... | missing
    exit_code: int
    calls: int = 0  # answered LLM calls
    valid: int = 0  # calls that gave a valid program
    new_programs: int = 0  # calls whose program was not evaluated before in the run
    behaviourally_new: int = 0  # calls whose valid program has a train score not seen before
    duplicates: int = 0  # calls whose program had already been evaluated (or was rejected so)
    tuned: int = 0  # tuned children evaluated (no call)
    tuned_new: int = 0  # of them, valid with a train score not seen before
    tokens: int = 0
    evaluations: int = 0  # candidates evaluated on train (a call's program or a tuned child)
    agent_sessions: int = 0  # agent iterations (--proposer agent); their turns are `calls`
    agent_evals: int = 0  # train evaluations run inside agent sessions (not candidates)
    wall_s: float = 0.0
    held_out: float | None = None  # the held-out score of the run's best train program
    normalised: float | None = None
    held_out_curve: list[float | None] = field(default_factory=list)  # after 0..calls calls
    curve: list[float | None] = field(default_factory=list)  # the same, normalised
    error: str | None = None

    def share(self, count: int) -> float | None:
        return None if self.calls == 0 else count / self.calls

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> RunResult:
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in known})


def score_key(score: float) -> float:
    return float(f"{score:.{DIGITS}g}")


def _tuned_by_call(programs: list[ProgramRow]) -> dict[int, list[ProgramRow]]:
    """The tuned children of a run under the call that wrote their model-written ancestor,
    in the order they were stored."""
    by_id = {p.program_id: p for p in programs}
    out: dict[int, list[ProgramRow]] = {}
    for p in sorted((p for p in programs if p.kind == TUNED), key=lambda p: p.created_at):
        root = by_id.get(p.parent_id or "")
        while root is not None and root.kind == TUNED:
            root = by_id.get(root.parent_id or "")
        if root is not None and root.llm_call_id is not None:
            out.setdefault(root.llm_call_id, []).append(p)
    return out


def measure(
    reader: ArchiveReader,
    run_id: str,
    seed: int,
    refs: References,
    exit_code: int,
    wall_s: float,
    error: str | None = None,
) -> RunResult:
    summary = reader.run(run_id)
    if summary is None:  # the run never started (bad input): nothing to read
        return RunResult(seed, run_id, "missing", exit_code, wall_s=wall_s, error=error)
    out = RunResult(seed, run_id, summary.status, exit_code, wall_s=wall_s, error=error)
    seed_row = reader.program(summary.seed_program_id) if summary.seed_program_id else None
    seen_hashes: set[str] = set()
    seen_scores: set[float] = set()
    seed_cand: Candidate | None = None
    if seed_row is not None:
        if seed_row.code_hash:
            seen_hashes.add(seed_row.code_hash)
        if seed_row.status == ProgramStatus.OK and seed_row.score is not None:
            seen_scores.add(score_key(seed_row.score))
            seed_cand = Candidate(seed_row.score, seed_row.test_score, seed_row.created_at)
    per_call: list[Candidate | None] = []
    programs = reader.programs(run_id)
    tuned = _tuned_by_call(programs)
    out.evaluations = sum(p.iteration > 0 and p.status not in NOT_EVALUATED for p in programs)
    agents = transcript.run_counts(reader, run_id)
    out.agent_sessions, out.agent_evals = agents.sessions, agents.evaluations
    for c in reader.answered_calls(run_id):
        out.calls += 1
        cand = None
        clone = c.outcome == CallOutcome.REJECTED_DUPLICATE or c.status == ProgramStatus.DUPLICATE
        if c.code_hash is not None and not clone:
            clone = c.code_hash in seen_hashes
            out.new_programs += not clone
            seen_hashes.add(c.code_hash)
        out.duplicates += clone
        if c.status == ProgramStatus.OK and c.score is not None:
            out.valid += 1
            key = score_key(c.score)
            out.behaviourally_new += key not in seen_scores
            seen_scores.add(key)
            cand = Candidate(c.score, c.test_score, c.created_at or 0.0)
        for t in tuned.get(c.call_id, []):
            out.tuned += 1
            if t.status == ProgramStatus.OK and t.score is not None:
                key = score_key(t.score)
                out.tuned_new += key not in seen_scores
                seen_scores.add(key)
                tc = Candidate(t.score, t.test_score, t.created_at)
                if cand is None or (tc.score, -tc.created_at) > (cand.score, -cand.created_at):
                    cand = tc
        per_call.append(cand)
    out.tokens = reader.tokens(run_id)
    out.held_out = summary.best_test_score
    out.normalised = refs.normalised(out.held_out)
    out.held_out_curve = best_so_far(seed_cand, per_call)
    out.curve = [refs.normalised(v) for v in out.held_out_curve]
    return out
