"""Column types of custom data tables (docs/api-contract.md#custom-data): one small class per type,
in one registry.

Each type knows its SQL type, checks a value written in a JSON body (``validate``), and converts
the text of a query-string filter (``parse_text``). Both raise ``InvalidInput`` naming the column,
so every write and every filter is rejected before it reaches SQL.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import JSON, BigInteger, Boolean, Float, Integer, Text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.types import TypeDecorator, TypeEngine

from callplane.errors import InvalidInput
from callplane.models.base import UTCDateTime

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]{1,19}")
# Neither backend can store U+0000 in text (PostgreSQL rejects it in TEXT and JSONB).
_NUL = "\x00"

#: Record ids: 64-bit on PostgreSQL; on SQLite exactly INTEGER, so the id aliases the rowid.
RecordId = BigInteger().with_variant(Integer(), "sqlite")


def _invalid(column: str, message: str, where: str = "body") -> InvalidInput:
    return InvalidInput(f"{column}: {message}", loc=(where, column))


class ColumnType:
    name: ClassVar[str]
    #: operators of POST /data/{table}/query this type supports (besides is_null)
    operators: ClassVar[frozenset[str]] = frozenset({"eq", "ne", "in", "lt", "lte", "gt", "gte"})
    filterable: ClassVar[bool] = True
    sortable: ClassVar[bool] = True

    def sql_type(self) -> TypeEngine[Any]:
        raise NotImplementedError

    def validate(self, column: str, value: Any) -> Any:
        """A non-null JSON value for this column, in its Python form; InvalidInput otherwise."""
        raise NotImplementedError

    def parse_text(self, column: str, text: str) -> Any:
        """A query-string value; the same Python form ``validate`` gives."""
        raise NotImplementedError


class TextType(ColumnType):
    name = "TEXT"
    operators = ColumnType.operators | {"contains"}

    def sql_type(self) -> TypeEngine[Any]:
        return Text()

    def validate(self, column: str, value: Any) -> Any:
        if not isinstance(value, str):
            raise _invalid(column, "must be a string")
        if _NUL in value:
            raise _invalid(column, "must not contain NUL characters")
        return value

    def parse_text(self, column: str, text: str) -> Any:
        if _NUL in text:
            raise _invalid(column, "must not contain NUL characters", "query")
        return text


class IntegerType(ColumnType):
    name = "INTEGER"

    def sql_type(self) -> TypeEngine[Any]:
        return BigInteger()

    def validate(self, column: str, value: Any) -> Any:
        # bool is a subclass of int in Python; JSON true is not an integer here.
        if isinstance(value, bool) or not isinstance(value, int):
            raise _invalid(column, "must be an integer")
        if not INT64_MIN <= value <= INT64_MAX:
            raise _invalid(column, "must be a 64-bit integer")
        return value

    def parse_text(self, column: str, text: str) -> Any:
        if not _INTEGER_TEXT.fullmatch(text):
            raise _invalid(column, "must be an integer", "query")
        value = int(text)
        if not INT64_MIN <= value <= INT64_MAX:
            raise _invalid(column, "must be a 64-bit integer", "query")
        return value


class Int32Type(IntegerType):
    """A managed 32-bit column (``organization_id``): a filter value beyond 32 bits is refused
    here instead of overflowing in the driver."""

    def validate(self, column: str, value: Any) -> Any:
        value = super().validate(column, value)
        if not INT32_MIN <= value <= INT32_MAX:
            raise _invalid(column, f"must be an integer from {INT32_MIN} to {INT32_MAX}")
        return value

    def parse_text(self, column: str, text: str) -> Any:
        value = super().parse_text(column, text)
        if not INT32_MIN <= value <= INT32_MAX:
            raise _invalid(column, f"must be an integer from {INT32_MIN} to {INT32_MAX}", "query")
        return value


class ReferenceType(IntegerType):
    """An INTEGER column with ``references``: the id of a record of another table."""

    def sql_type(self) -> TypeEngine[Any]:
        return RecordId


class _Float(TypeDecorator[float]):
    """A double that always reads back as a float: SQLite's RETURNING hands back an integral
    REAL (3.0) as an integer."""

    impl = Float()
    cache_ok = True

    def process_result_value(self, value: Any, dialect: Dialect) -> float | None:
        return None if value is None else float(value)


class FloatType(ColumnType):
    name = "FLOAT"

    def sql_type(self) -> TypeEngine[Any]:
        return _Float()

    def validate(self, column: str, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _invalid(column, "must be a number")
        try:
            number = float(value)
        except OverflowError:
            raise _invalid(column, "is out of range") from None
        if not math.isfinite(number):
            raise _invalid(column, "must be a finite number")
        return number

    def parse_text(self, column: str, text: str) -> Any:
        if len(text) > 64:
            raise _invalid(column, "must be a number", "query")
        try:
            number = float(text)
        except ValueError:
            raise _invalid(column, "must be a number", "query") from None
        if not math.isfinite(number):
            raise _invalid(column, "must be a finite number", "query")
        return number


class BooleanType(ColumnType):
    name = "BOOLEAN"
    operators = frozenset({"eq", "ne", "in"})
    _TEXT: ClassVar[dict[str, bool]] = {"true": True, "false": False, "1": True, "0": False}

    def sql_type(self) -> TypeEngine[Any]:
        return Boolean()

    def validate(self, column: str, value: Any) -> Any:
        if not isinstance(value, bool):
            raise _invalid(column, "must be a boolean")
        return value

    def parse_text(self, column: str, text: str) -> Any:
        value = self._TEXT.get(text.lower())
        if value is None:
            raise _invalid(column, "must be true, false, 1 or 0", "query")
        return value


class TimestampType(ColumnType):
    name = "TIMESTAMP"

    def sql_type(self) -> TypeEngine[Any]:
        # Stored as aware UTC on PostgreSQL and as fixed-width UTC text on SQLite, so comparisons
        # (sort, lt/gt, the conditional PATCH) are chronological on both.
        return UTCDateTime()

    def validate(self, column: str, value: Any) -> Any:
        if not isinstance(value, str):
            raise _invalid(column, "must be an ISO 8601 timestamp string")
        return self._parse(column, value, "body")

    def parse_text(self, column: str, text: str) -> Any:
        try:
            return self._parse(column, text, "query")
        except InvalidInput:
            # An unencoded "+02:00" in a URL arrives as " 02:00".
            head, sep, tail = text.rpartition(" ")
            if not sep or not re.fullmatch(r"\d{2}(:?\d{2})?", tail):
                raise
            return self._parse(column, f"{head}+{tail}", "query")

    @staticmethod
    def _parse(column: str, text: str, where: str) -> datetime:
        if len(text) > 64:
            raise _invalid(column, "must be an ISO 8601 timestamp", where)
        try:
            parsed = datetime.fromisoformat(text)
            # docs/api-contract.md#custom-data: a value without a zone is UTC.
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=UTC)
            return parsed.astimezone(UTC)
        except (ValueError, OverflowError):
            raise _invalid(column, "must be an ISO 8601 timestamp", where) from None


class _SqliteJsonText(JSON):
    """JSON declared as TEXT on SQLite. A column declared JSON has NUMERIC affinity there, which
    turns a stored top-level ``1.0`` into the integer 1 (and ``1e20`` into a REAL): TEXT
    affinity keeps the JSON text exactly as written, as PostgreSQL's jsonb keeps the number."""


@compiles(_SqliteJsonText, "sqlite")
def _compile_json_text(_type: Any, _compiler: Any, **_kw: Any) -> str:
    return "TEXT"


class JsonType(ColumnType):
    name = "JSON"
    operators = frozenset()
    filterable = False
    sortable = False

    def sql_type(self) -> TypeEngine[Any]:
        # none_as_null: a JSON null is SQL NULL, so ``required`` and ``is_null`` mean the same
        # thing for every type.
        return (
            JSON(none_as_null=True)
            .with_variant(JSONB(none_as_null=True), "postgresql")
            .with_variant(_SqliteJsonText(none_as_null=True), "sqlite")
        )

    def validate(self, column: str, value: Any) -> Any:
        _check_json(column, value)
        return value

    def parse_text(self, column: str, text: str) -> Any:
        raise _invalid(column, "JSON columns cannot be filtered", "query")


def _check_json(column: str, value: Any) -> None:
    """Reject what one backend could not store: NUL in strings, NaN and infinities."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _NUL in item:
                raise _invalid(column, "must not contain NUL characters")
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise _invalid(column, "must not contain NaN or Infinity")
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


TYPES: dict[str, ColumnType] = {
    t.name: t for t in (TextType(), IntegerType(), FloatType(), BooleanType(), TimestampType())
}
TYPES[JsonType.name] = JsonType()
REFERENCE = ReferenceType()
ID = ReferenceType()
TIMESTAMP = TYPES["TIMESTAMP"]
