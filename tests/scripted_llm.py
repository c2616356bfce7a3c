"""The scripted OpenAI-compatible server, now evolve/testing/scripted_llm.py; kept here
so tests and old commands (`python tests/scripted_llm.py --port 8000 ...`) still work."""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":  # run as a script: this checkout's evolve, not an installed one
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evolve.testing.scripted_llm import *  # noqa: E402, F403
from evolve.testing.scripted_llm import __all__, main  # noqa: E402, F401

if __name__ == "__main__":
    sys.exit(main())
