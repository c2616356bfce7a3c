"""What one call yields, per prompt variant and temperature, from the seed of one problem.

    python bench/prompt_probe.py [--problem problems/binpack] [--model local] [--replies 12]
                                 [--variants block@0.7 funsearch@1.0 ...] [--out FILE]

A variant is STYLE@TEMPERATURE[+feedback], STYLE one of the prompt styles (short, funsearch,
full); +feedback shows, as a run does, the seed's evaluator feedback and what became of the
variant's last three replies; +status the same without the replies' error texts.
For each, the seed is the parent (as in a run's first iterations), each reply gets one of
the problem's hints in turn, and every reply is classified as a run would: the edit does
not apply, a clone (its normalised code is the seed's or an earlier reply's of the same
variant), or new. A new program is scored on the train split by `evolve eval`: valid, and
behaviourally new when no earlier program of the variant (the seed included) had its
train score to 12 significant digits. A quick way to compare prompts and temperatures
without whole runs; the runs (search_yield.py) say what a search makes of it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

import openai  # noqa: E402
from harness import result_path  # noqa: E402

from evolve.archive import ProgramStatus  # noqa: E402
from evolve.edits import apply_reply, normalized_hash  # noqa: E402
from evolve.llm import local_model as lm  # noqa: E402
from evolve.llm.context_budget import TokenBudget  # noqa: E402
from evolve.llm.profiles import is_local, profile_for  # noqa: E402
from evolve.pipeline.candidates import new_row  # noqa: E402
from evolve.pipeline.proposal import funsearch_context, shown  # noqa: E402
from evolve.problem.load import load_problem  # noqa: E402
from evolve.search.population import REPEATED, SAME_AS_PARENT, Attempt  # noqa: E402
from evolve.search.prompts import PromptBuilder, PromptContext, evolving_code  # noqa: E402
from evolve.search.versions import block_functions, unversioned  # noqa: E402


def score(problem_dir: Path, path: Path, split: str | None = None) -> dict:
    """`evolve eval` of one program file (the problem's train split unless `split`): its
    status, score, error and feedback hint."""
    out = subprocess.run(
        [sys.executable, "-m", "evolve.cli", "eval", str(problem_dir), str(path), "--json"]
        + (["--split", split] if split else []),
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    try:
        res = json.loads(out.stdout)
    except ValueError:
        return {"status": "eval_failed", "score": None, "error": out.stderr.strip()[-300:]}
    arts = res.get("artifacts") or {}
    error = arts.get("error") or arts.get("traceback") or ""
    return {
        "status": res.get("status"),
        "score": res.get("score"),
        "error": error[-300:],
        "hint": arts.get("hint", ""),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problem", type=Path, default=ROOT / "problems" / "binpack")
    ap.add_argument("--model", default="local")
    ap.add_argument("--base-url", help="an OpenAI-compatible server (default: start the local one)")
    ap.add_argument("--replies", type=int, default=12)
    ap.add_argument("--variants", nargs="+", default=["short@0.4", "short@0.7", "short@1.0"])
    ap.add_argument("--work", type=Path, default=Path("/tmp/prompt-probe"))
    ap.add_argument("--out", type=Path, default=result_path("prompt_probe"))
    a = ap.parse_args(argv)

    problem = load_problem(a.problem)
    prof = profile_for(a.model)
    a.work.mkdir(parents=True, exist_ok=True)
    suffix = Path(problem.entry).suffix

    def score_code(code: str, n: int) -> dict:
        path = a.work / f"p{n}{suffix}"
        path.write_text(code)
        return score(a.problem, path)

    seed_code = (a.problem / problem.entry).read_text()
    seed_eval = score_code(seed_code, 0)
    seed = new_row("probe", problem, 0, 0, seed_code)
    seed.status, seed.score = ProgramStatus.OK, seed_eval["score"]
    with_feedback = replace(
        seed, artifacts={"hint": seed_eval["hint"]} if seed_eval["hint"] else {}
    )
    print(f"seed: {seed_eval}", flush=True)

    base_url = a.base_url
    if base_url is None and is_local(a.model):
        base_url = lm.start_server(a.model, prof.context_window).base_url
    client = openai.OpenAI(base_url=base_url, api_key="none", timeout=900)
    hints = problem.hints or [""]
    names = block_functions(seed_code)
    rows, n = [], 0
    for variant in a.variants:
        style, temp = variant.split("@")
        temp, _, extra = temp.partition("+")
        # +feedback: as in a run, the seed with its evaluator feedback and what became of the
        # variant's last three replies (population.py's summaries)
        # +status: the same without the replies' error texts (their status only)
        parent = with_feedback if extra in ("feedback", "status") else seed
        attempts: list[Attempt] = []
        builder = PromptBuilder(
            problem, TokenBudget.for_model(prof.context_window, prof.max_tokens), style, 1, 3
        )
        seen = {normalized_hash(seed_code, problem.language)}
        scores = {f"{seed.score:.12g}"}
        counts = dict(calls=0, unapplied=0, clone=0, new=0, valid=0, behaviour_new=0)
        lat, toks, better, replies = [], [], 0, []
        for k in range(a.replies):
            ctx = PromptContext(
                parent=shown(parent, full=True),
                edit_format="block",
                hint=hints[k % len(hints)],
                attempts=attempts[-3:] if extra in ("feedback", "status") else [],
            )
            if style == "funsearch":
                ctx = funsearch_context(ctx, seed, [])
            t0 = time.monotonic()
            resp = client.chat.completions.create(
                model=a.model,
                messages=builder.build(ctx),  # type: ignore[arg-type]
                temperature=float(temp),
                max_tokens=prof.max_tokens,
                seed=1000 + k,
            )
            lat.append(time.monotonic() - t0)
            toks.append(resp.usage.completion_tokens if resp.usage else 0)
            reply = resp.choices[0].message.content or ""
            if ctx.edit_format == "funsearch":
                reply = unversioned(reply, names)
            counts["calls"] += 1
            edit = apply_reply(seed_code, reply, "block")
            if not edit.ok or edit.code is None:
                counts["unapplied"] += 1
                error = "" if extra == "status" else edit.error or ""
                attempts.append(Attempt(k, ProgramStatus.INVALID_EDIT, None, error))
                continue
            h = normalized_hash(edit.code, problem.language)
            if h in seen:
                counts["clone"] += 1
                attempts.append(Attempt(k, ProgramStatus.DUPLICATE, None, REPEATED))
                continue
            seen.add(h)
            counts["new"] += 1
            n += 1
            res = score_code(edit.code, n)
            replies.append({"block": evolving_code(edit.code), **res})
            same = res["score"] == seed.score
            error = "" if extra == "status" else (res["error"].strip().splitlines() or [""])[-1]
            summary = SAME_AS_PARENT if same else error
            status = (
                res["status"]
                if res["status"] in set(ProgramStatus)
                else ProgramStatus.SANDBOX_ERROR
            )
            attempts.append(Attempt(k, ProgramStatus(status), res["score"], summary[:200]))
            if res["status"] == "ok" and res["score"] is not None:
                counts["valid"] += 1
                key = f"{res['score']:.12g}"
                counts["behaviour_new"] += key not in scores
                better += res["score"] > seed.score
                scores.add(key)
        row = {
            "variant": variant,
            **counts,
            "better_than_seed": better,
            "median_latency_s": round(statistics.median(lat), 1),
            "median_completion_tokens": statistics.median(toks),
            "new_programs": replies,
        }
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "new_programs"}), flush=True)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(
        json.dumps(
            {"problem": problem.name, "model": a.model, "seed": seed_eval, "rows": rows}, indent=1
        )
    )
    print(
        "\n| variant | calls | edit not applied | clone | new | valid | behaviourally new | better than seed | median s | median reply tokens |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        c = r["calls"] or 1
        print(
            f"| {r['variant']} | {r['calls']} | {r['unapplied']} | {100 * r['clone'] // c}% | {100 * r['new'] // c}%"
            f" | {100 * r['valid'] // c}% | {100 * r['behaviour_new'] // c}% | {r['better_than_seed']}"
            f" | {r['median_latency_s']} | {r['median_completion_tokens']} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
