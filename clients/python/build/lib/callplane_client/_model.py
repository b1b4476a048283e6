"""Lenient models: a response is kept whole, and read through typed attributes.

Fields a model declares are typed for editors and type checkers; fields it does not know (added
by a newer server) are still there, as attributes and by key; values outside a documented set
(a new call status) pass through as they are. A declared field the server did not send reads as
None. Nested objects become their models on access.
"""

from __future__ import annotations

import typing
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, TypeVar

M = TypeVar("M", bound="Model")


class Model:
    __slots__ = ("_data",)
    _hints: ClassVar[dict[str, Any] | None] = None

    def __init__(self, data: Mapping[str, Any] | None = None, /, **fields: Any) -> None:
        object.__setattr__(self, "_data", {**(data or {}), **fields})

    @classmethod
    def _field_types(cls) -> dict[str, Any]:
        if cls.__dict__.get("_hints") is None:
            hints = typing.get_type_hints(cls)
            cls._hints = {k: v for k, v in hints.items() if not k.startswith("_")}
        return cls._hints or {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        data = object.__getattribute__(self, "_data")
        if name in data:
            return _convert(data[name], self._field_types().get(name))
        if name in self._field_types():
            return None
        raise AttributeError(f"{type(self).__name__} has no field {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def to_dict(self) -> dict[str, Any]:
        """The fields exactly as the server sent them (JSON types)."""
        return dict(self._data)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._data == self._data

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in list(self._data.items())[:6])
        more = ", ..." if len(self._data) > 6 else ""
        return f"{type(self).__name__}({shown}{more})"

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self._data) | set(self._field_types()))


def _convert(value: Any, hint: Any) -> Any:
    if hint is None or value is None:
        return value
    origin = typing.get_origin(hint)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        for arg in typing.get_args(hint):
            if arg is not type(None):
                return _convert(value, arg)
        return value
    if isinstance(hint, type) and issubclass(hint, Model) and isinstance(value, Mapping):
        return hint(value)
    if origin is list and isinstance(value, list):
        [item] = typing.get_args(hint) or (None,)
        return [_convert(v, item) for v in value]
    return value
