"""Campaigns and the do-not-call list (the server's ``docs/campaigns.md``): ``campaigns`` and
``suppressions``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import httpx

from callplane_client._resources import _drop_none, _one, _page, _Resource, _segment
from callplane_client._transport import Request
from callplane_client.models import Campaign, Page, Recipient, RecipientsAdded, Result, Suppression


def _text(response: httpx.Response) -> str:
    return response.text


class Campaigns(_Resource):
    def create(
        self,
        name: str,
        agent_id: str,
        *,
        agent_branch_name: str | None = None,
        agent_commit_id: str | None = None,
        from_number: str | None = None,
        params: Mapping[str, Any] | None = None,
        schedule: Mapping[str, Any] | None = None,
        retry: Mapping[str, Any] | None = None,
        pacing: Mapping[str, Any] | None = None,
    ) -> Campaign:
        """A campaign in ``draft``; every setting left out takes its default."""
        body = _drop_none(
            {
                "name": name,
                "agent_id": agent_id,
                "agent_branch_name": agent_branch_name,
                "agent_commit_id": agent_commit_id,
                "from_number": from_number,
                "params": None if params is None else dict(params),
                "schedule": None if schedule is None else dict(schedule),
                "retry": None if retry is None else dict(retry),
                "pacing": None if pacing is None else dict(pacing),
            }
        )
        return self._send(Request("POST", "/v1/campaigns", _one(Campaign, "campaign"), json=body))  # type: ignore[no-any-return]

    def list(self, page: int = 1, page_size: int = 20) -> Page[Campaign]:
        params = {"page": page, "page_size": page_size}
        return self._send(Request("GET", "/v1/campaigns", _page(Campaign, "campaigns"), params))  # type: ignore[no-any-return]

    def iter(self, page_size: int = 100) -> Iterator[Campaign]:
        return self._walk(lambda page: self.list(page=page, page_size=page_size))

    def get(self, id: str) -> Campaign:  # noqa: A002
        path = f"/v1/campaigns/{_segment(id)}"
        return self._send(Request("GET", path, _one(Campaign, "campaign")))  # type: ignore[no-any-return]

    def update(
        self,
        id: str,  # noqa: A002
        *,
        name: str | None = None,
        schedule: Mapping[str, Any] | None = None,
        retry: Mapping[str, Any] | None = None,
        pacing: Mapping[str, Any] | None = None,
    ) -> Campaign:
        """Change a draft or paused campaign (each of ``schedule``, ``retry``, ``pacing`` whole)."""
        body = _drop_none(
            {
                "name": name,
                "schedule": None if schedule is None else dict(schedule),
                "retry": None if retry is None else dict(retry),
                "pacing": None if pacing is None else dict(pacing),
            }
        )
        path = f"/v1/campaigns/{_segment(id)}"
        return self._send(Request("PATCH", path, _one(Campaign, "campaign"), json=body))  # type: ignore[no-any-return]

    def _move(self, id: str, verb: str) -> Campaign:  # noqa: A002
        path = f"/v1/campaigns/{_segment(id)}/{verb}"
        return self._send(Request("POST", path, _one(Campaign, "campaign")))  # type: ignore[no-any-return]

    def start(self, id: str) -> Campaign:  # noqa: A002
        return self._move(id, "start")

    def pause(self, id: str) -> Campaign:  # noqa: A002
        return self._move(id, "pause")

    def resume(self, id: str) -> Campaign:  # noqa: A002
        return self._move(id, "resume")

    def cancel(self, id: str) -> Campaign:  # noqa: A002
        return self._move(id, "cancel")

    def add_recipients(
        self,
        id: str,  # noqa: A002
        recipients: Sequence[Mapping[str, Any]] | None = None,
        *,
        csv: str | bytes | None = None,
    ) -> RecipientsAdded:
        """Either ``recipients`` (at most 10,000 a request) or ``csv`` (a header row naming
        ``phone_number``; other columns become params)."""
        path = f"/v1/campaigns/{_segment(id)}/recipients"
        if csv is not None:
            content = csv.encode() if isinstance(csv, str) else csv
            request = Request(
                "POST",
                path,
                _one(RecipientsAdded),
                content=content,
                headers={"Content-Type": "text/csv"},
            )
        else:
            body = {"recipients": [dict(r) for r in recipients or ()]}
            request = Request("POST", path, _one(RecipientsAdded), json=body)
        return self._send(request)  # type: ignore[no-any-return]

    def recipients(
        self,
        id: str,  # noqa: A002
        *,
        status: str | None = None,
        page: int = 1,
        page_size: int = 20,
    ) -> Page[Recipient]:
        params = _drop_none({"status": status, "page": page, "page_size": page_size})
        path = f"/v1/campaigns/{_segment(id)}/recipients"
        return self._send(Request("GET", path, _page(Recipient, "recipients"), params))  # type: ignore[no-any-return]

    def export(self, id: str) -> str:  # noqa: A002
        """Every recipient as CSV text."""
        return self._send(Request("GET", f"/v1/campaigns/{_segment(id)}/export", _text))  # type: ignore[no-any-return]


class Suppressions(_Resource):
    def create(self, phone_number: str, reason: str | None = None) -> Suppression:
        body = _drop_none({"phone_number": phone_number, "reason": reason})
        return self._send(  # type: ignore[no-any-return]
            Request("POST", "/v1/suppressions", _one(Suppression, "suppression"), json=body)
        )

    def list(
        self, phone_number: str | None = None, page: int = 1, page_size: int = 20
    ) -> Page[Suppression]:
        params = _drop_none({"phone_number": phone_number, "page": page, "page_size": page_size})
        return self._send(  # type: ignore[no-any-return]
            Request("GET", "/v1/suppressions", _page(Suppression, "suppressions"), params)
        )

    def delete(self, phone_number: str) -> Result:
        path = f"/v1/suppressions/{_segment(phone_number)}"
        return self._send(Request("DELETE", path, _one(Result)))  # type: ignore[no-any-return]
