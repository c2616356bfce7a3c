"""How an agent's turn is written and read: a plain-text ACTION line (any endpoint, small
models) or native tool calls (endpoints that take OpenAI's `tools`).

Text protocol: a reply may hold an edit in the problem's usual edit format, applied to the
working copy first, and ends with one line `ACTION: NAME [ARGUMENT]` (in a fence of its
own or not): `list`, `read PATH`, `evaluate`, `submit`. The last such line is the action.
A reply with an edit and no action line is read as `evaluate` (`implied`): small models often
answer the first turn with code alone, and a turn that tests the edit is what they meant.

Parsing is bounded by the text alone (evolve/edits/bounds.py): a reply over the problem's
reply limit is not read, lines are matched one at a time, a tool call's arguments are
JSON of at most that size. Whatever is wrong with a reply is one line the model is told.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from evolve.llm.answer import ToolCall, read_tool_reply

PROTOCOLS = ("auto", "text", "native")  # auto: decided per run (auto_protocol.py)
ACTIONS = ("list", "read", "evaluate", "submit")  # the text protocol's; native adds `edit`
# The head of an action line; the rest is split by str methods. One character class, then a
# word, then one class and a colon: linear in the line, whatever it holds (no nested repeats).
_ACTION_HEAD = re.compile(r"[ \t*_`]*action[ \t*_`]*:", re.I)
_FENCE = re.compile(r"^\s*```")
_EDIT_SIGNS = ("```", "<<<<<<<", "EVOLVE-BLOCK")


@dataclass(frozen=True)
class Action:
    """One tool use: `name` (list | read | edit | evaluate | submit), its argument (read's
    path, edit's text), and the native call it answers (None: the text protocol)."""

    name: str
    arg: str = ""
    call_id: str | None = None
    problem: str | None = None  # malformed: what the model is told instead of a result
    implied: bool = False  # no action line: an edit alone is read as `evaluate`


@dataclass(frozen=True)
class Turn:
    """One answered turn read: its text, the edit it writes in its text (None: none), its
    actions, and the native calls as answered (to send back in the conversation)."""

    content: str
    edit: str | None
    actions: tuple[Action, ...]
    calls: tuple[ToolCall, ...] = ()


def parse_turn(stored: str, protocol: str, limit: int) -> Turn:
    """A stored reply (llm_calls.reply) as a Turn. Native: its tool calls; a native reply
    with none is read as text, so a model that answers in text is still understood."""
    if len(stored) > limit:  # characters never outnumber bytes: this bounds what is read
        why = f"your reply is over {limit:,} characters: write a shorter one"
        return Turn(stored[:200], None, (Action("", problem=why),))
    if protocol == "native":
        content, calls = read_tool_reply(stored)
        if calls:
            actions = tuple(_native(c) for c in calls)
            edits = any(a.name == "edit" for a in actions)
            return Turn(content, None if edits else _edit_in(content), actions, calls)
        stored = content
    return parse_text(stored)


def parse_text(reply: str) -> Turn:
    """The text protocol: the last ACTION line is the action; the rest may be an edit."""
    lines = reply.splitlines()
    at = next((i for i in range(len(lines) - 1, -1, -1) if _ACTION_HEAD.match(lines[i])), None)
    if at is None:
        edit = _edit_in(reply)
        if edit is not None:
            return Turn(reply, edit, (Action("evaluate", implied=True),))
        why = "no ACTION line: end your reply with one line such as `ACTION: evaluate`"
        return Turn(reply, None, (Action("", problem=why),))
    name, arg = _action_of(lines[at])
    start, end = at, at + 1
    if at > 0 and _FENCE.match(lines[at - 1]) and end < len(lines) and _FENCE.match(lines[end]):
        start, end = at - 1, end + 1  # the action's own fence goes with it
    rest = "\n".join(lines[:start] + lines[end:])
    return Turn(reply, _edit_in(rest), (_checked(name, arg, None),))


def _action_of(line: str) -> tuple[str, str]:
    """An action line's name (lower case) and argument (quotes and emphasis stripped)."""
    m = _ACTION_HEAD.match(line)
    assert m is not None
    words = line[m.end() :].lstrip(" \t*_`").split(None, 1)
    name = words[0].strip("*_`").lower() if words else ""
    arg = words[1].strip().strip("*_`'\"") if len(words) > 1 else ""
    if name == "read":  # a copied menu line: `read notes   (or another file ...)`
        arg = arg.split("(", 1)[0].strip().strip("*_`'\"")
    return name, arg


def _checked(name: str, arg: str, call_id: str | None) -> Action:
    known = (*ACTIONS, "edit") if call_id is not None else ACTIONS
    if name not in known:
        shown = ascii(name[:40])
        why = f"unknown action {shown}: use one of {', '.join(known)}"
        return Action(name, call_id=call_id, problem=why)
    if name in ("read", "edit") and not arg.strip():
        what = "a path (`ACTION: read notes`)" if name == "read" else "the edit's text"
        return Action(name, call_id=call_id, problem=f"{name} needs {what}")
    return Action(name, arg, call_id)


def _native(call: ToolCall) -> Action:
    """One native tool call: its arguments must be a JSON object."""
    try:
        args = json.loads(call.arguments or "{}")
    except (ValueError, RecursionError):
        args = None
    if not isinstance(args, dict):
        why = f"the arguments of {ascii(call.name[:40])} are not a JSON object"
        return Action(call.name, call_id=call.id, problem=why)
    key = {"read": "path", "edit": "edit"}.get(call.name)
    arg = args.get(key) if key else ""
    return _checked(call.name, arg if isinstance(arg, str) else "", call.id)


def _edit_in(text: str) -> str | None:
    """The text as an edit, when it looks like one (a fence, SEARCH/REPLACE, a block)."""
    return text if any(s in text for s in _EDIT_SIGNS) else None


# ---- the conversation ------------------------------------------------------------------

TEXT_RULES = """\

You have up to {turns} replies to improve the program above before it is scored: it is your \
working copy. Each reply holds an edit in the format asked for above, which is applied to the \
working copy, and ends with exactly one action line:
ACTION: evaluate   (score the working copy on the training data; {evals} evaluations in all)
ACTION: submit     (hand in the working copy; this is your last reply)
Each reply gets the result of its action: edit and evaluate, fix what the evaluation reports, \
then submit. Seldom needed: `ACTION: list` names the files, and `ACTION: read` followed by \
one of them, `notes` or `feedback` shows it."""

NATIVE_RULES = """\

You have up to {turns} replies to improve the program above before it is scored: it is your \
working copy. Use the tools: `list` and `read` the files (also: description, notes, \
feedback), `edit` the working copy (an edit in the format asked for above), `evaluate` it on \
the training data ({evals} evaluations in all), and `submit` it when it is done."""


# A probe of --agent-protocol auto: the tools, and the text protocol where it has none
AUTO_RULES = (
    NATIVE_RULES
    + """ If you cannot call tools, end each reply instead with one action line: \
`ACTION: evaluate`, `ACTION: submit`, `ACTION: list` or `ACTION: read notes` (or another \
file's name)."""
)
_RULES = {"native": NATIVE_RULES, "auto": AUTO_RULES, "text": TEXT_RULES}


def has_action(text: str) -> bool:
    """Whether the text holds a text-protocol ACTION line."""
    return any(_ACTION_HEAD.match(line) for line in text.splitlines())


def agent_messages(messages: list[dict], protocol: str, turns: int, evals: int) -> list[dict]:
    """The first turn's messages: a single call's prompt, its last message told the rules
    (`auto`: a probe's, both protocols')."""
    rules = _RULES.get(protocol, TEXT_RULES).format(turns=turns, evals=evals)
    last = dict(messages[-1])
    last["content"] = f"{last.get('content') or ''}\n{rules}"
    return [*messages[:-1], last]


def _tool(name: str, description: str, **params: str) -> dict:
    props = {k: {"type": "string", "description": v} for k, v in params.items()}
    schema = {"type": "object", "properties": props, "required": list(params)}
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": schema},
    }


TOOLS = [
    _tool("list", "The files you can read."),
    _tool(
        "read",
        "A file of the working copy, or description, notes or feedback.",
        path="the file's path, or description, notes, feedback",
    ),
    _tool("edit", "Edit the working copy.", edit="the edit, in the format the prompt asks for"),
    _tool("evaluate", "Score the working copy on the training data."),
    _tool("submit", "Hand in the working copy: the last turn."),
]


def turn_messages(turn: Turn, results: list[str], protocol: str) -> list[dict]:
    """The turn's assistant message and its results, as the next request carries them:
    a tool message per native call, else one user message."""
    if protocol == "native" and turn.calls:
        calls = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for c in turn.calls
        ]
        said = {"role": "assistant", "content": turn.content or None, "tool_calls": calls}
        told = [
            {"role": "tool", "tool_call_id": c.id, "content": r}
            for c, r in zip(turn.calls, results, strict=True)
        ]
        return [said, *told]
    return [
        {"role": "assistant", "content": turn.content},
        {"role": "user", "content": "\n".join(results)},
    ]
