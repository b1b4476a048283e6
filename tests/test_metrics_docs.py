"""docs/metrics.md lists every metric ``observability.metrics`` defines, in its one table (a
new metric without a row fails here), and every setting of issue 29."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from prometheus_client import Counter, Gauge, Histogram

from callplane.observability import metrics

DOC = (Path(__file__).resolve().parent.parent / "docs" / "metrics.md").read_text()
TABLE = [line for line in DOC.splitlines() if line.startswith("| `callplane_")]


def _exposed() -> list[str]:
    names = list(metrics.SCRAPE_GAUGES)
    for value in vars(metrics).values():
        if isinstance(value, Counter):
            names.append(f"{value._name}_total")
        elif isinstance(value, Gauge | Histogram):
            names.append(value._name)
    return sorted(names)


def test_the_metrics_module_defines_them_all() -> None:
    assert len(_exposed()) >= 19


@pytest.mark.parametrize("name", _exposed())
def test_every_metric_is_documented(name: str) -> None:
    assert any(row.startswith(f"| `{name}` |") for row in TABLE), name


def test_the_table_lists_no_metric_that_does_not_exist() -> None:
    documented = {row.split("`")[1] for row in TABLE}
    assert documented == set(_exposed())


@pytest.mark.parametrize("name", ["METRICS_TOKEN", "METRICS_LISTEN", "TURN_LATENCY_GOAL_MS"])
def test_the_settings_are_documented(name: str) -> None:
    assert f"`CALLPLANE_{name}`" in DOC


MONITORING = Path(__file__).resolve().parent.parent / "deploy" / "monitoring"


def test_the_grafana_dashboard_and_alerts_name_only_real_metrics() -> None:
    import json
    import re

    dashboard = json.loads((MONITORING / "grafana-dashboard.json").read_text())
    exprs = " ".join(t["expr"] for p in dashboard["panels"] for t in p["targets"])
    rules = (MONITORING / "alerts.yml").read_text()
    exposed = set(_exposed())
    for text in (exprs, rules):
        for name in re.findall(r"callplane_[a-z_]+", text):
            base = re.sub(r"_(bucket|sum|count)$", "", name)
            assert name in exposed or base in exposed, name
    for alert in ("TurnLatencyOverGoal", "WebhookFailures", "CallsStuckDialing", "LeaseExpir"):
        assert alert in rules


@pytest.mark.skipif(not shutil.which("promtool"), reason="promtool (Debian's prometheus) absent")
def test_the_alert_rules_are_valid() -> None:
    checked = subprocess.run(
        ["promtool", "check", "rules", str(MONITORING / "alerts.yml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
