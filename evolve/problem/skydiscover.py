"""Load a SkyDiscover folder in its containerized layout, and recognise Harbor tasks.

A SkyDiscover benchmark (its repository since March 2026) holds initial_program.py,
config.yaml and evaluator/ with evaluate.sh, a Dockerfile and usually evaluator.py,
wrapper.py and requirements.txt. SkyDiscover runs `evaluate.sh PROGRAM train` in the loop
and `test` for its final scoring, with evaluator/ at /benchmark; so does evolve, in its
own sandbox (evaluators/inside/skydiscover_run.py), the test mode being the held-out
re-scoring. The Dockerfile is read, never built (evolve/problem/skydiscover_dockerfile.py).
A folder that also has an evaluator.py beside the seed runs that one, as SkyDiscover's
quick start does (evolve/problem/load.py dispatches it as OpenEvolve format).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from evaluators.docker.dockerfile_pip import dockerfile_packages
from evolve.edits.blocks import find_blocks
from evolve.problem.config import llm_defaults, read_config
from evolve.problem.model import Problem, ProblemError, Stage
from evolve.problem.skydiscover_dockerfile import read_dockerfile
from evolve.problem.skydiscover_keys import apply
from evolve.settings import OpenEvolveConfig
from evolve.settings.environ import resolve_env
from evolve.settings.errors import SettingsError
from evolve.settings.overrides import Overrides

EVALUATOR_DIR = "evaluator"
SCRIPT = "evaluate.sh"
TIMEOUT_S = 360.0  # SkyDiscover's EvaluatorConfig.timeout
HARBOR = ("task.toml", "instruction.md", "tests/test.sh")
SeedReader = Callable[[Overrides, Path, str, str, Path], tuple[Path, str]]
NOT_INDEPENDENT = (
    "evaluate.sh ignores its mode (train and test run the same evaluation): held-out "
    "scores are not independent of the scores the search optimised"
)


def is_skydiscover(root: Path) -> bool:
    """evaluator/evaluate.sh: SkyDiscover's containerized layout."""
    return (root / EVALUATOR_DIR / SCRIPT).is_file()


def is_harbor(root: Path) -> bool:
    """A Harbor task (task.toml, instruction.md, tests/test.sh)."""
    return all((root / name).is_file() for name in HARBOR)


def refuse_harbor(shown: Path) -> ProblemError:
    return ProblemError(
        f"{shown}: a Harbor task (task.toml, instruction.md, tests/test.sh) is not supported: "
        "it has no seed program to evolve, and its environment/ Dockerfile asks for a base "
        "image evolve's sandbox does not provide"
    )


def mode_ignored(script: str) -> bool:
    """evaluate.sh never reads its second argument (comments aside): test is train."""
    code = "\n".join(ln for ln in script.splitlines() if not ln.lstrip().startswith("#"))
    return not re.search(r"\$(?:2|\{2[^}]*\}|@|\*|\{@\}|\{\*\})", code)


def load_skydiscover(root: Path, shown: Path, ov: Overrides, read_seed: SeedReader) -> Problem:
    """The folder's Problem: evaluate.sh's combined_score maximised on train, re-scored
    on test; SkyDiscover's timeout (360 s), a memory limit of 4096 MB (it sets none)."""
    read = read_config(root, shown, ov)
    cfg, cfg_path = read.config, read.shown
    bench, bench_shown = root / EVALUATOR_DIR, shown / EVALUATOR_DIR
    suffix = cfg.file_suffix or ".py"
    entry = cfg.evolve.initial_program or "initial_program" + suffix
    if ov.initial_program is None and not (root / entry).is_file():
        raise ProblemError(
            f"{shown}: no {entry}; name the seed program with --initial-program PATH"
        )
    seed_path, seed_code = read_seed(ov, root, entry, str(shown), shown)
    plan = read_dockerfile(bench / "Dockerfile", bench_shown / "Dockerfile") if (
        bench / "Dockerfile"
    ).is_file() else None  # fmt: skip
    script = (bench / SCRIPT).read_text(encoding="utf-8", errors="replace")
    same = mode_ignored(script)
    try:
        env = {
            **(plan.env if plan else {}),
            **resolve_env(cfg.evolve.env, f"{cfg_path}: evolve.env"),
        }
    except SettingsError as e:
        raise ProblemError(str(e)) from None
    notices = [*read.notices, *(plan.notes if plan else ())]
    if same:
        notices.append(f"{bench_shown / SCRIPT}: {NOT_INDEPENDENT}")
    llm = cfg.llm
    problem = Problem(
        name=root.name,
        description=f"SkyDiscover-format problem {root.name}",
        root=root,
        fmt="skydiscover",
        entry=seed_path.name,
        seed_code=seed_code,
        metric="combined_score",
        direction="maximize",
        domain_notes=cfg.prompt.system_message or "",
        timeout_s=cfg.evaluator.timeout or TIMEOUT_S,
        memory_mb=cfg.evaluator.memory_limit_mb or 4096,
        splits=("train", "test"),
        train_split="train",
        test_split="test",
        cascade=(Stage(split="train"),),
        feature_dims=("code_length", "diversity"),
        feature_bins=8,
        iterations=cfg.max_iterations,
        llm=llm_defaults(llm),
        env=env,
        parallel=cfg.evaluator.parallel_evaluations,
        seed=cfg.random_seed,
        search=cfg.evolve.search.settings(),
        seed_path=seed_path,
        config_file=read.path,
        notices=tuple(notices),
        max_code_bytes=cfg.max_code_length or 64 * 1024,
        edit_format=None
        if cfg.diff_based_evolution is None
        else ("diff" if cfg.diff_based_evolution else "full"),
        whole_file=not find_blocks(seed_code),  # SkyDiscover rewrites an unmarked seed whole
        benchmark=EVALUATOR_DIR,
        test_is_train=same,
    )
    return apply(problem, cfg, skydiscover=True)


def with_keys(problem: Problem, cfg: OpenEvolveConfig, shown: Path) -> Problem:
    """An OpenEvolve-format folder's Problem with the SkyDiscover keys its config sets;
    one that also has evaluator/ (SkyDiscover ships both) says which evaluator runs."""
    problem = apply(problem, cfg, skydiscover=False)
    if not is_skydiscover(problem.root):
        return problem
    line = (
        f"{shown / EVALUATOR_DIR}: SkyDiscover's containerized evaluator, not used: "
        "evaluator.py runs, as in SkyDiscover's quick start"
    )
    return replace(problem, notices=(*problem.notices, line))


def held_out_note(problem: Problem) -> str | None:
    """What the run page says of held-out scores (None: they are independent)."""
    return NOT_INDEPENDENT if problem.test_is_train else None


def describe_lines(problem: Problem) -> list[str]:
    """`evolve check`'s lines: how candidates are scored."""
    bench = problem.root / EVALUATOR_DIR
    lines = [
        f"  evaluator: {EVALUATOR_DIR}/{SCRIPT} PROGRAM train (held-out: test), run in "
        f"/benchmark (the folder's {EVALUATOR_DIR}/, read-only); score: its combined_score"
    ]
    if (bench / "requirements.txt").is_file():
        lines.append(
            f"  requirements: {EVALUATOR_DIR}/requirements.txt (layered on the Docker image; "
            "checked against this Python for --sandbox local)"
        )
    packages = dockerfile_packages(bench)
    if packages:
        lines.append(
            f"  requirements: {EVALUATOR_DIR}/Dockerfile's pip install {' '.join(packages)} "
            "(layered on the Docker image beside requirements.txt)"
        )
    if problem.test_is_train:
        lines.append(f"  warning: {NOT_INDEPENDENT}")
    return lines
