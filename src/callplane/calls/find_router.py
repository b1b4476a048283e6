"""GET /calls/find_by_attribute, in the find family's error shape (to be filled in by its issue)."""

from __future__ import annotations

from callplane.http.families import FIND
from callplane.http.routing import family_router

router = family_router(FIND, tags=["calls"])
