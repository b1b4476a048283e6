"""Web calls over HTTP (docs/web-calls.md): tokens, the offer/answer exchange, and every way a web
call's input can be wrong. The browser is an aiortc peer here (``tests/web_call_peer.py``);
``test_web_calls_browser.py`` makes the same call from a real Chromium."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import Any

import httpx
import numpy as np
import pytest
from sqlalchemy import update

from callplane.models.base import utcnow
from callplane.models.calls import TERMINAL_STATUSES
from callplane.models.web_calls import WebCallToken
from tests.agents_support import create_agent
from tests.conftest import AppFactory, client_for
from tests.factories import OrgHandle, load, make_org, runtime_of
from tests.web_call_peer import Peer

AGENT = "6f1c2a1e-8a43-4c39-9a55-1d2f3e4a5b01"
OTHER_AGENT = "7a2d3b2f-9b54-4d4a-8b66-2e3f4a5b6c02"
ORIGIN = "https://shop.example.com"
TERMINAL = set(TERMINAL_STATUSES)

# Most tests here exchange offers and answers, but their peer never connects (no audio flows):
# only those marked ``realtime`` hear or play audio.
pytestmark = pytest.mark.no_audio


async def _app(make_app: AppFactory, **overrides: Any) -> Any:
    # Browsers that go away without connecting are given up on soon.
    return await make_app(**{"web_call_connect_seconds": 5, **overrides})


#: For a test whose call only has to end, never to be live at a given moment: its peer never
#: connects, and the test waits for the server to give up on it.
GIVE_UP_AT_ONCE = {"web_call_connect_seconds": 1}


async def _org_with_agent(app: Any, name: str = "Acme", agent: str = AGENT) -> OrgHandle:
    org = await make_org(app, name)
    number = 1 if agent == AGENT else 2  # agents' integer ids are unique across organizations
    await load(app, org, {"agents": [{"id": number, "uuid": agent, "name": "Front desk"}]})
    return org


async def _token(client: httpx.AsyncClient, org: OrgHandle, **body: Any) -> str:
    body = {"agent_id": AGENT, "allowed_origin": ORIGIN, **body}
    response = await client.post("/v1/web_calls/tokens", json=body, headers=org.headers)
    assert response.status_code == 201, response.text
    token: str = response.json()["token"]
    return token


def _with_token(token: str, origin: str = ORIGIN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "Origin": origin}


async def _offer() -> tuple[Peer, str]:
    peer = Peer()
    return peer, await peer.offer()


async def _until(
    client: httpx.AsyncClient, org: OrgHandle, call_id: str, within: float = 30
) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while True:
        response = await client.get(f"/v1/calls/{call_id}", headers=org.headers)
        assert response.status_code == 200, response.text
        call: dict[str, Any] = response.json()["call"]
        if call["status"] in TERMINAL:
            return call
        assert time.monotonic() < deadline, f"call stuck in {call['status']}"
        await asyncio.sleep(0.1)


def _status_error(response: httpx.Response, code: int, mentions: str) -> None:
    assert response.status_code == code, response.text
    body = response.json()
    assert body["status"] == "error" and body["success"] is False
    assert mentions in body["error"], body


# -- tokens --------------------------------------------------------------------------------


async def test_a_token_is_short_lived_and_names_an_agent_of_the_organization(make_app):
    app = await _app(make_app)
    org = await _org_with_agent(app)
    async with client_for(app) as client:
        response = await client.post(
            "/v1/web_calls/tokens",
            json={"agent_id": AGENT, "allowed_origin": ORIGIN, "params": {"order": 7}},
            headers=org.headers,
        )
        assert response.status_code == 201, response.text
        body = response.json()
        assert body["token"].startswith("cpw_") and len(body["token"]) > 40
        assert set(body) == {"token", "expires_at"}

        unknown = await client.post(
            "/v1/web_calls/tokens",
            json={"agent_id": OTHER_AGENT, "allowed_origin": ORIGIN},
            headers=org.headers,
        )
        _status_error(unknown, 422, "agent_id")
        for bad in (
            {"allowed_origin": "https://shop.example.com/page"},
            {"allowed_origin": "javascript:alert(1)"},
            {"allowed_origin": "*"},
            {"expires_in_seconds": 301},
            {"agent_branch_name": "main", "agent_commit_id": "abc"},
            {"agent_commit_id": "not-a-commit"},
            {"agent_branch_name": "no-such-branch"},
        ):
            refused = await client.post(
                "/v1/web_calls/tokens",
                json={"agent_id": AGENT, "allowed_origin": ORIGIN, **bad},
                headers=org.headers,
            )
            assert refused.status_code == 422, (bad, refused.text)
        anonymous = await client.post(
            "/v1/web_calls/tokens", json={"agent_id": AGENT, "allowed_origin": ORIGIN}
        )
        _status_error(anonymous, 401, "Authorization")


# -- bad offers ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sdp", "mentions"),
    [
        ("hello", "sdp"),
        ("v=0\r\n" + "a=x\r\n" * 10_000, "sdp"),
        ("\x00\x01garbage\r\nm=audio", "sdp"),
        ("v=0\r\n" + "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\n" * 500, "media sections"),
        (
            "v=0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\n"
            + "".join(
                f"a=candidate:{n} 1 udp 2122260223 10.0.{n // 250}.{n % 250} 9 typ host\r\n"
                for n in range(100)
            ),
            "candidates",
        ),
    ],
)
async def test_an_sdp_that_is_garbage_or_huge_is_a_422(make_app, sdp, mentions):
    app = await _app(make_app)
    org = await _org_with_agent(app)
    async with client_for(app) as client:
        response = await client.post(
            "/v1/web_calls", json={"agent_id": AGENT, "sdp": sdp}, headers=org.headers
        )
        _status_error(response, 422, mentions)
        listed = (await client.get("/v1/calls", headers=org.headers)).json()
    assert listed["total_count"] == 0


async def test_an_offer_without_audio_is_a_422_and_writes_nothing(make_app):
    app = await _app(make_app)
    org = await _org_with_agent(app)
    peer = Peer(audio=False)  # a data channel only
    offer = await peer.offer()
    try:
        async with client_for(app) as client:
            token = await _token(client, org)
            response = await client.post(
                "/v1/web_calls", json={"sdp": offer}, headers=_with_token(token)
            )
            _status_error(response, 422, "no audio")
            listed = (await client.get("/v1/calls", headers=org.headers)).json()
            # The token was not spent on a refused offer.
            again = await client.post(
                "/v1/web_calls", json={"sdp": "v=0"}, headers=_with_token(token)
            )
    finally:
        await peer.close()
    assert listed["total_count"] == 0
    assert again.status_code == 422


async def test_an_unknown_agent_or_a_missing_one_is_a_422_naming_agent_id(make_app):
    app = await _app(make_app)
    org = await _org_with_agent(app)
    other = await _org_with_agent(app, "Other", OTHER_AGENT)
    async with client_for(app) as client:
        for body in ({"agent_id": OTHER_AGENT, "sdp": "v=0"}, {"sdp": "v=0"}):
            response = await client.post("/v1/web_calls", json=body, headers=org.headers)
            _status_error(response, 422, "agent_id")
        # The other organization's agent is unknown here.
        theirs = await client.post(
            "/v1/web_calls/tokens",
            json={"agent_id": AGENT, "allowed_origin": ORIGIN},
            headers=other.headers,
        )
        _status_error(theirs, 422, "agent_id")


# -- tokens used wrongly -------------------------------------------------------------------


async def test_a_token_is_spent_once_from_its_origin_only(make_app):
    app = await _app(make_app)
    org = await _org_with_agent(app)
    peer, offer = await _offer()
    try:
        async with client_for(app) as client:
            token = await _token(client, org, params={"cart": "A12"})
            elsewhere = await client.post(
                "/v1/web_calls",
                json={"sdp": offer},
                headers=_with_token(token, "https://evil.example.net"),
            )
            _status_error(elsewhere, 401, "token")
            no_origin = await client.post(
                "/v1/web_calls", json={"sdp": offer}, headers={"Authorization": f"Bearer {token}"}
            )
            _status_error(no_origin, 401, "token")
            fixed = await client.post(
                "/v1/web_calls",
                json={"sdp": offer, "params": {"cart": "forged"}},
                headers=_with_token(token),
            )
            _status_error(fixed, 422, "params")

            first = await client.post(
                "/v1/web_calls", json={"sdp": offer}, headers=_with_token(token)
            )
            assert first.status_code == 201, first.text
            assert first.headers["access-control-allow-origin"] == ORIGIN
            answer = first.json()
            assert set(answer) == {"call_id", "sdp"}
            assert "m=audio" in answer["sdp"]

            replayed = await client.post(
                "/v1/web_calls", json={"sdp": offer}, headers=_with_token(token)
            )
            _status_error(replayed, 401, "token")
            assert replayed.headers["www-authenticate"].startswith("Bearer")

            call = (await client.get(f"/v1/calls/{answer['call_id']}", headers=org.headers)).json()[
                "call"
            ]
            assert call["direction"] == "web" and call["status"] == "in_progress"
            assert call["to_number"] is None and call["from_number"] is None
            assert call["agent_id"] == AGENT and call["params"] == {"cart": "A12"}
            # The browser goes away without ever connecting: the call still ends.
            await peer.close()
            ended = await _until(client, org, answer["call_id"])
    finally:
        await peer.close()
    assert ended["status"] == "completed"


async def test_an_expired_token_or_another_organizations_is_refused(make_app):
    app = await _app(make_app, **GIVE_UP_AT_ONCE)
    org = await _org_with_agent(app)
    other = await _org_with_agent(app, "Other", OTHER_AGENT)
    peer, offer = await _offer()
    try:
        async with client_for(app) as client:
            token = await _token(client, org)
            async with runtime_of(app).db.session(write=True) as session:
                await session.execute(
                    update(WebCallToken)
                    .where(WebCallToken.organization_id == org.id)
                    .values(expires_at=utcnow() - timedelta(seconds=1))
                )
                await session.commit()
            expired = await client.post(
                "/v1/web_calls", json={"sdp": offer}, headers=_with_token(token)
            )
            _status_error(expired, 401, "token")
            garbage = await client.post(
                "/v1/web_calls", json={"sdp": offer}, headers=_with_token("cpw_" + "x" * 43)
            )
            _status_error(garbage, 401, "token")

            # The other organization's token makes the other organization's call: this one
            # cannot see it, and the other's key cannot use this one's agent.
            theirs = await _token(client, other, agent_id=OTHER_AGENT)
            made = await client.post(
                "/v1/web_calls", json={"sdp": offer}, headers=_with_token(theirs)
            )
            assert made.status_code == 201, made.text
            call_id = made.json()["call_id"]
            hidden = await client.get(f"/v1/calls/{call_id}", headers=org.headers)
            assert hidden.status_code == 404
            seen = (await client.get(f"/v1/calls/{call_id}", headers=other.headers)).json()
            assert seen["call"]["agent_id"] == OTHER_AGENT
            await peer.close()
            await _until(client, other, call_id)
    finally:
        await peer.close()


async def test_the_preflight_allows_only_an_origin_a_live_token_names(make_app):
    app = await _app(make_app)
    org = await _org_with_agent(app)
    preflight = {"Access-Control-Request-Method": "POST"}
    async with client_for(app) as client:
        before = await client.options("/v1/web_calls", headers={**preflight, "Origin": ORIGIN})
        assert "access-control-allow-origin" not in before.headers
        await _token(client, org)
        allowed = await client.options("/v1/web_calls", headers={**preflight, "Origin": ORIGIN})
        assert allowed.headers["access-control-allow-origin"] == ORIGIN
        assert "Authorization" in allowed.headers["access-control-allow-headers"]
        other = await client.options(
            "/v1/web_calls", headers={**preflight, "Origin": "https://evil.example.net"}
        )
        assert "access-control-allow-origin" not in other.headers


# -- a whole call, and a silent one ----------------------------------------------------------


@pytest.mark.realtime
async def test_a_microphone_that_sends_only_silence_is_hung_up(make_app):
    app = await _app(make_app, web_call_silence_seconds=2)
    org = await _org_with_agent(app)
    peer, offer = await _offer()  # the peer's track is silence from start to end
    try:
        async with client_for(app) as client:
            response = await client.post(
                "/v1/web_calls", json={"agent_id": AGENT, "sdp": offer}, headers=org.headers
            )
            assert response.status_code == 201, response.text
            await peer.accept(response.json()["sdp"])
            call = await _until(client, org, response.json()["call_id"], within=60)
            events = (
                await client.get(f"/v1/calls/{call['id']}/events", headers=org.headers)
            ).json()["events"]
    finally:
        await peer.close()
    assert call["status"] == "completed"
    assert call["direction"] == "web"
    assert call["recording_presigned_url"], "a connected call is recorded"
    ended = [e for e in events if e["type"] == "call.ended"]
    assert ended and ended[0]["data"]["reason"] == "the agent hung up"
    assert [e["type"] for e in events][:1] == ["call.in_progress"]


async def test_listed_cors_origins_leave_web_calls_to_their_tokens(make_app):
    app = await _app(make_app, cors_origins="https://admin.example.com")
    org = await _org_with_agent(app)
    preflight = {"Access-Control-Request-Method": "POST"}
    async with client_for(app) as client:
        await _token(client, org)
        allowed = await client.options("/v1/web_calls", headers={**preflight, "Origin": ORIGIN})
        listed = await client.options(
            "/v1/web_calls", headers={**preflight, "Origin": "https://admin.example.com"}
        )
        calls = await client.options(
            "/v1/calls", headers={**preflight, "Origin": "https://admin.example.com"}
        )
    assert allowed.headers["access-control-allow-origin"] == ORIGIN
    # A listed origin is the API key's business, not a web call token's.
    assert "access-control-allow-origin" not in listed.headers
    assert calls.headers["access-control-allow-origin"] == "https://admin.example.com"


async def test_web_calls_are_listed_by_their_direction(make_app):
    app = await _app(make_app, **GIVE_UP_AT_ONCE)
    org = await _org_with_agent(app)
    peer, offer = await _offer()
    try:
        async with client_for(app) as client:
            agent = (await client.get(f"/v1/agents/{AGENT}", headers=org.headers)).json()
            [head] = [b["head"] for b in agent["agent"]["branches"] if b["name"] == "main"]
            made = await client.post(
                "/v1/web_calls",
                json={"agent_id": AGENT, "agent_branch_name": "main", "sdp": offer},
                headers=org.headers,
            )
            assert made.status_code == 201, made.text
            await peer.close()
            web = (await client.get("/v1/calls?direction=web", headers=org.headers)).json()
            outbound = (
                await client.get("/v1/calls?direction=outbound", headers=org.headers)
            ).json()
            await _until(client, org, made.json()["call_id"])
    finally:
        await peer.close()
    assert [c["id"] for c in web["calls"]] == [made.json()["call_id"]]
    [call] = web["calls"]
    # The call runs the head of main at the moment it starts (docs/agents.md).
    assert call["agent_branch_name"] == "main" and call["agent_commit_id"] == head
    assert outbound["total_count"] == 0


async def test_the_dashboard_mints_a_token_for_its_own_page_only(make_app):
    from tests.dashboard_support import browser_client, csrf_of, make_person, sign_in

    app = await _app(make_app, **GIVE_UP_AT_ONCE)
    org = await _org_with_agent(app)
    other = await _org_with_agent(app, "Other", OTHER_AGENT)
    person = await make_person(app, org)
    async with browser_client(app) as browser:
        await sign_in(browser, person.email, person.password)
        page = await browser.get(f"/dashboard/agents/{AGENT}/talk?branch=main")
        assert page.status_code == 200
        assert "Talk to this agent" in page.text and "callplane-web.js" in page.text
        csrf = csrf_of(page)
        origin = "http://testserver"
        minted = await browser.post(
            f"/dashboard/agents/{AGENT}/talk/token?branch=main",
            headers={"X-CSRF-Token": csrf, "Origin": origin},
        )
        assert minted.status_code == 201, minted.text
        forged = await browser.post(
            f"/dashboard/agents/{AGENT}/talk/token", headers={"Origin": origin}
        )
        theirs = await browser.get(f"/dashboard/agents/{OTHER_AGENT}/talk")
        theirs_token = await browser.post(
            f"/dashboard/agents/{OTHER_AGENT}/talk/token",
            headers={"X-CSRF-Token": csrf, "Origin": origin},
        )
        script = await browser.get("/dashboard/static/callplane-web.js")
    assert forged.status_code == 403
    assert theirs.status_code == 404 and theirs_token.status_code == 404
    assert script.status_code == 200 and "CallplaneWeb" in script.text
    async with client_for(app) as client:
        # The token works from the dashboard's origin, once, for this agent's branch.
        peer, offer = await _offer()
        try:
            made = await client.post(
                "/v1/web_calls",
                json={"sdp": offer},
                headers=_with_token(minted.json()["token"], origin),
            )
            assert made.status_code == 201, made.text
            await peer.close()
            call = await _until(client, org, made.json()["call_id"])
        finally:
            await peer.close()
        assert call["agent_id"] == AGENT and call["agent_branch_name"] == "main"
        hidden = await client.get(f"/v1/calls/{call['id']}", headers=other.headers)
        assert hidden.status_code == 404


async def test_two_requests_racing_with_one_token_make_one_call(make_app):
    app = await _app(make_app, **GIVE_UP_AT_ONCE)
    org = await _org_with_agent(app)
    peers = [Peer(), Peer()]
    offers = [await peer.offer() for peer in peers]
    try:
        async with client_for(app) as client:
            token = await _token(client, org)
            responses = await asyncio.gather(
                *(
                    client.post("/v1/web_calls", json={"sdp": offer}, headers=_with_token(token))
                    for offer in offers
                )
            )
            assert sorted(r.status_code for r in responses) == [201, 401], [
                r.text for r in responses
            ]
            for peer in peers:
                await peer.close()
            listed = (await client.get("/v1/calls", headers=org.headers)).json()
            assert listed["total_count"] == 1
            await _until(client, org, listed["calls"][0]["id"])
    finally:
        for peer in peers:
            await peer.close()


@pytest.mark.realtime
async def test_the_recogniser_hears_the_browsers_wideband_audio() -> None:
    from aiortc.mediastreams import MediaStreamError

    from callplane.telephony.webrtc import WebRtcConnection, peer_connection
    from tests.web_call_peer import PcmTrack

    tone = np.sin(np.arange(48000) * 2 * np.pi * 440 / 48000) * 8000
    track = PcmTrack(tone.astype("<i2").tobytes())

    class OneSecond:
        kind = "audio"
        sent = 0

        async def recv(self) -> Any:
            if self.sent == 50:
                raise MediaStreamError
            self.sent += 1
            return await track.recv()

    connection = WebRtcConnection(peer_connection([]), call_ref="wideband")
    await connection._hear(OneSecond())  # type: ignore[arg-type]
    heard = b"".join([frame.pcm async for frame in connection.frames()])  # type: ignore[union-attr]
    assert len(heard) > 15_000  # about a second at 8 kHz
    turn = heard[4000:12000]
    audio, rate = connection.recognition_audio(turn)
    assert rate == 16000 and len(audio) == 2 * len(turn)
    # A stretch the listener made up itself (its own gap silence) is recognised as heard.
    assert connection.recognition_audio(b"\x01\x02" * 400) == (b"\x01\x02" * 400, 8000)


async def test_a_web_call_over_the_organizations_limit_is_a_429(make_app):
    app = await _app(make_app, max_concurrent_calls=1)
    org = await _org_with_agent(app)
    peers = [Peer(), Peer()]
    try:
        async with client_for(app) as client:
            first = await client.post(
                "/v1/web_calls",
                json={"agent_id": AGENT, "sdp": await peers[0].offer()},
                headers=org.headers,
            )
            assert first.status_code == 201, first.text
            second = await client.post(
                "/v1/web_calls",
                json={"agent_id": AGENT, "sdp": await peers[1].offer()},
                headers=org.headers,
            )
            _status_error(second, 429, "")
            assert int(second.headers["retry-after"]) > 0
            for peer in peers:
                await peer.close()
            listed = (await client.get("/v1/calls", headers=org.headers)).json()
            assert listed["total_count"] == 1
            await _until(client, org, first.json()["call_id"])
    finally:
        for peer in peers:
            await peer.close()


@pytest.mark.realtime
async def test_the_page_hangs_up_over_the_data_channel(make_app):
    app = await _app(make_app)
    org = await _org_with_agent(app)
    peer, offer = await _offer()
    try:
        async with client_for(app) as client:
            made = await client.post(
                "/v1/web_calls", json={"agent_id": AGENT, "sdp": offer}, headers=org.headers
            )
            assert made.status_code == 201, made.text
            await peer.accept(made.json()["sdp"])
            await asyncio.wait_for(peer.connected.wait(), 30)
            await asyncio.wait_for(peer.opened.wait(), 30)
            peer.channel.send('{"type": "hangup"}')
            call = await _until(client, org, made.json()["call_id"])
            events = (
                await client.get(f"/v1/calls/{call['id']}/events", headers=org.headers)
            ).json()["events"]
    finally:
        await peer.close()
    assert call["status"] == "completed"
    [ended] = [e for e in events if e["type"] == "call.ended"]
    assert ended["data"]["reason"] == "the far end hung up"
    # The page was told, before the connection closed.
    assert {"type": "ended", "by": "remote"} in peer.messages


@pytest.mark.realtime
async def test_a_web_call_opens_with_the_agents_disclosure(make_app):
    app = await _app(make_app)
    org = await make_org(app)
    disclosure = "This call is recorded."
    peer, offer = await _offer()
    try:
        async with client_for(app) as client:
            agent = await create_agent(
                client, org, {"disclosure": disclosure, "first_message": "Hi, this is Acme."}
            )
            made = await client.post(
                "/v1/web_calls", json={"agent_id": agent["id"], "sdp": offer}, headers=org.headers
            )
            assert made.status_code == 201, made.text
            await peer.accept(made.json()["sdp"])
            await asyncio.wait_for(peer.opened.wait(), 30)
            # The page's live transcript: hang up once both lines have been said.
            deadline = time.monotonic() + 30
            while not any(len(m.get("entries", [])) >= 2 for m in peer.messages):
                assert time.monotonic() < deadline, peer.messages
                await asyncio.sleep(0.05)
            peer.channel.send('{"type": "hangup"}')
            call = await _until(client, org, made.json()["call_id"])
    finally:
        await peer.close()
    said = [e["text"] for e in call["transcripts"] if e["role"] == "assistant"]
    assert said == [disclosure, "Hi, this is Acme."]
    assert call["transcripts"][0]["text"] == disclosure
