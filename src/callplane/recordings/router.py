"""Routes of this domain (to be filled in by its issue)."""

from __future__ import annotations

from callplane.http.families import STATUS
from callplane.http.routing import family_router

router = family_router(STATUS, tags=["recordings"])
