"""The search's settings as a problem folder writes them: problem.toml's [search] table,
or the `search:` part of config.yaml's `evolve:` section (OpenEvolve has no such keys).

Each is also a flag of `evolve run` (the same name with dashes), which wins.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from evolve.settings.errors import Section

Count = Annotated[int, Field(ge=0)]
Temperature = Annotated[float, Field(ge=0, le=2, allow_inf_nan=False)]


class SearchTable(Section):
    max_calls: Annotated[int, Field(ge=1)] | None = None
    max_resamples: Count | None = None
    repair_attempts: Count | None = None
    temperatures: Annotated[list[Temperature], Field(min_length=1)] | None = None
    prompt_style: Literal["full", "short", "funsearch"] | None = None
    meta_interval: Count | None = None
    stagnation: Count | None = None
    burst_calls: Annotated[int, Field(ge=1)] | None = None
    tune_evals: Count | None = None

    def settings(self) -> dict[str, object]:
        """The keys the folder sets, as RunConfig fields."""
        out: dict[str, object] = {
            k: v for k, v in self.model_dump().items() if v is not None and k != "temperatures"
        }
        if self.temperatures is not None:
            out["temperatures"] = tuple(self.temperatures)
        return out
