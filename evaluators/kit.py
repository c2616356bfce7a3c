"""The problem kit under the name every evaluator imports: `from evaluators import kit`.

The kit runs inside the sandboxes, so it lives in evaluators/inside/kit.py with the
stdlib-only code it needs there; this module makes `evaluators.kit` that very module
(one module, one state: `kit.REMOTE`, the data seed), as the harness does in a sandbox.
"""

import sys

from evaluators.inside import kit

sys.modules[__name__] = kit
