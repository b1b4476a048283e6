"""How ``callplane serve`` runs uvicorn.

Uvicorn answers a request it cannot parse (a malformed request line or header) itself, before
the app sees it, with a ``text/plain`` 400. ``JsonHttpToolsProtocol`` is uvicorn's httptools
protocol with that answer in JSON, in the STATUS shape (no route, hence no family, is known at
that point), and ``Connection: close`` as before.

The httptools parser sets no bound of its own on the request line or the headers, so this
protocol sets them: a request target longer than ``MAX_REQUEST_TARGET_BYTES`` is a 414, header
lines adding up to more than ``MAX_HEADER_BYTES`` a 431, both in the same JSON shape and closing
the connection (the rest of such a request is never read). The bounds are generous: the longest
query a route reads is far shorter, and a route still bounds each value it reads (422).
"""

from __future__ import annotations

import logging

import orjson
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from callplane.http.families import STATUS
from callplane.settings import Settings

log = logging.getLogger("callplane")

MAX_REQUEST_TARGET_BYTES = 65_536
MAX_HEADER_BYTES = 65_536


class _Refused(Exception):
    """Raised from a parser callback to stop parsing; httptools wraps it in its own error."""


class JsonHttpToolsProtocol(HttpToolsProtocol):
    #: What the next parser error is answered with, when a limit (not the parser) refused it.
    _refusal: tuple[int, str] | None = None
    _header_bytes = 0

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._refusal = None
        self._header_bytes = 0

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        if len(self.url) > MAX_REQUEST_TARGET_BYTES:
            self._refuse(414, f"Request URL longer than {MAX_REQUEST_TARGET_BYTES} bytes")

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_bytes += len(name) + len(value) + 4  # ": " and CRLF
        if self._header_bytes > MAX_HEADER_BYTES:
            self._refuse(431, f"Request headers larger than {MAX_HEADER_BYTES} bytes")
        super().on_header(name, value)

    def _refuse(self, status: int, message: str) -> None:
        self._refusal = (status, message)
        raise _Refused(message)

    def send_400_response(self, msg: str) -> None:
        status, message = self._refusal or (400, "Invalid HTTP request")
        body = orjson.dumps(STATUS.body(message, [message]))
        content = [STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            content.extend([name, b": ", value, b"\r\n"])
        content.extend(
            [
                b"content-type: application/json\r\n",
                b"content-length: " + str(len(body)).encode("ascii") + b"\r\n",
                b"connection: close\r\n",
                b"\r\n",
                body,
            ]
        )
        self.transport.write(b"".join(content))
        self.transport.close()


def memory_limits_warning(settings: Settings, workers: int) -> str | None:
    """The warning ``serve`` prints when each worker process would count rate limits on its own
    (in memory: every limit is then effectively multiplied by the number of workers)."""
    from callplane.ratelimit import parse_limit

    limited = parse_limit(settings.rate_limit) or parse_limit(settings.auth_failure_limit)
    if workers <= 1 or settings.redis_url or not limited:
        return None
    return (
        f"warning: rate limits are counted in memory by each of the {workers} worker processes, "
        f"so every limit is in effect {workers} times as large; set CALLPLANE_REDIS_URL to "
        "share them"
    )
