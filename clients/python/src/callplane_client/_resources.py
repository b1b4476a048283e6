"""One class per resource, one method per route (clients/python/README.md names). Methods build a
request and hand it to the client's transport: the sync client returns the result, the async client
an awaitable of it (``await client.calls.get(id)``)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import quote

import httpx

from callplane_client._model import Model
from callplane_client._transport import Request
from callplane_client.models import (
    Call,
    CallEvent,
    CallTag,
    CancelResult,
    Contact,
    ContactData,
    Delivery,
    ExternalCall,
    FeedbackEntry,
    FeedbackNote,
    Page,
    PhoneNumber,
    Record,
    Recording,
    Result,
    Table,
    Voice,
    Webhook,
)

M = TypeVar("M", bound=Model)
# Resources have a method named ``list``: inside their class bodies the builtin needs this name.
List = list
T = TypeVar("T")


def _segment(value: object) -> str:
    """A path segment: identifiers may hold ``+``, ``/`` or ``:``; they are always encoded."""
    return quote(str(value), safe="")


def _drop_none(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def _one(model: type[M], key: str | None = None) -> Callable[[httpx.Response], M]:
    """Parse a resource, unwrapped from its envelope when ``key`` names it."""

    def parse(response: httpx.Response) -> M:
        body = response.json()
        return model(body[key] if key else body)

    return parse


def _many(model: type[M], key: str | None = None) -> Callable[[httpx.Response], list[M]]:
    def parse(response: httpx.Response) -> List[M]:
        body = response.json()
        return [model(item) for item in (body[key] if key else body)]

    return parse


def _page(model: type[M], key: str) -> Callable[[httpx.Response], Page[M]]:
    def parse(response: httpx.Response) -> Page[M]:
        body = response.json()
        size = body.get("page_size", body.get("per_page", 0))
        total_pages = body.get("total_pages")
        if total_pages is None and size:
            total_pages = -(-body.get("total_count", 0) // size)
        return Page(
            items=[model(item) for item in body[key]],
            total_count=body.get("total_count", 0),
            page=body.get("page", 1),
            page_size=size,
            total_pages=total_pages,
            body=body,
        )

    return parse


def _last(current: Page[Any], page: int) -> bool:
    return not current.items or (current.total_pages or 0) <= page


class _Resource:
    def __init__(self, send: Callable[[Request[Any]], Any], is_async: bool = False) -> None:
        self._send = send
        self._async = is_async

    def _walk(self, fetch: Callable[[int], Page[T]]) -> Iterator[T]:
        """Every item of every page; an async iterator on the async client (``async for``)."""
        if self._async:
            return self._walk_async(fetch)  # type: ignore[return-value]
        return self._walk_sync(fetch)

    def _walk_sync(self, fetch: Callable[[int], Page[T]]) -> Iterator[T]:
        page = 1
        while True:
            current = fetch(page)
            yield from current.items
            if _last(current, page):
                return
            page += 1

    async def _walk_async(self, fetch: Callable[[int], Any]) -> AsyncIterator[Any]:
        page = 1
        while True:
            current = await fetch(page)
            for item in current.items:
                yield item
            if _last(current, page):
                return
            page += 1


class Voices(_Resource):
    def list(self) -> List[Voice]:
        return self._send(Request("GET", "/v1/voices", _many(Voice)))  # type: ignore[no-any-return]

    def get(self, id: str) -> Voice:  # noqa: A002
        return self._send(Request("GET", f"/v1/voices/{_segment(id)}", _one(Voice)))  # type: ignore[no-any-return]

    def create(
        self,
        name: str,
        engine: str,
        *,
        languages: Sequence[str] | None = None,
        description: str | None = None,
        tags: Sequence[str] | None = None,
    ) -> Voice:
        body = _drop_none(
            {
                "name": name,
                "engine": engine,
                "languages": list(languages) if languages is not None else None,
                "description": description,
                "tags": list(tags) if tags is not None else None,
            }
        )
        return self._send(Request("POST", "/v1/voices", _one(Voice), json=body))  # type: ignore[no-any-return]

    def delete(self, id: str) -> Result:  # noqa: A002
        return self._send(Request("DELETE", f"/v1/voices/{_segment(id)}", _one(Result)))  # type: ignore[no-any-return]

    def preview(self, id: str, text: str | None = None) -> bytes:  # noqa: A002
        """The text (or a greeting) spoken in the voice: an 8 kHz mono WAV file."""
        params = _drop_none({"text": text})
        path = f"/v1/voices/{_segment(id)}/preview"
        return self._send(Request("GET", path, lambda r: r.content, params))  # type: ignore[no-any-return]


class CallTags(_Resource):
    def list(self, page: int = 1, page_size: int = 20) -> Page[CallTag]:
        params = {"page": page, "page_size": page_size}
        return self._send(Request("GET", "/v1/call_tags", _page(CallTag, "call_tags"), params))  # type: ignore[no-any-return]

    def iter(self, page_size: int = 100) -> Iterator[CallTag]:
        return self._walk(lambda page: self.list(page=page, page_size=page_size))

    def create(
        self,
        name: str,
        description: str | None = None,
        color: str | None = None,
        always_enabled: bool | None = None,
    ) -> CallTag:
        body = _drop_none(
            {
                "name": name,
                "description": description,
                "color": color,
                "always_enabled": always_enabled,
            }
        )
        return self._send(Request("POST", "/v1/call_tags", _one(CallTag), json=body))  # type: ignore[no-any-return]


class _Unset:
    pass


_UNSET: Any = _Unset()


class Numbers(_Resource):
    def create(
        self,
        number: str,
        friendly_name: str | None = None,
        agent_id: str | None = None,
        agent_branch_name: str | None = None,
    ) -> PhoneNumber:
        """Add a number (unique across organizations), optionally routed to an agent's branch."""
        body = _drop_none(
            {
                "number": number,
                "friendly_name": friendly_name,
                "agent_id": agent_id,
                "agent_branch_name": agent_branch_name,
            }
        )
        return self._send(Request("POST", "/v1/numbers", _one(PhoneNumber), json=body))  # type: ignore[no-any-return]

    def list(self) -> List[PhoneNumber]:
        return self._send(Request("GET", "/v1/numbers", _many(PhoneNumber, "numbers")))  # type: ignore[no-any-return]

    def update(
        self,
        id: str,  # noqa: A002
        friendly_name: str | None = None,
        *,
        agent_id: str | None = _UNSET,
        agent_branch_name: str | None = None,
    ) -> PhoneNumber:
        """Rename and/or route: ``agent_id`` an agent's id, or None to unroute."""
        body: dict[str, Any] = _drop_none(
            {"friendly_name": friendly_name, "agent_branch_name": agent_branch_name}
        )
        if agent_id is not _UNSET:
            body["agent_id"] = agent_id
        return self._send(  # type: ignore[no-any-return]
            Request("PATCH", f"/v1/numbers/{_segment(id)}", _one(PhoneNumber), json=body)
        )

    def delete(self, id: str) -> Result:  # noqa: A002
        return self._send(Request("DELETE", f"/v1/numbers/{_segment(id)}", _one(Result)))  # type: ignore[no-any-return]


class Calls(_Resource):
    def create(self, to_number: str, *, idempotency_key: str | None = None, **fields: Any) -> Call:
        """Enqueue a call. An ``Idempotency-Key`` (generated unless given) goes with every try,
        so a retry after a lost answer returns the first call instead of placing a second."""
        key = idempotency_key or f"cp-client-{uuid.uuid4()}"
        return self._send(  # type: ignore[no-any-return]
            Request(
                "POST",
                "/v1/calls",
                _one(Call, "call"),
                json={"to_number": to_number, **fields},
                headers={"Idempotency-Key": key},
            )
        )

    def get(self, id: str) -> Call:  # noqa: A002
        return self._send(Request("GET", f"/v1/calls/{_segment(id)}", _one(Call, "call")))  # type: ignore[no-any-return]

    def list(self, page: int = 1, page_size: int = 20, **filters: Any) -> Page[Call]:
        """``filters``: ``status``, ``direction``, ``created_after``, ``created_before``."""
        params = _drop_none({"page": page, "page_size": page_size, **filters})
        return self._send(Request("GET", "/v1/calls", _page(Call, "calls"), params))  # type: ignore[no-any-return]

    def iter(self, page_size: int = 100, **filters: Any) -> Iterator[Call]:
        return self._walk(lambda page: self.list(page=page, page_size=page_size, **filters))

    def screen_pop(self, token: str) -> Call:
        """The call a transfer handed over, by the ``X-Callplane-Screen-Pop`` token."""
        path = f"/v1/calls/screen_pop/{_segment(token)}"
        return self._send(Request("GET", path, _one(Call, "call")))  # type: ignore[no-any-return]

    def cancel(self, id: str) -> CancelResult:  # noqa: A002
        return self._send(  # type: ignore[no-any-return]
            Request("POST", f"/v1/calls/{_segment(id)}/cancel", _one(CancelResult))
        )

    def events(self, id: str) -> List[CallEvent]:  # noqa: A002
        return self._send(  # type: ignore[no-any-return]
            Request("GET", f"/v1/calls/{_segment(id)}/events", _many(CallEvent, "events"))
        )

    def find_by_attribute(
        self,
        param_key: str | None = None,
        param_value: str | None = None,
        external_identifier_key: str | None = None,
        external_identifier_value: str | None = None,
        fields: str | Sequence[str] | None = None,
    ) -> Call:
        if fields is not None and not isinstance(fields, str):
            fields = ",".join(fields)
        params = _drop_none(
            {
                "param_key": param_key,
                "param_value": param_value,
                "external_identifier_key": external_identifier_key,
                "external_identifier_value": external_identifier_value,
                "fields": fields,
            }
        )
        return self._send(  # type: ignore[no-any-return]
            Request("GET", "/v1/calls/find_by_attribute", _one(Call, "call"), params)
        )


class Contacts(_Resource):
    def put_data(
        self,
        identifier: str,
        data: Mapping[str, Any],
        ttl_seconds: int | None = None,
        expected_revision: int | None = None,
    ) -> ContactData:
        body = _drop_none(
            {"data": dict(data), "ttlSeconds": ttl_seconds, "expectedRevision": expected_revision}
        )
        return self._send(  # type: ignore[no-any-return]
            Request(
                "PUT", f"/v1/contacts/{_segment(identifier)}/data", _one(ContactData), json=body
            )
        )

    def get_data(self, identifier: str) -> ContactData:
        return self._send(  # type: ignore[no-any-return]
            Request("GET", f"/v1/contacts/{_segment(identifier)}/data", _one(ContactData))
        )

    def delete(self, identifier: str) -> Result:
        return self._send(  # type: ignore[no-any-return]
            Request("DELETE", f"/v1/contacts/{_segment(identifier)}/data", _one(Result))
        )

    def list(self, page: int = 1, page_size: int = 20) -> Page[Contact]:
        params = {"page": page, "page_size": page_size}
        return self._send(Request("GET", "/v1/contacts", _page(Contact, "contacts"), params))  # type: ignore[no-any-return]

    def iter(self, page_size: int = 100) -> Iterator[Contact]:
        return self._walk(lambda page: self.list(page=page, page_size=page_size))


class Records(_Resource):
    """The records of one table: ``client.data.records("customers")``."""

    def __init__(
        self, send: Callable[[Request[Any]], Any], is_async: bool, table_name: str
    ) -> None:
        super().__init__(send, is_async)
        self.table_name = table_name
        self._base = f"/v1/data/{_segment(table_name)}"

    def create(self, records: Sequence[Mapping[str, Any]]) -> List[Record]:
        body = {"records": [dict(r) for r in records]}
        return self._send(Request("POST", self._base, _many(Record, "records"), json=body))  # type: ignore[no-any-return]

    def get(self, id: int) -> Record:  # noqa: A002
        return self._send(Request("GET", f"{self._base}/{id}", _one(Record, "record")))  # type: ignore[no-any-return]

    def list(
        self,
        page: int = 1,
        per_page: int = 50,
        sort_by: str | None = None,
        sort_direction: str | None = None,
        **filters: Any,
    ) -> Page[Record]:
        """``filters``: column=value exact matches; a list value matches any of its items."""
        params: list[tuple[str, Any]] = [("page", page), ("per_page", per_page)]
        params += [
            (k, v) for k, v in (("sort_by", sort_by), ("sort_direction", sort_direction)) if v
        ]
        for column, value in filters.items():
            values = value if isinstance(value, list | tuple) else [value]
            params += [(column, _query_text(v)) for v in values]
        return self._send(Request("GET", self._base, _page(Record, "records"), params))  # type: ignore[no-any-return]

    def iter(
        self,
        per_page: int = 200,
        sort_by: str | None = None,
        sort_direction: str | None = None,
        **filters: Any,
    ) -> Iterator[Record]:
        return self._walk(
            lambda page: self.list(page, per_page, sort_by, sort_direction, **filters)
        )

    def update(
        self,
        id: int,
        values: Mapping[str, Any],
        source_updated_at_column: str | None = None,  # noqa: A002
    ) -> Record:
        params = _drop_none({"sourceUpdatedAtColumn": source_updated_at_column})
        return self._send(  # type: ignore[no-any-return]
            Request(
                "PATCH", f"{self._base}/{id}", _one(Record, "record"), params, json=dict(values)
            )
        )

    def replace(self, id: int, values: Mapping[str, Any]) -> Record:  # noqa: A002
        return self._send(  # type: ignore[no-any-return]
            Request("PUT", f"{self._base}/{id}", _one(Record, "record"), json=dict(values))
        )

    def delete(self, id: int) -> Result:  # noqa: A002
        return self._send(Request("DELETE", f"{self._base}/{id}", _one(Result)))  # type: ignore[no-any-return]

    def delete_all(self) -> Result:
        return self._send(Request("DELETE", self._base, _one(Result)))  # type: ignore[no-any-return]

    def query(
        self,
        filters: Sequence[Mapping[str, Any]] = (),
        sort_by: str | None = None,
        sort_direction: str | None = None,
        page: int | None = None,
        per_page: int | None = None,
    ) -> Page[Record]:
        """``filters``: ``{"column", "op", "value"}`` with op one of eq ne lt lte gt gte in
        contains is_null."""
        body = _drop_none(
            {
                "filters": [dict(f) for f in filters],
                "sort_by": sort_by,
                "sort_direction": sort_direction,
                "page": page,
                "per_page": per_page,
            }
        )
        return self._send(  # type: ignore[no-any-return]
            Request("POST", f"{self._base}/query", _page(Record, "records"), json=body)
        )


def _query_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class Data(_Resource):
    def create_table(
        self,
        name: str,
        columns: Sequence[Mapping[str, Any]],
        indexes: Sequence[Sequence[str]] | None = None,
    ) -> Table:
        body = _drop_none(
            {
                "name": name,
                "columns": [dict(c) for c in columns],
                "indexes": None if indexes is None else [list(i) for i in indexes],
            }
        )
        return self._send(Request("POST", "/v1/data/tables", _one(Table, "table"), json=body))  # type: ignore[no-any-return]

    def list_tables(self) -> List[Table]:
        return self._send(Request("GET", "/v1/data/tables", _many(Table, "tables")))  # type: ignore[no-any-return]

    def get_table(self, id: int) -> Table:  # noqa: A002
        return self._send(Request("GET", f"/v1/data/tables/{id}", _one(Table, "table")))  # type: ignore[no-any-return]

    def delete_table(self, id: int) -> Result:  # noqa: A002
        return self._send(Request("DELETE", f"/v1/data/tables/{id}", _one(Result)))  # type: ignore[no-any-return]

    def records(self, table_name: str) -> Records:
        return Records(self._send, self._async, table_name)


class Feedback(_Resource):
    def list(self, call_id: str) -> List[FeedbackEntry]:
        return self._send(  # type: ignore[no-any-return]
            Request(
                "GET", f"/v1/calls/{_segment(call_id)}/feedback", _many(FeedbackEntry, "feedback")
            )
        )

    def create(
        self, call_id: str, comment: str, transcript_index: int | None = None
    ) -> FeedbackEntry:
        body = _drop_none({"comment": comment, "transcript_index": transcript_index})
        return self._send(  # type: ignore[no-any-return]
            Request(
                "POST",
                f"/v1/calls/{_segment(call_id)}/feedback",
                _one(FeedbackEntry, "feedback"),
                json=body,
            )
        )

    def resolve(self, uuid: str, resolved: bool = True) -> FeedbackEntry:
        return self._send(  # type: ignore[no-any-return]
            Request(
                "POST",
                f"/v1/feedback/{_segment(uuid)}/resolve",
                _one(FeedbackEntry, "feedback"),
                json={"resolved": resolved},
            )
        )

    def add_note(self, uuid: str, note: str) -> FeedbackNote:
        return self._send(  # type: ignore[no-any-return]
            Request(
                "POST",
                f"/v1/feedback/{_segment(uuid)}/notes",
                _one(FeedbackNote, "note"),
                json={"note": note},
            )
        )


class ExternalCalls(_Resource):
    def get(self, id: str) -> ExternalCall:  # noqa: A002
        return self._send(  # type: ignore[no-any-return]
            Request("GET", f"/v1/external_calls/{_segment(id)}", _one(ExternalCall))
        )

    def list(self, page: int = 1, page_size: int = 20) -> Page[ExternalCall]:
        params = {"page": page, "page_size": page_size}
        return self._send(  # type: ignore[no-any-return]
            Request("GET", "/v1/external_calls", _page(ExternalCall, "external_calls"), params)
        )

    def iter(self, page_size: int = 100) -> Iterator[ExternalCall]:
        return self._walk(lambda page: self.list(page=page, page_size=page_size))

    def create(self, **fields: Any) -> ExternalCall:
        """``external_call_id``, ``title``, ``direction``, ``from_number``, ``to_number``,
        ``started_at``, ``source`` (``{"name", "provider"}``)."""
        return self._send(Request("POST", "/v1/external_calls", _one(ExternalCall), json=fields))  # type: ignore[no-any-return]

    def upload_recording(
        self,
        id: str,  # noqa: A002
        audio: bytes,
        content_type: str,
        file_name: str | None = None,
        started_at: str | None = None,
        redact: bool | None = None,
    ) -> Recording:
        """``audio``: the file's bytes; ``content_type``: audio/wav, audio/mpeg, audio/ogg or
        audio/flac; ``redact``: replace spoken card and account numbers before playback."""
        params = _drop_none(
            {
                "file_name": file_name,
                "started_at": started_at,
                "redact": None if redact is None else str(redact).lower(),
            }
        )
        return self._send(  # type: ignore[no-any-return]
            Request(
                "POST",
                f"/v1/external_calls/{_segment(id)}/recordings",
                _one(Recording),
                params,
                content=audio,
                headers={"Content-Type": content_type},
            )
        )


class Webhooks(_Resource):
    def create(
        self, url: str, events: Sequence[str] | None = None, description: str | None = None
    ) -> Webhook:
        body = _drop_none(
            {
                "url": url,
                "events": None if events is None else list(events),
                "description": description,
            }
        )
        return self._send(Request("POST", "/v1/webhooks", _one(Webhook, "webhook"), json=body))  # type: ignore[no-any-return]

    def list(self) -> List[Webhook]:
        return self._send(Request("GET", "/v1/webhooks", _many(Webhook, "webhooks")))  # type: ignore[no-any-return]

    def get(self, id: str) -> Webhook:  # noqa: A002
        return self._send(Request("GET", f"/v1/webhooks/{_segment(id)}", _one(Webhook, "webhook")))  # type: ignore[no-any-return]

    def update(
        self,
        id: str,  # noqa: A002
        *,
        url: str | None = None,
        events: Sequence[str] | None = None,
        description: str | None = None,
        enabled: bool | None = None,
    ) -> Webhook:
        """Change the fields given (the others stay)."""
        body = _drop_none(
            {
                "url": url,
                "events": None if events is None else list(events),
                "description": description,
                "enabled": enabled,
            }
        )
        path = f"/v1/webhooks/{_segment(id)}"
        return self._send(Request("PATCH", path, _one(Webhook, "webhook"), json=body))  # type: ignore[no-any-return]

    def delete(self, id: str) -> Result:  # noqa: A002
        return self._send(Request("DELETE", f"/v1/webhooks/{_segment(id)}", _one(Result)))  # type: ignore[no-any-return]

    def test(self, id: str) -> Result:  # noqa: A002
        return self._send(Request("POST", f"/v1/webhooks/{_segment(id)}/test", _one(Result)))  # type: ignore[no-any-return]

    def deliveries(self, id: str, page: int = 1, page_size: int = 20) -> Page[Delivery]:  # noqa: A002
        params = {"page": page, "page_size": page_size}
        return self._send(  # type: ignore[no-any-return]
            Request(
                "GET",
                f"/v1/webhooks/{_segment(id)}/deliveries",
                _page(Delivery, "deliveries"),
                params,
            )
        )

    def redeliver(self, id: str, delivery_id: str) -> Result:  # noqa: A002
        path = f"/v1/webhooks/{_segment(id)}/deliveries/{_segment(delivery_id)}/redeliver"
        return self._send(Request("POST", path, _one(Result)))  # type: ignore[no-any-return]
