"""callplane-client against the real server over HTTP: one method per route, reads unwrapped
from their envelopes, pages and iterators, and errors as APIError."""

from __future__ import annotations

import io
import wave
from pathlib import Path

import httpx
import pytest
from callplane_client import APIError, AsyncCallplane, Callplane, CallStatus
from callplane_client.models import Call, Page, Voice

from tests.live_server import live_server, seed_org

VOICE = "0b7d6f3a-2c1e-4f5a-9b8c-7d6e5f4a3b01"
NUMBER = "3c2b1a09-8f7e-4d6c-b5a4-938271605f01"
COMPLETED_CALL = "5c0f1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e01"
FEEDBACK = "fe3d2c1b-0a9f-4e8d-9c7b-6a5f4e3d2c01"
EXTERNAL_CALL = "7a1e0c55-3b2d-4e8f-9c10-5d6e7f8a9b01"

#: operationId of the OpenAPI document → the client method that calls it (clients/python/README.md
#: names).
METHODS = {
    "list_voices": "voices.list",
    "get_voice": "voices.get",
    "create_voice": "voices.create",
    "delete_voice": "voices.delete",
    "preview_voice": "voices.preview",
    "list_call_tags": "call_tags.list",
    "create_call_tag": "call_tags.create",
    "update_number": "numbers.update",
    "create_call": "calls.create",
    "get_call": "calls.get",
    "get_call_by_screen_pop": "calls.screen_pop",
    "list_calls": "calls.list",
    "cancel_call": "calls.cancel",
    "list_call_events": "calls.events",
    "find_by_attribute": "calls.find_by_attribute",
    "put_contact_data": "contacts.put_data",
    "get_contact_data": "contacts.get_data",
    "delete_contact_data": "contacts.delete",
    "list_contacts": "contacts.list",
    "create_table": "data.create_table",
    "list_tables": "data.list_tables",
    "get_table": "data.get_table",
    "delete_table": "data.delete_table",
    "create_records": "records.create",
    "get_record": "records.get",
    "list_records": "records.list",
    "patch_record": "records.update",
    "replace_record": "records.replace",
    "delete_record": "records.delete",
    "delete_all_records": "records.delete_all",
    "query_records": "records.query",
    "list_call_feedback": "feedback.list",
    "create_call_feedback": "feedback.create",
    "resolve_feedback": "feedback.resolve",
    "add_feedback_note": "feedback.add_note",
    "get_external_call": "external_calls.get",
    "list_external_calls": "external_calls.list",
    "create_external_call": "external_calls.create",
    "upload_recording": "external_calls.upload_recording",
    "create_webhook": "webhooks.create",
    "list_webhooks": "webhooks.list",
    "get_webhook": "webhooks.get",
    "update_webhook": "webhooks.update",
    "delete_webhook": "webhooks.delete",
    "test_webhook": "webhooks.test",
    "list_deliveries": "webhooks.deliveries",
    "redeliver": "webhooks.redeliver",
    "create_number": "numbers.create",
    "list_numbers": "numbers.list",
    "delete_number": "numbers.delete",
    "create_agent": "agents.create",
    "list_agents": "agents.list",
    "get_agent": "agents.get",
    "rename_agent": "agents.update",
    "archive_agent": "agents.archive",
    "rotate_tools_secret": "agents.rotate_tools_secret",
    "diff": "agents.diff",
    "converse": "agents.converse",
    "create_commit": "commits.create",
    "list_commits": "commits.list",
    "get_commit": "commits.get",
    "create_branch": "branches.create",
    "move_branch": "branches.move",
    "merge_branch": "branches.merge",
    "delete_branch": "branches.delete",
    "create_agent_test": "tests.create",
    "list_agent_tests": "tests.list",
    "get_agent_test": "tests.get",
    "update_agent_test": "tests.update",
    "delete_agent_test": "tests.delete",
    "create_test_run": "test_runs.create",
    "list_test_runs": "test_runs.list",
    "get_test_run": "test_runs.get",
    "create_replay": "replays.create",
    "get_replay": "replays.get",
    "put_traffic": "traffic.set",
    "get_traffic": "traffic.get",
    "delete_traffic": "traffic.delete",
    "create_web_call_token": "web_calls.create_token",
    "create_web_call": "web_calls.create",
    "create_campaign": "campaigns.create",
    "list_campaigns": "campaigns.list",
    "get_campaign": "campaigns.get",
    "update_campaign": "campaigns.update",
    "start_campaign": "campaigns.start",
    "pause_campaign": "campaigns.pause",
    "resume_campaign": "campaigns.resume",
    "cancel_campaign": "campaigns.cancel",
    "add_recipients": "campaigns.add_recipients",
    "list_recipients": "campaigns.recipients",
    "export_campaign": "campaigns.export",
    "create_suppression": "suppressions.create",
    "list_suppressions": "suppressions.list",
    "delete_suppression": "suppressions.delete",
    "create_knowledge_base": "knowledge_bases.create",
    "list_knowledge_bases": "knowledge_bases.list",
    "get_knowledge_base": "knowledge_bases.get",
    "delete_knowledge_base": "knowledge_bases.delete",
    "add_document": "knowledge_bases.add_document",
    "list_documents": "knowledge_bases.documents",
    "get_document": "knowledge_bases.get_document",
    "delete_document": "knowledge_bases.delete_document",
    "search_knowledge_base": "knowledge_bases.search",
    "create_api_key": "api_keys.create",
    "list_api_keys": "api_keys.list",
    "delete_api_key": "api_keys.delete",
    "list_audit_events": "audit_log.list",
}
#: Routes a client of the API key does not call: signed URLs are used as they are.
NOT_CLIENT_ROUTES = {"recording_audio"}


async def test_every_route_has_a_client_method(client) -> None:
    document = (await client.get("/v1/openapi.json")).json()
    operations = {op["operationId"] for item in document["paths"].values() for op in item.values()}
    missing = operations - set(METHODS) - NOT_CLIENT_ROUTES
    assert not missing, f"routes without a client method: {sorted(missing)}"
    api = Callplane("cp_x")
    for dotted in METHODS.values():
        holder, name = dotted.split(".")
        nested = {
            "records": api.data.records("t"),
            "commits": api.agents.commits("a"),
            "branches": api.agents.branches("a"),
            "tests": api.agents.tests("a"),
            "test_runs": api.agents.test_runs("a"),
            "replays": api.agents.replays("a"),
            "traffic": api.agents.traffic("a"),
        }
        resource = nested[holder] if holder in nested else getattr(api, holder)
        assert callable(getattr(resource, name)), dotted


def _wav() -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(b"\x10\x00\xf0\xff" * 2000)
    return out.getvalue()


@pytest.fixture
def server(database_url: str, tmp_path: Path):
    org = seed_org(database_url, tmp_path)
    with live_server(database_url, tmp_path) as live:
        yield live.url, org.api_key


def test_reads_lists_and_writes(server) -> None:
    url, key = server
    with Callplane(key, base_url=url) as api:
        voices = api.voices.list()
        assert isinstance(voices[0], Voice) and [v.name for v in voices][0] == "Aria"
        assert api.voices.get(VOICE).languages == ["en-US", "es-US"]
        made = api.voices.create("Eve", "espeak-ng:en-gb", languages=["en-GB"], tags=["uk"])
        assert made.engine == "espeak-ng:en-gb" and made.languages == ["en-GB"]
        with wave.open(io.BytesIO(api.voices.preview(made.id, text="Hello there."))) as heard:
            assert heard.getframerate() == 8000 and heard.getnframes() > 4000
        assert api.voices.delete(made.id).success
        with pytest.raises(APIError) as missing:
            api.voices.create("Nobody", "piper:en_US-nobody-high")
        assert missing.value.status_code == 422

        tags = api.call_tags.list(page=1, page_size=2)
        assert isinstance(tags, Page) and tags.total_count == 3 and len(tags.items) == 2
        created_tag = api.call_tags.create("Callback", color="#00ff00")
        assert [t.name for t in api.call_tags.iter(page_size=1)][-1] == "Callback"
        assert created_tag.color == "#00ff00"

        assert api.numbers.update(NUMBER, "Front line").agent.name == "Riley"

        found = api.calls.find_by_attribute(param_key="appointment_id", param_value="APT-1001")
        assert isinstance(found, Call) and found.id == COMPLETED_CALL
        compact = api.calls.find_by_attribute(
            param_key="appointment_id", param_value="APT-1001", fields=["id", "status"]
        )
        assert compact.to_dict() == {"id": COMPLETED_CALL, "status": "completed"}
        call = api.calls.create("+14155550100", first_message="Hi", params={"order": "A-1"})
        assert call.status == CallStatus.ENQUEUED and call.params == {"order": "A-1"}
        assert api.calls.get(call.id).to_number == "+14155550100"
        assert api.calls.cancel(call.id).status == "cancelled"
        assert api.calls.list(status="cancelled").total_count >= 1
        assert len(list(api.calls.iter(page_size=2))) == api.calls.list().total_count == 5
        assert isinstance(api.calls.events(call.id), list)
        transcript = api.calls.get(COMPLETED_CALL).transcripts
        assert transcript and transcript[0].role and transcript[0].timestamp == 0.8
        assert str(api.calls.screen_pop("spt_demo_0001").id) == COMPLETED_CALL

        entry = api.feedback.create(COMPLETED_CALL, "Too fast", transcript_index=0)
        assert entry.comment == "Too fast" and not entry.resolved
        assert len(api.feedback.list(COMPLETED_CALL)) == 2
        assert api.feedback.resolve(FEEDBACK, True).resolved is True
        assert api.feedback.add_note(FEEDBACK, "done").author_name == "API"

        stored = api.contacts.put_data("sip:bob@example.com", {"step": 1}, ttl_seconds=3600)
        assert stored.revision == 1 and stored.ttlSeconds is not None
        again = api.contacts.put_data("sip:bob@example.com", {"step": 2}, expected_revision=1)
        assert again.revision == 2 and api.contacts.get_data("sip:bob@example.com").data == {
            "step": 2
        }
        assert "sip:bob@example.com" in [c.phoneNumber for c in api.contacts.iter()]
        assert api.contacts.delete("sip:bob@example.com").success is True

        imported = api.external_calls.create(
            external_call_id="zoom-1",
            title="Imported",
            direction="inbound",
            source={"name": "Zoom Phone", "provider": "zoom"},
        )
        assert imported.status == "processing" and imported.recordings == []
        leg = api.external_calls.upload_recording(
            imported.id,
            _wav(),
            "audio/wav",
            file_name="leg-1.wav",
            started_at="2026-01-01T10:00:00Z",
        )
        assert leg.status == "pending" and leg.file_name == "leg-1.wav"
        assert api.external_calls.get(imported.id).recording_count == 1
        external = api.external_calls.get(EXTERNAL_CALL)
        assert external.recordings[0].transcript[0].speaker == "caller"
        assert external.source.provider == "zoom"
        assert api.external_calls.list().total_count == 3
        assert len(list(api.external_calls.iter(page_size=1))) == 3


def test_agents_commits_branches_diff_and_numbers(server) -> None:
    url, key = server
    with Callplane(key, base_url=url) as api:
        created = api.agents.create("Sam", {"prompt": "A", "first_message": "Hi {{name|there}}"})
        agent = created.agent
        assert created.tools_secret.startswith("whsec_") and agent.branches[0].name == "main"
        first = agent.branches[0].head
        commits = api.agents.commits(agent.id)
        changed = commits.create(changes={"prompt": "B"}, message="shorter")
        assert changed.parents == [first] and changed.config == {
            "prompt": "B",
            "first_message": "Hi {{name|there}}",
        }
        branches = api.agents.branches(agent.id)
        assert branches.create("beta", from_=first).head == first
        beta = commits.create(branch="beta", changes={"language": "de"})
        language, prompt = api.agents.diff(agent.id, "main", "beta")
        assert language.path == "/language" and language.to == "de" and "from" not in language
        assert prompt.path == "/prompt" and prompt.get("from") == "B" and prompt.to == "A"
        merged = branches.merge("beta", into="main")
        assert len(merged.parents) == 2 and merged.config["language"] == "de"
        assert commits.list(branch="beta").total_count == 2
        assert [c.id for c in commits.iter(page_size=1)][-1] == first
        assert commits.get(beta.id).config["prompt"] == "A"
        assert branches.move("main", first).head == first
        assert api.agents.converse(agent.id, params={"name": "Ada"}).entries[0].text == "Hi Ada"
        assert branches.delete("beta").success is True
        assert api.agents.update(agent.id, "Sam 2").name == "Sam 2"
        assert api.agents.rotate_tools_secret(agent.id).startswith("whsec_")
        number = api.numbers.create("+14155550188", agent_id=agent.id)
        assert number.agent.branch == "main"
        with pytest.raises(APIError) as routed:
            api.agents.archive(agent.id)
        assert routed.value.status_code == 409
        assert api.numbers.update(number.id, agent_id=None).agent is None
        assert "+14155550188" in [n.number for n in api.numbers.list()]
        assert api.numbers.delete(number.id).success is True
        assert api.agents.archive(agent.id).success is True
        assert agent.id not in [a.id for a in api.agents.iter()]


def test_knowledge_bases(server) -> None:
    url, key = server
    with Callplane(key, base_url=url) as api:
        base = api.knowledge_bases.create("Shop", language="en")
        assert base.language == "en" and base.document_count == 0
        markdown = "# Returns\n\n## Shoes\nWorn shoes are repaired, never refunded."
        document = api.knowledge_bases.add_document(base.id, markdown, "text/markdown")
        assert document.title == "Returns" and document.chunk_count == 1
        noted = api.knowledge_bases.add_text(base.id, "Orchids want water weekly.", title="Garden")
        assert [d.id for d in api.knowledge_bases.documents(base.id)] == [noted.id, document.id]
        assert api.knowledge_bases.get_document(base.id, noted.id).title == "Garden"
        [found] = api.knowledge_bases.search(base.id, "refund shoes", top_k=1)
        assert found.title == "Returns › Shoes" and found.document_id == document.id
        assert found.score > 0
        assert api.knowledge_bases.get(base.id).document_count == 2
        assert [b.id for b in api.knowledge_bases.iter()] == [base.id]
        assert api.knowledge_bases.delete_document(base.id, document.id).success
        assert api.knowledge_bases.search(base.id, "shoes") == []
        assert api.knowledge_bases.delete(base.id).success
        with pytest.raises(APIError) as missing:
            api.knowledge_bases.get(base.id)
        assert missing.value.status_code == 404


def test_web_call_tokens(server) -> None:
    url, key = server
    with Callplane(key, base_url=url) as api:
        agent = api.agents.create("Web", {"prompt": "A"}).agent
        token = api.web_calls.create_token(agent.id, "https://shop.example.com", params={"a": 1})
        assert token.token.startswith("cpw_") and token.expires_at
        with pytest.raises(APIError) as refused:
            api.web_calls.create("not an offer", agent.id)
        assert refused.value.status_code == 422


def test_campaigns_and_suppressions(server) -> None:
    url, key = server
    with Callplane(key, base_url=url) as api:
        agent = api.agents.create("Renewals")
        campaign = api.campaigns.create(
            "Renewals", agent.agent.id, retry={"max_attempts": 2}, pacing={"max_concurrent": 2}
        )
        assert campaign.status == "draft" and campaign.counts.total == 0
        assert campaign.retry["delay_seconds"] == 3600 and campaign.pacing["max_concurrent"] == 2
        added = api.campaigns.add_recipients(
            campaign.id, csv="phone_number,first_name\n+15550001000,Ann\nnope,Bob\n"
        )
        assert (added.added, added.duplicates) == (1, 0)
        assert added.rejected[0]["row"] == 2
        again = api.campaigns.add_recipients(campaign.id, [{"phone_number": "+15550001000"}])
        assert again.duplicates == 1
        page = api.campaigns.recipients(campaign.id, status="queued")
        assert [r.params for r in page] == [{"first_name": "Ann"}]
        assert api.campaigns.update(campaign.id, name="Renewals 2").name == "Renewals 2"
        assert [c.id for c in api.campaigns.iter()] == [campaign.id]
        assert api.campaigns.get(campaign.id).counts.queued == 1
        assert "+15550001000" in api.campaigns.export(campaign.id)
        assert api.campaigns.cancel(campaign.id).status == "cancelled"
        with pytest.raises(APIError) as refused:
            api.campaigns.start(campaign.id)
        assert refused.value.status_code == 409

        listed = api.suppressions.create("+1 415 555 0100", reason="asked by email")
        assert listed.phone_number == "+14155550100"
        assert [s.reason for s in api.suppressions.list(phone_number="+14155550100")] == [
            "asked by email"
        ]
        with pytest.raises(APIError) as blocked:
            api.calls.create("+14155550100")
        assert blocked.value.status_code == 422
        assert api.suppressions.delete("+14155550100").success is True


def test_scoped_keys_and_the_audit_log(server) -> None:
    url, key = server
    with Callplane(key, base_url=url) as api:
        made = api.api_keys.create("reporting", ["calls:read"])
        assert made.key and made.key.startswith("cp_") and made.scopes == ["calls:read"]
        assert made.id in [k.id for k in api.api_keys.list().items]
        with Callplane(made.key, base_url=url) as reader, pytest.raises(APIError) as refused:
            reader.agents.list()
        assert refused.value.status_code == 403 and "agents:read" in refused.value.message
        assert api.api_keys.delete(made.id).success
        events = api.audit_log.list(action="api_keys.create_api_key").items
        assert [e.resource_id for e in events] == [str(made.id)]
        assert len(list(api.audit_log.iter(resource_id=str(made.id)))) == 2


def test_custom_data(server) -> None:
    url, key = server
    with Callplane(key, base_url=url) as api:
        table = api.data.create_table(
            "tasks",
            [
                {"name": "title", "type": "TEXT", "required": True},
                {"name": "done", "type": "BOOLEAN"},
                {"name": "seen_at", "type": "TIMESTAMP"},
            ],
        )
        assert [c.name for c in table.columns] == ["title", "done", "seen_at"]
        assert api.data.get_table(table.id).name == "tasks"
        assert "tasks" in [t.name for t in api.data.list_tables()]
        tasks = api.data.records("tasks")
        created = tasks.create([{"title": f"t{i}", "done": i % 2 == 0} for i in range(5)])
        assert [r.title for r in created] == ["t0", "t1", "t2", "t3", "t4"]
        page = tasks.list(per_page=2, sort_by="id", sort_direction="asc", done=True)
        assert (
            page.total_count == 3 and page.per_page == 2 and [r.title for r in page] == ["t0", "t2"]
        )
        assert [r.title for r in tasks.iter(per_page=2, sort_by="id", sort_direction="asc")] == [
            f"t{i}" for i in range(5)
        ]
        assert tasks.list(title=["t1", "t3"]).total_count == 2
        first = created[0].id
        assert tasks.get(first).done is True
        assert tasks.update(first, {"done": False}).done is False
        assert tasks.replace(first, {"title": "new"}).done is None
        dated = tasks.update(first, {"seen_at": "2026-01-01T00:00:00Z"}, "seen_at")
        with pytest.raises(APIError) as stale:
            tasks.update(
                first, {"seen_at": "2025-01-01T00:00:00Z"}, source_updated_at_column="seen_at"
            )
        assert stale.value.status_code == 409 and dated.seen_at.startswith("2026-01-01")
        queried = tasks.query([{"column": "title", "op": "in", "value": ["t1", "t2"]}])
        assert queried.total_count == 2
        assert tasks.delete(first).success is True
        assert tasks.delete_all().deleted_count == 4
        assert api.data.delete_table(table.id).success is True


def test_errors_are_api_errors_with_the_family_shape(server) -> None:
    url, key = server
    with Callplane(key, base_url=url) as api:
        with pytest.raises(APIError) as missing_voice:
            api.voices.get("0b7d6f3a-2c1e-4f5a-9b8c-7d6e5f4a3b99")
        assert missing_voice.value.status_code == 404
        assert missing_voice.value.message == "Voice not found"
        assert missing_voice.value.body == {"error": "Voice not found"}
        with pytest.raises(APIError) as not_found:
            api.calls.find_by_attribute(param_key="nope", param_value="x")
        assert not_found.value.status_code == 404 and not_found.value.errors
        with pytest.raises(APIError) as invalid:
            api.contacts.put_data("+14155550100", {"a": 1}, ttl_seconds=5)
        assert invalid.value.status_code == 422 and "ttlSeconds" in invalid.value.message
        with pytest.raises(APIError) as validation:
            api.call_tags.list(page_size=1000)
        assert validation.value.status_code == 422 and "page_size" in validation.value.errors[0]
    with Callplane("cp_wrong", base_url=url) as stranger, pytest.raises(APIError) as denied:
        stranger.voices.list()
    assert denied.value.status_code == 401


def test_async_client(server) -> None:
    import asyncio

    url, key = server

    async def scenario() -> None:
        async with AsyncCallplane(key, base_url=url) as api:
            voices, tags = await asyncio.gather(api.voices.list(), api.call_tags.list())
            assert len(voices) == 3 and tags.total_count == 3
            call = await api.calls.create("+14155550100")
            assert (await api.calls.cancel(call.id)).status == "cancelled"
            made = await api.agents.create("Async", {"prompt": "x"})
            commit = await api.agents.commits(made.agent.id).create(changes={"prompt": "y"})
            assert commit.config == {"prompt": "y"}
            assert [a.name async for a in api.agents.iter(page_size=1)]
            names = [t.name async for t in api.call_tags.iter(page_size=2)]
            assert len(names) == 3
            rows = [r async for r in api.data.records("customers").iter(per_page=1)]
            assert rows and all(r.id for r in rows)
            try:
                await api.voices.get("0b7d6f3a-2c1e-4f5a-9b8c-7d6e5f4a3b99")
            except APIError as exc:
                assert exc.status_code == 404
            else:
                raise AssertionError("no APIError")

    asyncio.run(scenario())


def test_bring_your_own_http_client(server) -> None:
    url, key = server
    seen: list[str] = []
    http = httpx.Client(event_hooks={"request": [lambda request: seen.append(request.url.path)]})
    with Callplane(key, base_url=url, http_client=http) as api:
        api.voices.list()
    assert seen == ["/v1/voices"]
    http.close()
