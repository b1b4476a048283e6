"""CALLPLANE_SIP_* values: what parses, what is refused at start-up (not mid-call)."""

from __future__ import annotations

import pytest

from callplane.telephony.sip import SipAdapter, outcome_for
from callplane.telephony.sip_config import Trunk, parse_host_port, parse_port_range
from tests.conftest import make_settings


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("sip:trunk.example.com", Trunk("trunk.example.com", 5060)),
        ("sip:10.0.0.5:5080", Trunk("10.0.0.5", 5080)),
        ("sip:acme@pbx.local", Trunk("pbx.local", 5060, "acme", None)),
        ("SIP:acme:p%40ss:w0rd@pbx.local:5070", Trunk("pbx.local", 5070, "acme", "p@ss:w0rd")),
    ],
    ids=["host", "host-port", "user", "user-password"],
)
def test_trunks_parse(value: str, expected: Trunk) -> None:
    assert Trunk.parse(value) == expected


@pytest.mark.parametrize(
    "value", ["trunk.example.com", "http://x", "sip:", "sip:host:99999", "sip:host:abc"]
)
def test_bad_trunks_are_refused(value: str) -> None:
    with pytest.raises(ValueError):
        Trunk.parse(value)


def test_the_password_never_shows_in_logs() -> None:
    assert "s3cret" not in repr(Trunk.parse("sip:acme:s3cret@pbx.local"))


def test_listen_and_port_range() -> None:
    assert parse_host_port("0.0.0.0:5062", default_port=5060) == ("0.0.0.0", 5062)
    assert parse_host_port("127.0.0.1", default_port=5060) == ("127.0.0.1", 5060)
    assert parse_port_range("10000-20000") == (10000, 20000)
    for bad in ("10000", "20000-10000", "80-100", "a-b"):
        with pytest.raises(ValueError):
            parse_port_range(bad)


def test_settings_build_the_adapter_or_fail_loudly() -> None:
    adapter = SipAdapter.from_settings(
        make_settings("sqlite://", sip_trunk="sip:u:p@pbx:5070", sip_rtp_ports="30000-30100")
    )
    assert adapter.trunk == Trunk("pbx", 5070, "u", "p")
    with pytest.raises(ValueError):
        SipAdapter.from_settings(make_settings("sqlite://", sip_rtp_ports="1-2"))


def test_outcomes_follow_the_lifecycle_table() -> None:
    assert [outcome_for(s) for s in (486, 600, 408, 480, 503, 404, 603)] == [
        "busy",
        "busy",
        "no_answer",
        "no_answer",
        "failed",
        "failed",
        "failed",
    ]
