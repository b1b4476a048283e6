"""One identifier policy for calls and contacts (``callplane.kit.e164``): the same string names the
same number in ``POST /v1/calls`` and in ``PUT /v1/contacts/{id}/data``, on either database."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from tests.factories import make_org

E164 = "+14155550199"

#: text → E.164 in both places (None: refused by calls, verbatim contact; "422": refused by both).
CASES: dict[str, tuple[str, str | None]] = {
    "ascii": ("+1 415 555 0199", E164),
    "us-formatted": ("(415) 555-0199", E164),
    "arabic-indic-digits": ("+١ ٤١٥ ٥٥٥ ٠١٩٩", E164),
    "fullwidth-digits-and-plus": ("＋１ ４１５ ５５５ ０１９９", E164),
    "nbsp": ("+1\u00a0415\u00a0555\u00a00199", E164),
    "rtl-mark": ("\u200f+14155550199", "422"),
    "zero-width-space": ("+1415\u200b5550199", "422"),
    "leading-emoji": ("📞+14155550199", None),
    "extension": ("415-555-0199 x12", None),
}


@pytest.mark.parametrize("text, expected", CASES.values(), ids=CASES.keys())
async def test_calls_and_contacts_read_a_number_alike(app, client, text, expected) -> None:
    org = await make_org(app)
    call = await client.post("/v1/calls", json={"to_number": text}, headers=org.headers)
    contact = await client.put(
        f"/v1/contacts/{quote(text, safe='')}/data", json={"data": {}}, headers=org.headers
    )
    if expected == "422":
        assert call.status_code == contact.status_code == 422, (call.text, contact.text)
        assert call.json()["error"].startswith("to_number: ")
        assert "phoneNumber" in contact.json()["error"]
        return
    if expected is None:
        assert call.status_code == 422, call.text
        assert contact.status_code == 200 and contact.json()["phoneNumber"] == text
        return
    assert call.status_code == 201, call.text
    assert call.json()["call"]["to_number"] == expected
    assert contact.status_code == 200 and contact.json()["phoneNumber"] == expected


async def test_every_spelling_of_one_number_is_one_contact(app, client) -> None:
    org = await make_org(app)
    spellings = [text for text, expected in CASES.values() if expected == E164]
    for text in spellings:
        await client.put(
            f"/v1/contacts/{quote(text, safe='')}/data", json={"data": {}}, headers=org.headers
        )
    listed = (await client.get("/v1/contacts", headers=org.headers)).json()
    assert [c["phoneNumber"] for c in listed["contacts"]] == [E164]
    assert listed["contacts"][0]["revision"] == len(spellings)
