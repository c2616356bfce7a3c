"""Dollar cost per call from a price table users can extend.

Prices are USD per million tokens (input, output); `--prices FILE` adds or
overrides entries. The local model (`--model local...`) is free. Any other model
not in the table is counted at $0, which would make `--budget-usd` meaningless:
`require_prices` refuses such a run before it starts.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from evolve.llm.profiles import is_local
from evolve.settings import PriceFile, validate

DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "o3": (2.00, 8.00),
    "o4-mini": (1.10, 4.40),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-opus-4": (15.00, 75.00),
    "gemini-2.5-pro": (1.25, 10.00),
    "gemini-2.5-flash": (0.30, 2.50),
    "deepseek-chat": (0.27, 1.10),
}


@dataclass(frozen=True)
class PriceTable:
    prices: dict[str, tuple[float, float]]

    @classmethod
    def load(cls, path: str | Path | None = None) -> PriceTable:
        prices = dict(DEFAULT_PRICES)
        if path is not None:
            prices.update(_read_prices(Path(path)))
        return cls(prices)

    def price(self, model: str) -> tuple[float, float] | None:
        """$/1M tokens (input, output) of `model` (or of its name after a `provider/`),
        (0, 0) for the local model, None when unknown."""
        if is_local(model):
            return (0.0, 0.0)
        return self.prices.get(model) or self.prices.get(model.split("/")[-1])

    def unpriced(self, models: Iterable[str]) -> list[str]:
        """The models of `models` with no known price, in order, once each."""
        return [m for m in dict.fromkeys(models) if self.price(m) is None]

    def cost(self, model: str, prompt_tokens: int, completion_tokens: int) -> float:
        """Never negative: the counts come from the endpoint (checked, evolve/llm/answer.py)."""
        price = self.price(model)
        if price is None:
            return 0.0
        return max(
            0.0, (max(0, prompt_tokens) * price[0] + max(0, completion_tokens) * price[1]) / 1e6
        )


class UnpricedModel(ValueError):
    """A budget is set but a model's price is unknown; the message is one line."""


def require_prices(
    models: Iterable[str], budget_usd: float | None, prices: PriceTable | str | Path | None = None
) -> None:
    """With a budget, every model needs a price: UnpricedModel (one line naming the model and
    `--prices`) otherwise. `prices`: a PriceTable, or the --prices file to load (None: built-in)."""
    if budget_usd is None:
        return
    table = prices if isinstance(prices, PriceTable) else PriceTable.load(prices)
    missing = table.unpriced(models)
    if missing:
        names = ", ".join(missing)
        model = missing[0]
        noun, whose = ("model", "its") if len(missing) == 1 else ("models", "their")
        raise UnpricedModel(
            f"--budget-usd {budget_usd:g}: no price known for {noun} {names}, so {whose} spend "
            f"would count as $0; give prices with --prices FILE "
            f'(TOML: "{model}" = {{input = USD_PER_1M, output = USD_PER_1M}})'
        )


def _read_prices(path: Path) -> dict[str, tuple[float, float]]:
    """A JSON or TOML (by the .toml suffix) mapping: model -> {input: $/1M, output: $/1M};
    ValueError with one line naming the file and the entry otherwise."""
    kind = "TOML" if path.suffix == ".toml" else "JSON"
    try:
        text = path.read_text()
    except OSError as e:
        raise ValueError(f"{path}: cannot read price table: {e.strerror or e}") from None
    try:
        data = tomllib.loads(text) if kind == "TOML" else json.loads(text)
    except ValueError as e:  # JSONDecodeError and TOMLDecodeError are ValueErrors
        raise ValueError(f"{path}: not a {kind} price table: {e}") from None
    table = validate(PriceFile, data, str(path), "prices")
    return {model: (p.input, p.output) for model, p in table.root.items()}
