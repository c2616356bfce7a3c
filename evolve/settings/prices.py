"""The schema of a `--prices` file: model name -> {input, output} USD per 1M tokens."""

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field, RootModel

from evolve.settings.errors import Section

Price = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class ModelPrice(Section):
    input: Price
    output: Price


class PriceFile(RootModel[dict[str, ModelPrice]]):
    model_config = ConfigDict(strict=True)
