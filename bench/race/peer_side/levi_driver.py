"""Runs inside LEVI's venv: `python levi_driver.py SETTINGS.json` (written by bench/race/levi.py).

LEVI is a library (`levi.evolve_code`), so the race calls it from this script. Its budgets are
dollars, evaluations or seconds, not calls; the race prices every answered call at one
"dollar" and gives LEVI a budget of N dollars. LEVI then stops on its own after N calls, and
its notion of progress through the budget (which steers its paradigm-shift prompts) is the
share of calls spent. The client also refuses an (N+1)-th call with LEVI's own
BudgetLimitReached, so requests in flight when the budget runs out cannot overshoot it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import levi  # noqa: E402
import levi.artifacts.code  # noqa: E402
import scorer  # noqa: E402
from levi.clients.base import ClientResult  # noqa: E402
from levi.pipeline.state import BudgetLimitReached  # noqa: E402


class BudgetedLM(levi.LM):
    """levi.LM against the race's proxy, one dollar per answered call, at most `calls`."""

    def __init__(self, model: str, calls: int, **kwargs):
        super().__init__(model, **kwargs)
        self.calls = calls
        self.held = 0  # answered + in flight; one event loop, so no lock is needed

    async def acompletion(self, prompt, **kwargs) -> ClientResult:
        if self.held >= self.calls:
            raise BudgetLimitReached("the race's budget of LLM calls is spent")
        self.held += 1
        try:
            result = await super().acompletion(prompt, **kwargs)
        except BaseException:
            self.held -= 1  # not answered: not a call
            raise
        return ClientResult(text=result.text, cost=1.0)


def main(path: str) -> int:
    s = json.loads(Path(path).read_text())
    # LEVI's evaluate_code, plus a log line for candidates it fails before our scorer runs
    levi.artifacts.code.evaluate_code = scorer.levi_evaluate_code
    model = BudgetedLM("openai/local", s["calls"], api_base=s["api_base"], api_key="not-needed",
                       timeout=s["llm_timeout_s"])
    result = levi.evolve_code(
        s["problem_description"],
        function_signature=s["function_signature"],
        seed_program=s["seed_program"],
        score_fn=scorer.levi_score,
        model=model,
        budget_dollars=float(s["calls"]),
        output_dir=s["output_dir"],
        init=levi.InitConfig(**s["init"]),
        pipeline=levi.PipelineConfig(**s["pipeline"]),
    )
    print(json.dumps({"best_score": result.best_score, "total_evaluations": result.total_evaluations,
                      "total_cost": result.total_cost, "calls_answered": model.held}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
