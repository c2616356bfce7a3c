"""Per-run settings given as flags, applied over a problem folder's own.

`evolve run`, `eval` and `check` take --env, --initial-program, --timeout,
--memory-mb, --config and --strict-config; `run` stores them with the run (RunConfig) so `resume` evaluates the
same way. An env entry is kept as given: NAME=VALUE keeps its value, NAME alone is
read from the environment each time the problem loads (at resume too).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True)
class Overrides:
    env: tuple[str, ...] = ()  # "NAME" or "NAME=VALUE", as given; over the folder's env
    initial_program: str | None = None  # the seed program, any path
    timeout_s: float | None = None  # one evaluation's wall-clock limit
    memory_mb: int | None = None  # one evaluation's memory limit
    config: str | None = None  # an OpenEvolve folder's config file, instead of config.yaml
    strict_config: bool = False  # unknown config.yaml keys are errors, not warnings
    sandbox: str | None = None  # where a GEPA script's call is captured (--sandbox)

    @classmethod
    def from_args(cls, args: Any) -> Overrides:
        """The flags of `evolve run/eval/check` (argparse dests env, initial_program,
        timeout, memory_mb, config, strict_config); a namespace without them gives no
        overrides."""
        return cls(
            env=tuple(getattr(args, "env", None) or ()),
            initial_program=getattr(args, "initial_program", None),
            timeout_s=getattr(args, "timeout", None),
            memory_mb=getattr(args, "memory_mb", None),
            config=getattr(args, "config", None),
            strict_config=bool(getattr(args, "strict_config", False)),
            sandbox=getattr(args, "sandbox", None),
        )

    def absolute(self) -> Overrides:
        """The same, with the seed's path made absolute: what a run stores, so that
        `resume` from another directory reads the same file. --config stays as given: it
        names a file of the folder first (evolve.problem.load.config_file)."""
        if self.initial_program is None:
            return self
        path = os.path.abspath(os.path.expanduser(self.initial_program))
        return replace(self, initial_program=path)
