"""The rules every free-form JSON value follows, from the request body to the database and back.

One policy, so a value accepted once is read back the same on SQLite and PostgreSQL:

- nesting: at most ``MAX_DEPTH`` levels for a whole request body (and for a fixture document's
  values), far below what the response encoder can write (orjson stops at 254), so an accepted
  value can always be returned;
- integers: 64-bit signed (what every database column and both JSON encoders keep exactly);
- floats: finite; ``-0.0`` is read as ``0.0`` (PostgreSQL's numeric has no negative zero);
- text: no NUL character (PostgreSQL cannot store one in text or jsonb), no lone surrogate.

An offending value is a 422 naming where it is (``params.x``), raised as ``InvalidInput``.

Storage (``dumps``/``loads``, the engines' JSON codec): PostgreSQL's jsonb keeps numbers as
``numeric``, which writes ``1e20`` back as ``100000000000000000000`` — an integer no JSON encoder
of ours could return, and a float turned into an integer. Floats of 1e16 and more (the ones JSON
encoders write with an exponent) are therefore stored as their exact decimal expansion with a
``.0``, which numeric keeps as written, and every backend reads it back as the same float.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

from callplane.errors import InvalidInput

MAX_DEPTH = 64
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

_BIG_FLOAT = 1e16
_EXPONENT = re.compile(rb"[0-9]e")
_LONG_DIGITS = re.compile(rb"[0-9]{19}")


def _where(loc: tuple[str | int, ...]) -> tuple[str | int, ...]:
    return ("body", *loc)


def _check(value: Any, loc: tuple[str | int, ...], depth: int) -> Any:
    """``value`` checked against the policy, with ``-0.0`` normalized; raises InvalidInput."""
    if isinstance(value, str):
        return _check_text(value, loc)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            raise InvalidInput(
                f"must be an integer from {INT64_MIN} to {INT64_MAX}",
                loc=_where(loc),
                type_="int_range",
            )
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput("must be a finite number", loc=_where(loc), type_="float_range")
        return 0.0 if value == 0 else value
    if depth >= MAX_DEPTH:
        # Named by its outermost field: a path 64 levels long would say nothing more.
        raise InvalidInput(
            f"is nested more than {MAX_DEPTH} levels deep", loc=_where(loc[:1]), type_="json_depth"
        )
    if isinstance(value, dict):
        return {
            _check_text(key, (*loc, key)): _check(item, (*loc, key), depth + 1)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_check(item, (*loc, i), depth + 1) for i, item in enumerate(value)]
    raise InvalidInput("is not a JSON value", loc=_where(loc))


def _check_text(value: str, loc: tuple[str | int, ...]) -> str:
    if "\x00" in value:
        raise InvalidInput("must not contain NUL characters", loc=_where(loc), type_="string_nul")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput("must be valid Unicode text", loc=_where(loc)) from None
    return value


def check_value(value: Any, loc: tuple[str | int, ...] = (), depth: int = 0) -> Any:
    """A parsed JSON value checked against the policy (for values that did not come through
    ``parse``, e.g. a fixture document). ``depth``: how deep the value sits in its document."""
    return _check(value, loc, depth)


def is_plain(value: Any, depth: int = 0) -> bool:
    """True when ``check_value(value, depth=depth)`` would return an equal value: it breaks no
    rule and holds no ``-0.0``. A quick screen for large documents (a fixture of 300,000 calls):
    it rebuilds no container and builds no location, and on False the caller runs
    ``check_value``, whose error and result are then exactly the policy's. Anything unusual (a
    subclass of str, a non-str key) is simply not plain."""
    return _plain(value, depth)


def _plain(value: Any, depth: int) -> bool:
    if depth >= MAX_DEPTH:
        return False
    kind = type(value)
    if kind is dict:
        for key in value:
            if type(key) is not str or "\x00" in key or not (key.isascii() or _encodes(key)):
                return False
        items = value.values()
    elif kind is list:
        items = value
    else:
        return False
    for item in items:
        kind = type(item)
        if kind is str:
            if "\x00" in item or not (item.isascii() or _encodes(item)):
                return False
        elif kind is int:
            if not INT64_MIN <= item <= INT64_MAX:
                return False
        elif kind is float:
            if not math.isfinite(item) or (item == 0 and math.copysign(1.0, item) < 0):
                return False
        elif kind is dict or kind is list:
            if not _plain(item, depth + 1):
                return False
        elif item is not None and kind is not bool:
            return False
    return True


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse(raw: bytes, *, exact_text: bool = False) -> Any:
    """A request body's JSON value under the policy; InvalidInput for anything else.

    ``exact_text``: for a route that stores the body's JSON as text and returns that text
    (contact data), only strictness and depth apply — its integers of any size and its NUL
    characters are kept exactly, as they are returned exactly.

    orjson parses strictly (no NaN/Infinity, valid UTF-8, no lone surrogates, bounded depth).
    The value is walked only when the bytes show it might break a rule: more brackets than the
    depth limit, a run of 19 digits (orjson reads integers beyond 64 bits as floats, so such a
    body is re-read exactly by the standard library, safe now that its depth is known), an
    escaped NUL, or a negative zero.
    """
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        deep = "recursion" in str(exc) or "depth" in str(exc)
        reason = f"nested more than {MAX_DEPTH} levels deep" if deep else "not valid JSON"
        raise InvalidInput(
            f"Request body is {reason}", loc=("body",), type_="json_invalid"
        ) from None
    deep = raw.count(b"[") + raw.count(b"{") > MAX_DEPTH
    long_digits = _LONG_DIGITS.search(raw) is not None
    if deep:
        _check_depth(value, (), 0)  # bounds the depth before the standard library recurses
    if long_digits:
        value = json.loads(raw, parse_constant=_reject_constant)
    if exact_text or not (long_digits or b"\\u0000" in raw or b"-0" in raw):
        return value
    return _check(value, (), 0)


def _check_depth(value: Any, loc: tuple[str | int, ...], depth: int) -> None:
    if isinstance(value, dict | list):
        if depth >= MAX_DEPTH:
            raise InvalidInput(
                f"is nested more than {MAX_DEPTH} levels deep",
                loc=_where(loc[:1]),
                type_="json_depth",
            )
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            _check_depth(item, (*loc, key), depth + 1)


# --- storage codec ------------------------------------------------------------------------


def _exact_floats(value: Any) -> Any:
    if isinstance(value, float):
        if abs(value) >= _BIG_FLOAT and math.isfinite(value):
            return orjson.Fragment(f"{int(value)}.0".encode())
        return value
    if isinstance(value, dict):
        return {key: _exact_floats(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_exact_floats(item) for item in value]
    return value


def dumps(value: Any) -> str:
    """JSON text of a value for a JSON column (see the module docstring on big floats)."""
    encoded = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    if _EXPONENT.search(encoded):
        encoded = orjson.dumps(_exact_floats(value), option=orjson.OPT_NON_STR_KEYS)
    return encoded.decode()


def loads(text: str | bytes | int | float) -> Any:
    """A JSON column's value. orjson reads an integer beyond 64 bits (PostgreSQL's rendering of
    a big float stored before this codec) as that float, which keeps it readable. SQLite hands
    back a number already converted when the column has NUMERIC affinity (a custom-data JSON
    column created before they were declared TEXT)."""
    if isinstance(text, int | float):
        return text
    return orjson.loads(text)
