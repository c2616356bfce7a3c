"""`--proposer agent`: one iteration as a few turns of a model working on a copy of its
parent with tools (list, read, edit, evaluate on train, submit) before it submits.

protocol.py: the plain-text ACTION protocol, native tool calls, the messages of a turn;
tools.py: the working copy and what each tool does; session.py: one iteration's turns,
replayed from the archive on resume. What a session submits becomes the iteration's
candidate like a single call's reply (evolve/candidates.py: agent_row)."""

from evolve.agent.protocol import PROTOCOLS, agent_messages
from evolve.agent.session import AgentLimits, AgentSession, SessionEnd
from evolve.agent.tools import Workspace

__all__ = [
    "PROTOCOLS",
    "AgentLimits",
    "AgentSession",
    "SessionEnd",
    "Workspace",
    "agent_messages",
]
