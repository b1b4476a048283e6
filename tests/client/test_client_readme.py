"""The examples of clients/python/README.md run, in order, against a live server with the demo
data (a README whose examples do not run fails here)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from callplane_client import Callplane

from tests.live_server import live_server, seed_org

README = Path(__file__).resolve().parents[2] / "clients" / "python" / "README.md"


def test_readme_examples_run(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) >= 4
    org = seed_org(database_url, tmp_path)
    with live_server(database_url, tmp_path) as server:
        monkeypatch.setenv("CALLPLANE_API_KEY", org.api_key)
        monkeypatch.setenv("CALLPLANE_BASE_URL", server.url)
        namespace: dict[str, object] = {"__name__": "readme"}
        try:
            for block in blocks:
                exec(compile(block, str(README), "exec"), namespace)  # noqa: S102
        finally:
            # The README leaves its client open, as a script may: its keep-alive socket would
            # otherwise be collected during some later test.
            for value in namespace.values():
                if isinstance(value, Callplane):
                    value.close()
    printed = capsys.readouterr().out
    assert "Aria" in printed and "5c0f1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e01 completed" in printed
    assert "cancelled" in printed and "409" in printed and "webhook.test" in printed
