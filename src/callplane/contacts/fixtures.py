"""Fixture section: contacts (docs/api-contract.md#the-fixture-document: ``[{"phoneNumber", "data",
"ttlSeconds"}]``).

Each item goes through the same rules and the same upsert as a PUT, in document order: the
identifier is normalized (two spellings of one number are one contact, the second item a second
revision), and the ids returned are the normalized identifiers.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from callplane.contacts.identifiers import normalize_identifier
from callplane.contacts.service import parse_write, put_contact_data
from callplane.errors import InvalidInput
from callplane.fixtures import LoadContext, LoadError, parse_items, section


class ContactItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    phoneNumber: str = Field(min_length=1)
    # Checked by the service's rules (object, size, integer TTL), like a PUT body.
    data: Any
    ttlSeconds: Any = None


@section("contacts")
async def load_contacts(context: LoadContext, items: list[Any]) -> list[Any]:
    created = []
    for index, item in enumerate(parse_items("contacts", items, ContactItem)):
        try:
            identifier = normalize_identifier(item.phoneNumber)
            write = parse_write({"data": item.data, "ttlSeconds": item.ttlSeconds})
        except InvalidInput as exc:
            field = exc.loc[-1] if exc.loc[-1] != "body" else "item"
            raise LoadError(f"contacts[{index}].{field}: {exc.message}") from None
        stored = await put_contact_data(context.session, context.organization_id, identifier, write)
        created.append(stored.identifier)
    return created
