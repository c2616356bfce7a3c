"""The code that runs inside a sandbox: the harness, the problem kit, the candidate's worker
and its channel, the OpenEvolve runner and its stand-in package.

Stdlib only, and importing nothing outside this folder: the Docker image copies the
folder whole to /opt/evolve, the local sandbox binds it read-only, and the harness
makes it the package `evaluators.inside` wherever it lies (tests/test_layout.py
checks both rules).
"""
