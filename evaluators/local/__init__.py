"""The local sandbox (every evaluation in confined subprocesses of this machine) and this
machine's process plumbing that the other backends and the controller share: whether a
process still runs (liveness.py), locks between processes (locks.py), and the temporary
folders a dead process left (leftovers.py)."""
