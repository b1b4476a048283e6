"""Verifying the webhooks callplane sends (Standard Webhooks; docs/api-contract.md#webhooks), with
the standard library only.

    from callplane_client import webhooks
    event = webhooks.verify(request_body, request_headers, "whsec_...")
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import Any

#: How far a webhook's timestamp may be from now, either way (replayed or delayed deliveries).
TOLERANCE_SECONDS = 300


class WebhookVerificationError(Exception):
    """The body, headers or secret do not match: do not trust this request."""


def _secret_bytes(secret: str) -> bytes:
    try:
        return base64.b64decode(secret.removeprefix("whsec_"), validate=True)
    except ValueError:
        raise WebhookVerificationError("the secret is not a whsec_ base64 secret") from None


def _header(headers: Mapping[str, str], name: str) -> str:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    raise WebhookVerificationError(f"missing header {name}")


def sign(body: bytes | str, msg_id: str, timestamp: int, secret: str) -> str:
    """The ``webhook-signature`` value for a message (``v1,<base64>``)."""
    payload = body.encode() if isinstance(body, str) else body
    signed = f"{msg_id}.{timestamp}.".encode() + payload
    digest = hmac.new(_secret_bytes(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def verify(
    body: bytes | str,
    headers: Mapping[str, str],
    secret: str,
    *,
    tolerance: int = TOLERANCE_SECONDS,
    now: float | None = None,
) -> Any:
    """Check the signature and timestamp of a delivery; return its parsed JSON body.

    Raises ``WebhookVerificationError`` when a header is missing, the timestamp is more than
    ``tolerance`` seconds away from now, or no signature of the ``webhook-signature`` header
    (space-separated, several during a secret rotation) matches.
    """
    msg_id = _header(headers, "webhook-id")
    raw_timestamp = _header(headers, "webhook-timestamp")
    try:
        timestamp = int(raw_timestamp)
    except ValueError:
        raise WebhookVerificationError("webhook-timestamp is not a number") from None
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance:
        raise WebhookVerificationError("webhook-timestamp is too old or too new")
    expected = sign(body, msg_id, timestamp, secret).split(",", 1)[1]
    for candidate in _header(headers, "webhook-signature").split():
        version, _, signature = candidate.partition(",")
        if version == "v1" and hmac.compare_digest(signature, expected):
            payload = body.decode() if isinstance(body, bytes) else body
            return json.loads(payload)
    raise WebhookVerificationError("no matching signature")
