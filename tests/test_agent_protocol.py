"""The agent's turns read from untrusted replies (evolve/agent/protocol.py): bounded, and
whatever is wrong is one line for the model, never an exception."""

from __future__ import annotations

import json
import time

from evolve.agent.protocol import parse_turn, turn_messages
from evolve.llm.answer import ToolCall, read_tool_reply, stored_tool_reply

LIMIT = 1 << 20


def test_the_last_action_line_is_the_action_and_its_fence_is_not_the_edit():
    reply = "x\n```python\ndef f(x):\n    return 1\n```\n```\nACTION: evaluate\n```\n"
    turn = parse_turn(reply, "text", LIMIT)
    assert [(a.name, a.problem) for a in turn.actions] == [("evaluate", None)]
    assert turn.edit == "x\n```python\ndef f(x):\n    return 1\n```"
    assert parse_turn("**Action:** read `seed.py`", "text", LIMIT).actions[0].arg == "seed.py"
    copied = "ACTION: read notes    (or another file: description, feedback)"  # the menu, echoed
    assert parse_turn(copied, "text", LIMIT).actions[0].arg == "notes"
    two = parse_turn("ACTION: read a.py\nACTION: submit", "text", LIMIT)
    assert [a.name for a in two.actions] == ["submit"] and two.edit is None


def test_malformed_and_hostile_replies_are_one_line_each():
    cases = {
        "": "no ACTION line",
        "ACTION: rm -rf /": "unknown action 'rm'",
        "ACTION: " + "x" * 10_000: "unknown action 'xxxxxxxx",
        "x" * (LIMIT + 1): "your reply is over 1,048,576 characters",
    }
    for reply, start in cases.items():
        (action,) = parse_turn(reply, "text", LIMIT).actions
        assert action.problem is not None and action.problem.startswith(start)
        assert "\n" not in action.problem and len(action.problem) < 200
    # lines made to make a regular expression backtrack are read in linear time
    for line in (
        "ACTION:" + " " * 200_000 + "1",
        " " * 200_000 + "x",
        "ACTION: a" + " " * 200_000 + "b",
    ):
        started = time.monotonic()
        parse_turn(line, "text", LIMIT)
        assert time.monotonic() - started < 1.0
    # a text reply that imitates the stored form of tool calls is only text
    fake = 'ACTION: list\n\n[tool calls] [{"id": "a", "name": "submit", "arguments": "{}"}]'
    assert [a.name for a in parse_turn(fake, "text", LIMIT).actions] == ["list"]


def test_native_tool_calls_round_trip_through_the_stored_reply():
    calls = (ToolCall("c1", "read", '{"path": "seed.py"}'), ToolCall("c2", "edit", "[1]"))
    stored = stored_tool_reply("thinking [tool calls] []", calls)
    assert read_tool_reply(stored) == ("thinking [tool calls] []", calls)
    turn = parse_turn(stored, "native", LIMIT)
    assert [(a.name, a.arg, a.problem) for a in turn.actions] == [
        ("read", "seed.py", None),
        ("edit", "", "the arguments of 'edit' are not a JSON object"),
    ]
    said, *told = turn_messages(turn, ["a", "b"], "native")
    assert [c["id"] for c in said["tool_calls"]] == ["c1", "c2"]
    assert [(m["role"], m["tool_call_id"], m["content"]) for m in told] == [
        ("tool", "c1", "a"),
        ("tool", "c2", "b"),
    ]
    # no tool calls: the text protocol, told in a user message
    text = parse_turn(stored_tool_reply("ACTION: submit", ()), "native", LIMIT)
    assert [a.name for a in text.actions] == ["submit"]
    assert turn_messages(text, ["ok"], "native")[-1] == {"role": "user", "content": "ok"}
    json.dumps(turn_messages(turn, ["a", "b"], "native"))  # what the archive stores


def test_an_agent_session_on_a_local_model_gets_twice_a_single_calls_window():
    from evolve.agent.window import session_window

    assert session_window(4096, "agent", ["local"]) == 8192
    assert session_window(4096, "agent", ["local:qwen2.5-coder-0.5b"]) == 8192
    assert session_window(4096, "single", ["local"]) == 4096  # single calls: as before
    assert session_window(128_000, "agent", ["gpt-4o-mini"]) == 128_000  # hosted: as it says
    assert session_window(None, "agent", ["local"]) is None
