"""Routes of this domain (to be filled in by its issue)."""

from __future__ import annotations

from callplane.http.families import DETAIL
from callplane.http.routing import family_router

router = family_router(DETAIL, tags=["feedback"])
