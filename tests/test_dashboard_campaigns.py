"""The dashboard's Campaigns page: a CSV previewed (first rows, rejected rows) and created, the
funnel, recipients by status with their calls, the moves and the export; another organization's
campaign is not found."""

from __future__ import annotations

from fastapi import FastAPI

from tests.campaigns_support import AGENT, org_with_agent
from tests.dashboard_support import browser_client, csrf_of, make_person, sign_in
from tests.factories import make_org

CSV = "phone_number,first_name\n+15550001000,Ann\nnot a number,Bob\n+15550001001,Cy\n"


async def test_a_campaign_from_a_csv_its_funnel_and_its_moves(app: FastAPI) -> None:
    org = await org_with_agent(app)
    person = await make_person(app, org)
    async with browser_client(app) as c:
        await sign_in(c, person.email, person.password)
        page = await c.get("/dashboard/campaigns")
        assert page.status_code == 200 and "No campaigns yet" in page.text
        assert 'href="/dashboard/campaigns" aria-current="page"' in page.text
        token = csrf_of(page)
        form = {"csrf_token": token, "name": "Renewals", "agent_id": AGENT, "csv": CSV}
        preview = await c.post("/dashboard/campaigns", data={**form, "intent": "preview"})
        assert preview.status_code == 200
        assert "2 rows to add, 1 rejected" in preview.text
        assert (
            "+15550001000" in preview.text and "phone_number: is not a phone number" in preview.text
        )
        assert "No campaigns yet" in preview.text  # a preview creates nothing
        missing = await c.post(
            "/dashboard/campaigns", data={**form, "csv": "name\nx\n", "intent": "create"}
        )
        assert missing.status_code == 422 and "phone_number" in missing.text
        bad = await c.post(
            "/dashboard/campaigns", data={**form, "start": "07:00", "intent": "create"}
        )
        assert bad.status_code == 422 and "08:00" in bad.text
        made = await c.post(
            "/dashboard/campaigns",
            data={**form, "days": ["mon", "sat"], "intent": "create"},
        )
        assert made.status_code == 303, made.text
        where = made.headers["location"].split("?")[0]
        page = await c.get(made.headers["location"])
        assert "Campaign created with 2 recipients (1 rows rejected)." in page.text
        assert 'data-count="total">2<' in page.text and 'data-count="queued">2<' in page.text
        assert "mon, sat" in page.text
        assert "+15550001001" in page.text
        only = await c.get(where, params={"status": "completed"})
        assert "No recipients completed." in only.text
        exported = await c.get(f"{where}/export.csv")
        assert exported.status_code == 200 and "+15550001000,,,queued,0" in exported.text
        started = await c.post(f"{where}/start", data={"csrf_token": token})
        assert started.status_code == 303
        page = await c.get(where)
        assert '<span class="badge">running</span>' in page.text and ">Pause<" in page.text
        again = await c.post(f"{where}/start", data={"csrf_token": token})
        assert again.status_code == 409
        cancelled = await c.post(f"{where}/cancel", data={"csrf_token": token})
        assert cancelled.status_code == 303
        page = await c.get(where)
        assert 'data-count="cancelled">2<' in page.text

    other = await make_org(app, "Other")
    stranger = await make_person(app, other, email="other@example.com")
    async with browser_client(app) as c:
        await sign_in(c, stranger.email, stranger.password)
        assert (await c.get(where)).status_code == 404
        assert (await c.get(f"{where}/export.csv")).status_code == 404
