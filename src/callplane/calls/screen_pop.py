"""``GET /calls/screen_pop/{token}``: a transferred call by its screen-pop token (docs/tools.md)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from callplane.calls.service import CALL_NOT_FOUND
from callplane.errors import NotFound
from callplane.kit.tenancy import select_owned
from callplane.models.calls import Call

#: Tokens are ``secrets.token_urlsafe``: anything longer or outside its alphabet is no token.
MAX_TOKEN_LENGTH = 255


async def call_by_token(session: AsyncSession, organization_id: int, token: str) -> Call:
    """The organization's call with this token; another organization's is not found."""
    if not token or len(token) > MAX_TOKEN_LENGTH or not _urlsafe(token):
        raise NotFound(CALL_NOT_FOUND)
    call: Call | None = await session.scalar(
        select_owned(Call, organization_id).where(Call.screen_pop_token == token).limit(1)
    )
    if call is None:
        raise NotFound(CALL_NOT_FOUND)
    return call


def _urlsafe(token: str) -> bool:
    return all(c.isascii() and (c.isalnum() or c in "-_") for c in token)
