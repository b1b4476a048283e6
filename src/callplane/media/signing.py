"""Signed recording URLs (docs/api-contract.md#recordings-and-signed-urls).

Local storage: ``{PUBLIC_URL}/v1/recordings/{id}/audio?expires=<unix>&signature=<hmac>``, where
the HMAC-SHA256 covers the organization, the recording id and the expiry exactly as written in
the URL. The organization is not in the URL (it needs no API key) but is in the MAC, so two
organizations holding a recording with the same id can never read each other's audio.
S3 storage: the store's own presigned URL. Both live for URL_LIFETIME_SECONDS.

The clock is injectable (``signer.clock``) so tests can expire a URL without sleeping.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

from callplane.deployment import DeploymentKey, derive_secret
from callplane.errors import CallplaneError
from callplane.kit.db import Database
from callplane.media.storage import URL_LIFETIME_SECONDS, Storage
from callplane.settings import Settings

#: Processes of a deployment may disagree on the time by this much.
CLOCK_SKEW_SECONDS = 60
_EXPIRES = re.compile(r"^[0-9]{1,12}$")
_SIGNATURE = re.compile(r"^[A-Za-z0-9_-]{43}$")
#: SHA-256's block size and HMAC's pads (RFC 2104)
_BLOCK = 64
_INNER_PAD = bytes(byte ^ 0x36 for byte in range(256))
_OUTER_PAD = bytes(byte ^ 0x5C for byte in range(256))


class Forbidden(CallplaneError):
    """A signed URL that is expired, altered or incomplete."""

    status_code = 403


class RecordingSigner:
    def __init__(self, settings: Settings, clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.clock = clock
        self.key = DeploymentKey(settings)
        self._secret: bytes | None = None
        #: the hash states keyed with the last secret used (``_keyed``)
        self._keyed: tuple[bytes, Any, Any] | None = None

    async def secret(self, db: Database) -> bytes:
        """The MAC key, read once per process (CALLPLANE_SIGNING_KEY or the stored key).

        Loaded at the app's start (``callplane.deployment``), so signing inside a transaction,
        as the engine does for a call's webhooks, never opens another one.
        """
        if self._secret is None:
            key = await self.key.load(db)
            self._secret = derive_secret(key, "recording-urls").encode()
        return self._secret

    def _mac(self, secret: bytes, organization_id: int, recording_id: str, expires: str) -> str:
        # HMAC-SHA256 (RFC 2104) run on its two keyed hash states, keyed once per secret and
        # copied per URL: a page of external calls signs dozens of URLs, and ``hmac.HMAC.copy``
        # costs three times as much, in Python around the same C hashes (tests/test_recordings.py
        # checks the result against ``hmac``).
        keyed = self._keyed
        if keyed is None or keyed[0] is not secret:
            key = secret if len(secret) <= _BLOCK else hashlib.sha256(secret).digest()
            key = key.ljust(_BLOCK, b"\0")
            keyed = self._keyed = (
                secret,
                hashlib.sha256(key.translate(_INNER_PAD)),
                hashlib.sha256(key.translate(_OUTER_PAD)),
            )
        inner = keyed[1].copy()
        inner.update(f"v1\n{organization_id}\n{recording_id}\n{expires}".encode())
        outer = keyed[2].copy()
        outer.update(inner.digest())
        return base64.urlsafe_b64encode(outer.digest()).rstrip(b"=").decode()

    def expiry(self) -> str:
        """The expiry written in a URL made now (one per response: its URLs expire together)."""
        return str(int(self.clock()) + URL_LIFETIME_SECONDS)

    def url(
        self,
        storage: Storage,
        secret: bytes,
        organization_id: int,
        recording_id: uuid.UUID | str,
        storage_key: str,
        content_type: str,
        expires: str | None = None,
    ) -> str:
        """A URL valid for URL_LIFETIME_SECONDS (``expires``: ``expiry()``, when several are made
        at once); raises whatever the storage raises."""
        presigned = storage.presigned_url(storage_key, content_type)
        if presigned is not None:
            return presigned
        if expires is None:
            expires = self.expiry()
        signature = self._mac(secret, organization_id, str(recording_id), expires)
        return (
            f"{self.settings.public_url}/v1/recordings/{recording_id}/audio"
            f"?expires={expires}&signature={signature}"
        )

    def check_shape(self, expires: str | None, signature: str | None) -> None:
        """Refuse, before any lookup, a URL that is malformed or past its expiry."""
        if expires is None or signature is None:
            raise Forbidden("Missing signature")
        if not _EXPIRES.fullmatch(expires) or not _SIGNATURE.fullmatch(signature):
            raise Forbidden("Invalid signature")
        now = self.clock()
        if int(expires) <= now:
            raise Forbidden("URL expired")
        # Every URL handed out expires within the lifetime; one that claims a later expiry was
        # not made here (or by an older key policy) and is refused, whatever its signature.
        if int(expires) > now + URL_LIFETIME_SECONDS + CLOCK_SKEW_SECONDS:
            raise Forbidden("URL expiry is beyond the URL lifetime")

    def matches(
        self, secret: bytes, organization_id: int, recording_id: str, expires: str, signature: str
    ) -> bool:
        expected = self._mac(secret, organization_id, recording_id, expires)
        return hmac.compare_digest(expected.encode(), signature.encode())
