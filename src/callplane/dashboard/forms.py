"""Reading submitted forms: text fields only (dashboard forms upload no files)."""

from __future__ import annotations

from starlette.requests import Request


async def fields(request: Request) -> dict[str, str]:
    """The form's text fields (the first value of each); the CSRF check has parsed it already."""
    form = await request.form(max_files=0, max_fields=2000)
    found: dict[str, str] = {}
    for name, value in form.multi_items():
        if isinstance(value, str):
            found.setdefault(name, value)
    return found
