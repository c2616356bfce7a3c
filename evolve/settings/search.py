"""The search's settings as a problem folder writes them: problem.toml's [search] table,
or the `search:` part of config.yaml's `evolve:` section (OpenEvolve has no such keys).

Each is also a flag of `evolve run` (the same name with dashes), which wins. The table is
derived from the flags' fields (evolve.settings.flags.SEARCH_TABLE names them), so a key
and its flag share one type, one range and one name: every key is optional, and a list
given has at least one item (an empty one would say what leaving the key out says).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, get_args, get_origin

from pydantic import Field, create_model

from evolve.settings.errors import Section
from evolve.settings.flags import SEARCH_TABLE, Settings


class _Table(Section):
    def settings(self) -> dict[str, object]:
        """The keys the folder sets, as RunConfig fields (a list as the tuple it holds)."""
        return {
            k: tuple(v) if isinstance(v, list) else v
            for k, v in self.model_dump().items()
            if v is not None
        }


def _key(name: str) -> tuple[Any, None]:
    """The flag's type and range, optional; a sequence is a list (a TOML or YAML array) of
    the flag's items, at least one."""
    field = Settings.model_fields[name]
    typ: Any = field.annotation
    if get_origin(typ) in (tuple, list):
        typ = Annotated[list[get_args(typ)[0]], Field(min_length=1)]  # type: ignore[misc]
    elif field.metadata:
        typ = Annotated[(typ, *field.metadata)]
    return (typ | None, None)


if TYPE_CHECKING:
    SearchTable = _Table
else:
    SearchTable = create_model(
        "SearchTable", __base__=_Table, **{name: _key(name) for name in SEARCH_TABLE}
    )
