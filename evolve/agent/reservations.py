"""Calls --max-calls keeps for the agent sessions in flight.

A session starts with as many turns as the calls not yet kept for others allow (at most
--agent-turns), and keeps them until it ends: under a small budget with several sessions in
flight, a session is no longer cut off mid-way by those started after it; a new one starts
when the calls a finished one did not use are free again. Its rules tell the model the
turns it really has; a resumed session reads them back from its stored prompt."""

from __future__ import annotations

import re

# the rules' own words (protocol.py): the last match is ours, whatever the code above says
_PROMISED = re.compile(r"You have up to (\d{1,4}) replies")


class Reservations:
    def __init__(self) -> None:
        self.turns: dict[int, int] = {}  # iteration -> the turns its session may take
        self._kept: dict[int, int] = {}  # iteration -> calls still kept for it

    def kept(self) -> int:
        return sum(self._kept.values())

    def open(self, it: int, turns: int, taken: int) -> None:
        """Keep calls for slot `it`: `turns` in all, `taken` of them answered before."""
        self.turns[it] = turns
        self._kept[it] = max(turns - taken, 0)

    def asked(self, it: int) -> None:
        """One kept call is being asked (from here on --max-calls counts it as spent)."""
        if self._kept.get(it, 0) > 0:
            self._kept[it] -= 1

    def close(self, it: int) -> None:
        self.turns.pop(it, None)
        self._kept.pop(it, None)


def promised_turns(prompt: list[dict]) -> int | None:
    """The turns a stored session's first prompt told the model it has (None: not told)."""
    text = str(prompt[-1].get("content") or "") if prompt else ""
    found = _PROMISED.findall(text)
    return int(found[-1]) if found else None
