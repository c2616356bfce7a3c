"""The run pipeline: the Python API (api.py, api_gepa.py), a run's settings merged and
checked (launch.py, config.py, endpoints.py, env.py), one run in this process (runner.py),
the controller's loop (controller.py) and the steps of an iteration (iteration.py): what it
asks the model (proposal.py, asking.py), the candidate a reply makes (candidates.py), its
evaluation in a sandbox (evaluation.py, redaction.py, gepa_state.py), and the run's state
(bookkeeping.py, state.py, errors.py, leaderboard.py).

Named pipeline, not run: a subpackage evolve.run would shadow the function evolve.run once
imported. Nothing is re-exported here: import from the modules.
"""
