"""Test doubles shared by tests/, bench/ and the docs: a scripted OpenAI-compatible
server (real HTTP, canned replies), binpack's canned edits and a toy problem.

Shipped in the package so benchmarks and users never import tests/; nothing in the
run pipeline imports it.
"""
