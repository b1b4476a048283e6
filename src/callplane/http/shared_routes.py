"""Routers included once per process, their routes shared by every app built in it.

FastAPI builds an included route's handler (its request and response models) on the first
request that reaches it and keeps it on the inclusion, so an inclusion per app builds them all
again for every app: ~100 ms on the first request of each test's app, minutes over the suite.
Nothing in a route belongs to one app: a handler finds its runtime through ``request.app``, and
no app overrides dependencies.
"""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import APIRouter, FastAPI
from fastapi.datastructures import DefaultPlaceholder
from starlette.responses import Response
from starlette.routing import BaseRoute


def include_shared(app: FastAPI, routers: Sequence[APIRouter], *, prefix: str) -> None:
    """``app.include_router`` for each router, with the routes built once per process."""
    response_class = app.router.default_response_class
    if isinstance(response_class, DefaultPlaceholder):
        response_class = response_class.value
    # By identity (an APIRouter is not hashable): routers are module-level and live as long.
    key = (tuple(map(id, routers)), prefix, response_class)
    if key not in _INCLUDED:
        holder = APIRouter(default_response_class=response_class)
        for router in routers:
            holder.include_router(router, prefix=prefix)
        _INCLUDED[key] = tuple(holder.routes)
    app.router.routes.extend(_INCLUDED[key])


_INCLUDED: dict[tuple[tuple[int, ...], str, type[Response]], tuple[BaseRoute, ...]] = {}
