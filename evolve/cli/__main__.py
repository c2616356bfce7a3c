"""`python -m evolve.cli ...`: the same as the `evolve` console script."""

import sys

from evolve.cli import main

sys.exit(main())
