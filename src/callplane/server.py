"""How ``callplane serve`` runs uvicorn.

Uvicorn answers a request it cannot parse (a malformed or over-long request line or header)
itself, before the app sees it, with a ``text/plain`` 400. ``JsonHttpToolsProtocol`` is
uvicorn's httptools protocol with that one answer in JSON, in the STATUS shape (no route, hence
no family, is known at that point), and ``Connection: close`` as before.

Limits: the httptools parser sets no bound of its own on the request line or on a header, so
such a request reaches the app, whose routes bound each value they read (a 120 KB query value is
a 422 of its route's family). What reaches this protocol's 400 is what the parser refuses:
malformed request lines and headers.
"""

from __future__ import annotations

import logging

import orjson
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from callplane.http.families import STATUS
from callplane.settings import Settings

log = logging.getLogger("callplane")

#: The body of uvicorn's own 400, in the STATUS shape.
BAD_REQUEST = orjson.dumps(STATUS.body("Invalid HTTP request", ["Invalid HTTP request"]))


class JsonHttpToolsProtocol(HttpToolsProtocol):
    def send_400_response(self, msg: str) -> None:
        content = [STATUS_LINE[400]]
        for name, value in self.server_state.default_headers:
            content.extend([name, b": ", value, b"\r\n"])
        content.extend(
            [
                b"content-type: application/json\r\n",
                b"content-length: " + str(len(BAD_REQUEST)).encode("ascii") + b"\r\n",
                b"connection: close\r\n",
                b"\r\n",
                BAD_REQUEST,
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
