"""Reading submitted forms, and what each page's form may hold.

A dashboard form is urlencoded text of at most ``MAX_FORM_BYTES``, without files. A page that
takes a file says so with ``@takes_files``: its form may then be multipart, up to its own size
limit and number of files. The route class (``dashboard.routing``) applies the policy before the
page runs: the body is bounded while it is read, and the CSRF token is read from the
``X-CSRF-Token`` header (htmx) or the form's own ``csrf_token`` field, multipart or not.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from starlette.datastructures import UploadFile
from starlette.requests import Request

#: Dashboard forms are small; anything bigger is refused while it is read.
MAX_FORM_BYTES = 1024 * 1024
MAX_FIELDS = 2000
#: Room for the multipart framing and the text fields beside a page's largest file.
MULTIPART_OVERHEAD = 64 * 1024

_POLICY = "__callplane_dashboard_form_policy__"
EndpointT = TypeVar("EndpointT", bound=Callable[..., Any])


@dataclass(frozen=True)
class FormPolicy:
    max_bytes: int = MAX_FORM_BYTES
    max_files: int = 0


def takes_files(max_file_bytes: int, max_files: int = 1) -> Callable[[EndpointT], EndpointT]:
    """Mark a page whose form uploads up to ``max_files`` files of ``max_file_bytes`` each."""

    def mark(endpoint: EndpointT) -> EndpointT:
        limit = max_files * max_file_bytes + MULTIPART_OVERHEAD
        setattr(endpoint, _POLICY, FormPolicy(max_bytes=limit, max_files=max_files))
        return endpoint

    return mark


def policy_of(endpoint: Callable[..., Any]) -> FormPolicy:
    policy: FormPolicy = getattr(endpoint, _POLICY, FormPolicy())
    return policy


async def read(request: Request, policy: FormPolicy) -> Any:
    """The form, parsed once per request (later reads get the same one). The route class bounds
    the body's size under it."""
    return await request.form(max_files=policy.max_files, max_fields=MAX_FIELDS)


async def fields(request: Request) -> dict[str, str]:
    """The form's text fields (the first value of each)."""
    form = await request.form(max_files=0, max_fields=MAX_FIELDS)
    found: dict[str, str] = {}
    for name, value in form.multi_items():
        if isinstance(value, str):
            found.setdefault(name, value)
    return found


async def upload(request: Request, name: str) -> UploadFile | None:
    """The file sent in field ``name``; None when none was chosen (a browser then sends an
    empty part without a file name)."""
    form = await request.form(max_files=0, max_fields=MAX_FIELDS)
    value = form.get(name)
    if isinstance(value, UploadFile) and value.filename:
        return value
    return None
