"""Domain errors. Services raise these; the HTTP layer renders them in each route's family shape.

    CallplaneError            status 500, never raised on purpose
    ├── Unauthorized          401 (carries WWW-Authenticate when rendered)
    ├── Forbidden             403 (a key outside its scopes, a role that may not)
    ├── NotFound              404 (also another organization's resource)
    ├── Conflict              409
    ├── PayloadTooLarge       413
    ├── InvalidInput          422, with the location of the offending input
    ├── RateLimited           429, with the seconds to wait
    └── Unavailable           503, with the seconds to wait (e.g. SQLite's write lock timed out)

No web framework is imported here: services stay plain Python.
"""

from __future__ import annotations


class CallplaneError(Exception):
    status_code = 500

    def __init__(self, message: str, *, errors: list[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.errors = errors if errors is not None else [message]


class Unauthorized(CallplaneError):
    status_code = 401


class Forbidden(CallplaneError):
    status_code = 403


class NotFound(CallplaneError):
    status_code = 404


class Conflict(CallplaneError):
    status_code = 409


class PayloadTooLarge(CallplaneError):
    status_code = 413


class InvalidInput(CallplaneError):
    """Invalid input. ``loc`` follows the validation-detail convention, e.g. ("body", "note")."""

    status_code = 422

    def __init__(
        self, message: str, *, loc: tuple[str | int, ...] = ("body",), type_: str = "value_error"
    ) -> None:
        super().__init__(message)
        self.loc = loc
        self.type = type_


class RateLimited(CallplaneError):
    status_code = 429

    def __init__(self, retry_after: int) -> None:
        super().__init__("Rate limit exceeded, retry later")
        self.retry_after = retry_after


class Unavailable(CallplaneError):
    status_code = 503

    def __init__(self, message: str, retry_after: int = 1) -> None:
        super().__init__(message)
        self.retry_after = retry_after
