"""Build an OpenEvolve checkpoint holding N programs (run with OpenEvolve's Python).

Part of bench/controller_overhead.py, which runs this file in OpenEvolve's own
virtual environment; the timed part is OpenEvolve's CLI resuming from the
checkpoint. Programs are added through ProgramDatabase.add in descending score
order, so no add displaces an earlier program from its MAP-Elites cell (which
would delete it) and the checkpoint holds exactly N programs.

    python bench/overhead_openevolve.py CONFIG PROGRAMS_JSON CHECKPOINT_DIR
"""

from __future__ import annotations

import json
import sys
import uuid

from openevolve.config import load_config
from openevolve.database import Program, ProgramDatabase


def build(config_path: str, programs_path: str, out: str) -> int:
    cfg = load_config(config_path)
    db = ProgramDatabase(cfg.database)
    with open(programs_path) as f:
        specs = json.load(f)  # [{code, score, iteration, island}], the seed at iteration 0
    for s in sorted(specs, key=lambda s: -s["score"]):
        p = Program(
            id=str(uuid.uuid4()), code=s["code"], language="python",
            generation=0 if s["iteration"] == 0 else 1, iteration_found=s["iteration"],
            metrics={"combined_score": s["score"]},
        )
        db.add(p, iteration=s["iteration"], target_island=s["island"])
    if len(db.programs) != len(specs):
        raise SystemExit(f"checkpoint holds {len(db.programs)} programs, expected {len(specs)}")
    last = max(s["iteration"] for s in specs)
    db.save(out, iteration=last)
    print(json.dumps({"programs": len(db.programs), "last_iteration": db.last_iteration}))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__.strip().splitlines()[-1].strip())
    sys.exit(build(*sys.argv[1:]))
