"""How long an LLM outage a run rides out: failed iterations are asked again until the
endpoint has answered nothing for MAX_LLM_OUTAGE_S (on the LLM client's clock, a
FakeClock here: no real waiting); then the run ends, resumable."""

from __future__ import annotations

from evolve.pipeline import controller
from evolve.testing.scripted_llm import Reply, ScriptedLLM
from tests.test_llm_faults import GOOD, Run, _failed


def test_several_failed_calls_in_a_row_do_not_end_the_run(tmp_path):
    down = [Reply("down", status=502)] * 8  # four calls of two attempts each
    with ScriptedLLM.from_list([GOOD[0], *down], then=GOOD[1]) as srv:
        run = Run(tmp_path, srv.base_url, iterations=3, llm_retries=1)
        summary = run.go()
    assert summary.status == "finished" and summary.iterations_done == 3, summary
    assert run.ctl.stats.llm_failed == 4 and len(_failed(run.calls())) == 8


def test_an_outage_longer_than_the_window_ends_the_run(tmp_path, monkeypatch):
    monkeypatch.setattr(controller, "MAX_LLM_OUTAGE_S", 0.5)
    with ScriptedLLM.from_list([GOOD[0]], then=Reply("down", status=502)) as srv:
        run = Run(tmp_path, srv.base_url, iterations=5, llm_retries=1, llm_backoff_s=0.3)
        summary = run.go()
    assert summary.status == "failed" and "LLM endpoint unreachable" in (summary.reason or "")
    assert sum(run.clock.waits) >= 0.5  # the window passed on the LLM client's clock
    assert summary.iterations_done <= 1  # the one answered iteration, unless load delayed it
    assert run.archive.get_run("r")["status"] == "failed"  # resumable, never left "running"
