"""The flags of every `evolve` command (argparse)."""

from __future__ import annotations

import argparse
import difflib
import math
from collections.abc import Callable
from typing import Annotated, Any, Literal, NoReturn, get_args, get_origin

from annotated_types import Ge, Gt, Le
from pydantic.fields import FieldInfo

from evolve import __version__
from evolve.cli.archive import add_parser as add_archive_parser
from evolve.cli.ui import add_parser as add_ui_parser
from evolve.settings.flag_types import Sandbox, check_model
from evolve.settings.flags import GROUPS, Settings

Flags = argparse.ArgumentParser | argparse._ArgumentGroup  # where a flag is added
SANDBOXES: tuple[str, ...] = get_args(Sandbox)  # evaluators.backends.CHOICES, not imported here


class Parser(argparse.ArgumentParser):
    """argparse, with a bad flag reported as one line (usage is one `--help` away)."""

    def error(self, message: str) -> NoReturn:
        line = " ".join(message.split())
        if line.startswith("unrecognized arguments:"):
            line += self._did_you_mean(line.split(":", 1)[1].split())
        self.exit(2, f"{self.prog}: error: {line} (see `{self.prog} --help`)\n")

    def _did_you_mean(self, words: list[str]) -> str:
        """The known flag closest to the first unknown one (`--temprature`), if any."""
        flag = next((w.split("=")[0] for w in words if w.startswith("--")), None)
        known = {o for p in _parsers(self) for a in p._actions for o in a.option_strings}
        close = difflib.get_close_matches(flag, sorted(known), n=1, cutoff=0.75) if flag else []
        return f"; did you mean {close[0]}?" if close else ""


def _parsers(p: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """`p` and every subcommand's parser under it."""
    out = [p]
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                out += _parsers(sub)
    return out


def _data_seed(text: str) -> int:
    """An argparse type: a run's private data seed (evolve/problem/data_seed.py)."""
    from evolve.problem.data_seed import check

    try:
        return check(int(text))
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _integer(minimum: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer, at least `minimum`."""
    want = "an integer" if minimum is None else f"an integer >= {minimum}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {want}, got {text!r}") from None
        if minimum is not None and value < minimum:
            raise argparse.ArgumentTypeError(f"expected {want}, got {text}")
        return value

    return parse


def _number(
    low: float | None = None, high: float | None = None, *, above: float | None = None
) -> Callable[[str], float]:
    """An argparse type: a finite number within [low, high], or greater than `above`."""
    if above is not None:
        want = f"a number > {above:g}"
    elif low is not None and high is not None:
        want = f"a number within [{low:g}, {high:g}]"
    elif low is not None:
        want = f"a number >= {low:g}"
    else:
        want = "a number"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {want}, got {text!r}") from None
        ok = math.isfinite(value)
        ok = ok and (above is None or value > above)
        ok = ok and (low is None or value >= low) and (high is None or value <= high)
        if not ok:
            raise argparse.ArgumentTypeError(f"expected {want}, got {text}")
        return value

    return parse


def _model(text: str) -> str:
    """An argparse type: `NAME[:WEIGHT]` (evolve.settings.flags.check_model)."""
    try:
        return check_model(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _env_entry(text: str) -> str:
    """`NAME` or `NAME=VALUE` (whether NAME is set is checked when the problem loads)."""
    from evolve.settings.environ import check_env_entry

    problem = check_env_entry(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


def _flag(p: Flags, name: str, **kw: Any) -> None:
    """`--name`, the Settings field `name` (evolve/settings/flags.py): its type and range,
    choices, metavar and help text (showing its default) come from the field; `kw` adds to
    or replaces argparse's arguments. A flag not given is None (bool flags too): the run
    merges what was given over the problem's settings, the profile's and the defaults."""
    field = Settings.model_fields[name]
    help_text = kw.pop("help", None) or field.description or ""
    shown = f"{field.default:g}" if isinstance(field.default, float) else str(field.default)
    opts: dict[str, Any] = {"help": help_text.replace("{default}", shown), **_parsing(field)}
    extra = field.json_schema_extra
    if isinstance(extra, dict) and "metavar" in extra:  # the field's own name for its value
        opts["metavar"] = extra["metavar"]
    opts.update(kw)
    p.add_argument("--" + name.replace("_", "-"), **opts)


def _parsing(field: FieldInfo) -> dict[str, Any]:
    """argparse's `type`, `choices` or `action` for a field: its range says the type's."""
    t, meta = field.annotation, list(field.metadata)
    while True:
        args = [a for a in get_args(t) if a is not type(None)]
        if get_origin(t) is Annotated:
            t = args[0]
            for m in args[1:]:
                meta += m.metadata if isinstance(m, FieldInfo) else [m]
        elif get_origin(t) not in (None, Literal) and len(args) == 1:  # X | None
            t = args[0]
        else:
            break
    bound = {type(m): m for m in meta}
    if t is bool:
        return {"action": "store_true", "default": None}
    if get_origin(t) is Literal:
        return {"choices": list(get_args(t))}
    if t is int:
        return {"type": _integer(bound[Ge].ge if Ge in bound else None), "metavar": "N"}
    if t is float:
        if Gt in bound:
            return {"type": _number(above=bound[Gt].gt), "metavar": "X"}
        low, high = (bound[Ge].ge if Ge in bound else None), (bound[Le].le if Le in bound else None)
        return {"type": _number(low, high), "metavar": "X"}
    return {}


def _problem_flags(p: Flags) -> None:
    """How the problem's programs are evaluated, over its folder's settings (run, eval
    and check; `run` stores them so `resume` evaluates the same way)."""
    _flag(p, "env", action="append", type=_env_entry)
    _flag(p, "initial_program")
    _flag(p, "timeout")
    _flag(p, "memory_mb")
    _flag(p, "config")
    _flag(p, "strict_config")


def build_parser() -> argparse.ArgumentParser:
    ap = Parser(
        prog="evolve", description="Evolve systems policies with an LLM and a sandboxed simulator."
    )
    ap.add_argument("--version", action="version", version=f"evolve {__version__}")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="start an evolution run on a problem folder")
    _run_flags(run)

    res = sub.add_parser("resume", help="continue a stopped or killed run")
    res.add_argument("run_id", metavar="RUN_ID")
    res.add_argument("--iterations", type=_integer(0), help="new total number of iterations")
    res.add_argument("--runs-dir", metavar="DIR")
    res.add_argument("--no-progress", action="store_true")
    res.add_argument(
        "--ray-address",
        metavar="HOST:PORT",
        help="a run on --sandbox ray: the cluster's address now (default: the one it started with)",
    )

    ev = sub.add_parser("eval", help="score one program in the sandbox")
    ev.add_argument("problem_dir", metavar="PROBLEM_DIR")
    ev.add_argument(
        "program",
        metavar="PROGRAM",
        help="the program's file, or for a program of several files the folder holding them",
    )
    ev.add_argument(
        "--split",
        help="evaluate on this split (default, and for the train split: the whole cascade, "
        "as a run does; another split alone, as held-out re-scoring does)",
    )
    ev.add_argument(
        "--stage",
        metavar="NAME",
        help="run one cascade stage alone: a split of a native problem, or a function "
        "(evaluate, evaluate_stage1, ...) of an OpenEvolve evaluator",
    )
    ev.add_argument("--json", action="store_true", help="print one JSON object")
    _flag(
        ev,
        "data_seed",
        type=_data_seed,
        help="score on the workloads of a run with this private data seed (`evolve archive "
        "runs --json` shows it; default: the problem's public data)",
    )
    _flag(ev, "sandbox", help="where the program runs (default {default})")
    _ray_flags(ev)
    _flag(ev, "require_isolation")
    _problem_flags(ev)

    ck = sub.add_parser("check", help="validate a problem folder and score its seed program")
    ck.add_argument("problem_dir", metavar="PROBLEM_DIR")
    _flag(ck, "sandbox", help="where the seed runs (default {default})")
    _ray_flags(ck)
    _flag(ck, "require_isolation")
    _problem_flags(ck)

    sb = sub.add_parser("sandbox", help="manage the Docker sandbox's image")
    sb_sub = sb.add_subparsers(dest="sandbox_command", required=True, metavar="ACTION")
    sbb = sb_sub.add_parser(
        "build", help="build the evaluation image (skipped when it is up to date)"
    )
    sbb.add_argument(
        "--dockerfile",
        action="store_true",
        help="build evaluators/docker/Dockerfile (FROM python:3.11-slim; needs a registry) "
        "instead of the Debian base made with debootstrap",
    )
    sbb.add_argument(
        "--force",
        action="store_true",
        help="rebuild even if an image of the tag exists: with --problem only the problem's "
        "layer, else the image on its existing Debian base",
    )
    sbb.add_argument(
        "--force-base",
        action="store_true",
        help="also rebuild the Debian base with debootstrap (minutes, needs root), and what "
        "stands on it",
    )
    sbb.add_argument(
        "--mirror",
        metavar="URL",
        help="Debian mirror for debootstrap (default "
        "$EVOLVE_DEBIAN_MIRROR, else http://deb.debian.org/debian)",
    )
    sbb.add_argument(
        "--problem",
        metavar="DIR",
        help="also layer DIR/requirements.txt on the image (the host's pip fetches the wheels; "
        "`run`, `eval` and `check` with --sandbox docker do this on first use)",
    )

    data = sub.add_parser(
        "data", help="the workload files a problem declares ([[data]] in problem.toml)"
    )
    data_sub = data.add_subparsers(dest="data_command", required=True, metavar="ACTION")
    fetch = data_sub.add_parser(
        "fetch", help="download them again from their urls, verifying each SHA-256"
    )
    fetch.add_argument("problem_dir", metavar="PROBLEM_DIR")

    new = sub.add_parser("new", help="scaffold a problem folder that passes `evolve check`")
    new.add_argument(
        "name", metavar="NAME", help="folder to create (its last part names the problem)"
    )
    new.add_argument(
        "--files",
        type=_integer(1),
        default=1,
        metavar="N",
        help="the policy as a tree of N evolving files and a fixed entry composing them "
        "(default 1: one seed file)",
    )

    demo = sub.add_parser(
        "demo",
        help="a scripted run of problems/binpack in about a minute: canned replies instead of "
        "a model, real sandboxed evaluations (nothing to compile)",
    )
    demo.add_argument("--iterations", type=_integer(1), default=10, metavar="N", help="default 10")
    demo.add_argument("--run-id", metavar="ID", help="default: demo-DATE-TIME")
    demo.add_argument("--runs-dir", metavar="DIR")
    demo.add_argument("--sandbox", choices=["local", "docker"], default="local")
    demo.add_argument("--no-progress", action="store_true")

    add_archive_parser(sub)
    add_ui_parser(sub, SANDBOXES[:-1], _integer)  # baselines score here: no ray
    from evolve.cli.bench import add_parser as add_bench_parser

    add_bench_parser(sub, _integer, _data_seed)
    return ap


RUN_EXAMPLES = """examples:
  evolve run problems/binpack --iterations 20
      the local model that comes with the install; the sandbox this machine has
  evolve run problems/binpack --model gpt-4.1-mini --budget-usd 2
      a hosted model (OPENAI_API_KEY set), stopping at $2 of spend
  evolve run problems/binpack --model NAME --api-base http://127.0.0.1:8000/v1
      any OpenAI-compatible server (vLLM, Ollama, LiteLLM, llama.cpp)
"""


def _run_flags(run: argparse.ArgumentParser) -> None:
    """`evolve run`'s flags, the Settings fields of the same names, in their groups
    (evolve.settings.flags.GROUPS). Each is None unless given: evolve.pipeline.api merges a
    given flag over the problem's settings, the model's profile and the defaults (Settings',
    shown in the help texts), so a flag given with its default still wins."""
    run.description = "Evolve the problem's program: a model proposes, the sandbox scores."
    run.epilog = RUN_EXAMPLES
    run.formatter_class = argparse.RawDescriptionHelpFormatter
    run.add_argument(
        "problem_dir", metavar="PROBLEM_DIR", help="the problem folder (problem.toml, or an "
        "OpenEvolve or ShinkaEvolve folder)",
    )  # fmt: skip
    parse: dict[str, dict[str, Any]] = {  # what argparse needs besides the field
        "model": {"action": "append", "type": _model},
        "temperatures": {"type": _temperatures},
        "agent_env": {"action": "append"},
        "env": {"action": "append", "type": _env_entry},
        "data_seed": {"type": _data_seed},
    }
    for title, names in GROUPS.items():
        group = run.add_argument_group(title)
        for name in names:
            _flag(group, name, **parse.get(name, {}))
    group.add_argument(  # the last: output
        "--no-progress", action="store_true", help="plain log lines instead of the live display"
    )


def _temperatures(text: str) -> tuple[float, ...]:
    """An argparse type: comma-separated temperatures, each within [0, 2]."""
    one = _number(0, 2)
    try:
        values = tuple(one(t) for t in text.split(",") if t.strip())
    except argparse.ArgumentTypeError as e:
        raise argparse.ArgumentTypeError(f"expected temperatures like 0.5,0.8,1.1: {e}") from None
    if not values:
        raise argparse.ArgumentTypeError("expected at least one temperature, e.g. 0.5,0.8,1.1")
    return values


def _ray_flags(p: Flags) -> None:
    _flag(p, "ray_address")
    _flag(p, "ray_node_sandbox")
    _flag(p, "allow_unisolated_ray_nodes")
