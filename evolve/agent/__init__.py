"""`--proposer agent`: one iteration as a few turns of a model working on a copy of its
parent with tools (list, read, edit, evaluate on train, submit) before it submits.

protocol.py: the plain-text ACTION protocol, native tool calls, the messages of a turn;
tools.py: the working copy and what each tool does; session.py: one iteration's turns,
replayed from the archive on resume; auto_protocol.py: `--agent-protocol auto`, decided once
per run. What a session submits becomes the iteration's
candidate like a single call's reply (evolve/pipeline/candidates.py: agent_row). iteration.py: that
iteration, as the controller runs it.

`--proposer command:CMD`: a coding agent's command run confined (confine.py, command_run.py)
in a workspace of the parent's files and TASK.md (command_workspace.py, command_task.py),
with evolve-eval (eval_tool.py), in its own memory and pids cgroups (command_limits.py); its
outcome and cost (command_cost.py) one llm_calls row (command_iteration.py), shown on the
program page (command_view.py)."""

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
