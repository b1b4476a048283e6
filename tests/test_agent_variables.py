"""The variables renderer of docs/agents.md: pure, never evaluates anything."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from callplane.agents.variables import VariableSources, render

NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
SOURCES = VariableSources(
    params={"name": "Ada", "order": {"id": 42, "items": ["a", "b"]}, "vip": True, "n": None},
    contact={"name": "Contact Ada", "plan": "gold", "visits": 3},
    defaults={"clinic": "Bright Smiles", "plan": "basic"},
    from_number="+14155550100",
    to_number="+14155550199",
    direction="outbound",
    now=NOW,
)


@pytest.mark.parametrize(
    ("template", "text", "missing"),
    [
        ("Hi {{name}}", "Hi Ada", []),
        ("Hi {{ name }}", "Hi Ada", []),
        ("{{plan}} at {{clinic}}", "gold at Bright Smiles", []),
        ("{{params.order.id}}", "42", []),
        ("{{params.order}}", '{"id":42,"items":["a","b"]}', []),
        ("{{ params.order.items.1 }}", "b", []),
        ("{{contact.name}}", "Contact Ada", []),
        ("{{contact.visits}}", "3", []),
        ("{{vip}}", "true", []),
        ("{{n}}", "null", []),
        (
            "{{call.from_number}} {{call.to_number}} {{call.direction}}",
            "+14155550100 +14155550199 outbound",
            [],
        ),
        ("{{now}}", "2026-03-04T05:06:07Z", []),
        ("{{today}}", "2026-03-04", []),
        ("Hi {{nobody}}!", "Hi !", ["nobody"]),
        ("Hi {{ nobody | there }}!", "Hi there!", []),
        ("{{a}}{{a}}{{b|x}}", "x", ["a"]),
        ("{{params.order.missing|?}}", "?", []),
        ("{{contact.city|there}} {{contact.city}}", "there ", ["contact.city"]),
        ("{{__import__('os').system('x')}}", "", ["__import__('os').system('x')"]),
        ("{{ 7*7 }}", "", ["7*7"]),
        ("{% for x in y %}{{name}}", "{% for x in y %}Ada", []),
        ("no braces", "no braces", []),
        ("{{name}", "{{name}", []),
        ("{{}}", "", []),
    ],
)
def test_render(template, text, missing):
    assert render(template, SOURCES) == (text, missing)


def test_params_win_over_contact_and_contact_over_defaults():
    sources = VariableSources(params={}, contact={"plan": "gold"}, defaults={"plan": "basic"})
    assert render("{{plan}}", sources) == ("gold", [])
    assert render("{{plan}}", VariableSources(defaults={"plan": "basic"})) == ("basic", [])
