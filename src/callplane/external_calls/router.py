"""Routes of this domain (to be filled in by its issue)."""

from __future__ import annotations

from callplane.http.families import EXTERNAL_CALLS
from callplane.http.routing import family_router

router = family_router(EXTERNAL_CALLS, tags=["external_calls"])
