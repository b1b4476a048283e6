"""Password hashing with argon2id (memory-hard), run off the event loop.

Hashing costs tens of milliseconds of CPU and 64 MiB by design; it runs in a worker thread so a
sign-in never stalls every other request of the process.
"""

from __future__ import annotations

import asyncio
import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from callplane.errors import InvalidInput

MIN_LENGTH = 8
MAX_LENGTH = 1024

_hasher = PasswordHasher()
_dummy_hash: str | None = None


def check_strength(password: str, field: str = "password") -> str:
    if not MIN_LENGTH <= len(password) <= MAX_LENGTH:
        raise InvalidInput(
            f"{field}: must be {MIN_LENGTH} to {MAX_LENGTH} characters", loc=("body", field)
        )
    if "\x00" in password:
        raise InvalidInput(f"{field}: must not contain NUL characters", loc=("body", field))
    return password


def generate_password() -> str:
    """A one-time password a person can type: 16 url-safe characters (96 bits)."""
    return secrets.token_urlsafe(12)


async def hash_password(password: str) -> str:
    return await asyncio.to_thread(_hasher.hash, password)


def _verify(stored: str | None, password: str) -> bool:
    global _dummy_hash
    if stored is None:
        # Unknown account: spend the same time as a real check, so response times do not tell
        # which email addresses have accounts.
        if _dummy_hash is None:
            _dummy_hash = _hasher.hash(secrets.token_urlsafe(16))
        stored = _dummy_hash
        password = ""
    try:
        return _hasher.verify(stored, password) and stored is not _dummy_hash
    except (VerificationError, InvalidHashError):
        return False


async def verify_password(stored: str | None, password: str) -> bool:
    """True when ``password`` matches ``stored``; None (no such account) is always False."""
    return await asyncio.to_thread(_verify, stored, password)
