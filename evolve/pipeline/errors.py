"""The two ways an iteration tells the loop to stop asking (evolve/pipeline/controller.py), here so
that the iterations in their own modules (evolve/agent/) raise them without a cycle."""


class RunAborted(RuntimeError):
    """The run cannot go on (endpoint down, seed broken); the archive stays resumable."""


class CallsSpent(Exception):
    """The run's --max-calls are answered: the iteration asking ends, its slot stays free."""
