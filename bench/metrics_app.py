"""The two apps ``bench/metrics.py`` compares: callplane as served, and the same app without
its HTTP metrics (the only per-request metrics work; the engine's are per call and turn)."""

from __future__ import annotations

from fastapi import FastAPI

from callplane.app import create_app_from_env
from callplane.observability.middleware import HttpMetrics


def metrics_on() -> FastAPI:
    return create_app_from_env()


def metrics_off() -> FastAPI:
    app = create_app_from_env()
    # The middleware stack is built on the first request, from this list.
    app.user_middleware = [m for m in app.user_middleware if m.cls is not HttpMetrics]
    return app
