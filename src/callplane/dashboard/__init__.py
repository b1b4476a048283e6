"""The dashboard at /dashboard: server-rendered pages over the same services as the API.

A mounted application of its own, so its cookie, CSRF checks, HTML error pages and security
headers never touch /v1. Pages import services, never routers (README.md#the-dashboard, STYLE).
"""

from __future__ import annotations

from callplane.dashboard.app import create_dashboard

__all__ = ["create_dashboard"]
