"""The client takes the server's address as people write it, with or without ``/v1``, and reads
and edits webhook endpoints one by one (issue 27)."""

from __future__ import annotations

from pathlib import Path

import pytest
from callplane_client import Callplane

from tests.live_server import live_server, seed_org


def test_base_url_with_or_without_v1(database_url: str, tmp_path: Path) -> None:
    org = seed_org(database_url, tmp_path)
    with live_server(database_url, tmp_path, webhook_allow_private_networks=True) as live:
        for base in (live.url, live.url + "/", live.url + "/v1", live.url + "/v1/"):
            with Callplane(org.api_key, base_url=base) as api:
                assert api.voices.list(), base
        with Callplane(org.api_key, base_url=live.url + "/v1") as api:
            hook = api.webhooks.create("http://127.0.0.1:9/hook", description="CRM")
            assert api.webhooks.get(hook.id).description == "CRM"
            changed = api.webhooks.update(hook.id, enabled=False, events=["call.ended"])
            assert changed.enabled is False and changed.events == ["call.ended"]
            assert changed.description == "CRM"


@pytest.mark.parametrize("key", ["cp_live_abc\n", "cp_live_abc\r\n", " cp live", "clé"])
def test_a_key_that_cannot_be_a_header_is_refused_at_once(key: str) -> None:
    with pytest.raises(ValueError, match="API key") as refused:
        Callplane(key, base_url="http://127.0.0.1:9")
    assert "No answer" not in str(refused.value)
