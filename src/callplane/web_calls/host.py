"""What the web calls API needs of the process that holds web calls (the app's, built in
``app.py`` from ``engine/web.py``): the routes never import the engine (tests/test_layers.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from callplane.models.calls import Call
from callplane.web_calls.service import WebCallSpec

if TYPE_CHECKING:
    from callplane.telephony.webrtc import WebRtcConnection


class WebCallHost(Protocol):
    async def open_call(self, spec: WebCallSpec, connection: WebRtcConnection) -> Call:
        """Create the answered call (spending its token) and hold it until it ends."""
        ...
