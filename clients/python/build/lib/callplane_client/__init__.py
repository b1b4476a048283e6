"""Python client for the callplane API (v1).

from callplane_client import Callplane, APIError
client = Callplane("cp_...", base_url="http://127.0.0.1:8000")
"""

from callplane_client import models, webhooks
from callplane_client._client import AsyncCallplane, Callplane
from callplane_client._errors import APIConnectionError, APIError
from callplane_client.models import CallStatus, Page

__all__ = [
    "APIConnectionError",
    "APIError",
    "AsyncCallplane",
    "CallStatus",
    "Callplane",
    "Page",
    "models",
    "webhooks",
]
__version__ = "0.1.0"
