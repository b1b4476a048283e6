"""Standard Webhooks signatures (https://www.standardwebhooks.com), by the reference library."""

from __future__ import annotations

import base64
import secrets
from datetime import datetime

from standardwebhooks.webhooks import Webhook

SECRET_BYTES = 32


def new_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def signed_headers(secret: str, event_id: str, at: datetime, body: str) -> dict[str, str]:
    """``webhook-id``, ``webhook-timestamp`` and ``webhook-signature`` for one attempt.

    The id stays the event's for every attempt (receivers de-duplicate on it); the timestamp is
    the attempt's, so a retry hours later still passes the receiver's freshness check.
    """
    signature = Webhook(secret).sign(event_id, at, body)
    return {
        "webhook-id": event_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": signature,
    }
