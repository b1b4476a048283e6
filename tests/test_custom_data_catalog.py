"""The per-process catalog (custom_data.catalog): a process answers record requests from the
schema it last saw, and a table dropped or recreated by another process is noticed by the record
statement itself."""

from __future__ import annotations

from tests.conftest import client_for
from tests.factories import make_org
from tests.test_custom_data_support import assert_status_error, create_table, insert


def _things(kind: str) -> dict[str, object]:
    return {"name": "things", "columns": [{"name": "n", "type": kind}]}


async def test_a_table_recreated_by_another_process_is_seen_at_once(make_app):
    one, other = await make_app(), await make_app()
    org = await make_org(one)
    async with client_for(one) as a, client_for(other) as b:
        old = await create_table(a, org, _things("INTEGER"))
        [record] = await insert(a, org, "things", [{"n": 1}])
        url = f"/v1/data/things/{record['id']}"
        patched = await a.patch(url, json={"n": 2}, headers=org.headers)
        assert patched.json()["record"]["n"] == 2  # process one now remembers the table

        # Process two replaces the table by one of the same name whose column is TEXT.
        assert (await b.delete("/v1/data/things", headers=org.headers)).status_code == 200
        gone = await b.delete(f"/v1/data/tables/{old['id']}", headers=org.headers)
        assert gone.status_code == 200
        await create_table(b, org, _things("TEXT"))
        [new] = await insert(b, org, "things", [{"n": "x"}])

        # A body only the new table accepts, and a read: both on the new table.
        url = f"/v1/data/things/{new['id']}"
        patched = await a.patch(url, json={"n": "y"}, headers=org.headers)
        assert patched.status_code == 200, patched.text
        assert patched.json()["record"]["n"] == "y"
        assert (await a.get(url, headers=org.headers)).json()["record"]["n"] == "y"

        # Process two drops it: process one answers 404 for the table, not a 500.
        assert (await b.delete("/v1/data/things", headers=org.headers)).status_code == 200
        tables = (await b.get("/v1/data/tables", headers=org.headers)).json()["tables"]
        gone = await b.delete(f"/v1/data/tables/{tables[0]['id']}", headers=org.headers)
        assert gone.status_code == 200
        for response in (
            await a.get(url, headers=org.headers),
            await a.patch(url, json={"n": "z"}, headers=org.headers),
        ):
            assert assert_status_error(response, 404) == "Table not found"
