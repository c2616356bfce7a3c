"""Test doubles and helpers shared by tests/, bench/ and the docs: a scripted
OpenAI-compatible server (real HTTP, canned replies), canned edits (binpack's, the modular
problems'), the hostile-reply corpus, a toy problem, the real CLI in a subprocess
(cli_helpers), archives and the real `evolve ui` for the web view (web_support), a loopback
Ray cluster (ray_support) and the import graph the layout checks read (layout).

Shipped in the package so benchmarks and users never import tests/; nothing in the
run pipeline imports it. The helpers that run the CLI, the web view or Ray find the
checkout beside the package (an editable install), as tests/ and bench/ run.
"""
