"""What runs candidates, in wings by concept.

At the root, what every backend shares: the protocol (sandbox.py: the request, the
result, the limits, the Sandbox interface; harness_result.py: a harness run read back
as a result, with the bounds of bounds.py), the choice of a backend (backends.py,
machine.py), and the problem kit under the name problems import (kit.py).
inside/ is the stdlib-only code that runs in a sandbox (the harness, the kit, the
candidate's worker); local/, docker/ and ray/ are the three backends.
"""
