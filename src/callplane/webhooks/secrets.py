"""Webhook endpoint secrets, encrypted at rest with the deployment's key.

A receiver verifies signatures with the very secret we sign with, so it cannot be hashed: it is
sealed with AES-256-GCM (``cryptography``) under a key derived from the deployment's key
(``callplane.deployment``), bound to its endpoint's id (a sealed value copied onto another
endpoint does not open), and opened only to sign a delivery. A copy of the database alone no
longer yields the secrets. Changing ``CALLPLANE_SIGNING_KEY`` makes the stored secrets
unreadable: the endpoints must then be registered again.

A sealed ``whsec_`` secret is 110 characters, within the column's 128.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import uuid

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

#: Marks a sealed value; a value without it is a secret stored before encryption at rest.
PREFIX = "aead1:"
_LABEL = b"webhook-secrets"
_NONCE_BYTES = 12


class SecretBox:
    def __init__(self, deployment_key: bytes) -> None:
        self._aead = AESGCM(hmac.new(deployment_key, _LABEL, hashlib.sha256).digest())

    def seal(self, secret: str, endpoint_id: uuid.UUID) -> str:
        nonce = os.urandom(_NONCE_BYTES)
        sealed = self._aead.encrypt(nonce, secret.encode(), endpoint_id.bytes)
        return PREFIX + base64.urlsafe_b64encode(nonce + sealed).decode()

    def open(self, stored: str, endpoint_id: uuid.UUID) -> str:
        if not stored.startswith(PREFIX):
            return stored
        raw = base64.urlsafe_b64decode(stored[len(PREFIX) :])
        return self._aead.decrypt(
            raw[:_NONCE_BYTES], raw[_NONCE_BYTES:], endpoint_id.bytes
        ).decode()


_boxes: dict[bytes, SecretBox] = {}


def box_for(deployment_key: bytes) -> SecretBox:
    """One box per key and process."""
    box = _boxes.get(deployment_key)
    if box is None:
        box = _boxes[deployment_key] = SecretBox(deployment_key)
    return box
