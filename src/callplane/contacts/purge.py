"""Background purge of expired contact data (to be filled in by its issue)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from callplane.runtime import Runtime


@asynccontextmanager
async def purge_task(runtime: Runtime) -> AsyncIterator[None]:
    yield
