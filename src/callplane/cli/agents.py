"""``callplane agents test AGENT_ID``: run an agent's tests through the API, for CI.

It talks to a callplane server over HTTP (``CALLPLANE_URL``, ``CALLPLANE_API_KEY``), starts a
test run on ``--ref``, waits for the workers to finish it, prints each test's outcome (and
writes a JUnit report with ``--junit``), and exits 1 unless every test passed.
"""

from __future__ import annotations

import os
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Annotated, Any

import typer

from callplane.cli.common import fail

agents_app = typer.Typer(help="Agents: test a branch before it is merged.", no_args_is_help=True)

#: Seconds between two looks at a running test run.
POLL_SECONDS = 1.0


def junit(agent_id: str, run: dict[str, Any]) -> bytes:
    """The run as a JUnit XML report: one testcase per test, its failures as the message."""
    results = run.get("results") or []
    suite = ET.Element(
        "testsuite",
        name=f"callplane agent {agent_id} @ {run.get('ref')}",
        tests=str(len(results) or 1),
        failures=str(sum(not r["passed"] for r in results)),
        errors="1" if run.get("status") == "error" else "0",
    )
    if run.get("status") == "error":
        case = ET.SubElement(suite, "testcase", classname=f"agent.{agent_id}", name="test run")
        ET.SubElement(case, "error", message=str(run.get("error"))).text = str(run.get("error"))
    for result in results:
        case = ET.SubElement(suite, "testcase", classname=f"agent.{agent_id}", name=result["test"])
        if not result["passed"]:
            lines = [f for r in result["runs"] for f in r["failures"]]
            failure = ET.SubElement(case, "failure", message=f"pass rate {result['pass_rate']:g}")
            failure.text = "\n".join(lines)
    report: bytes = ET.tostring(suite, encoding="utf-8", xml_declaration=True)
    return report


@agents_app.command("test")
def agents_test(
    agent_id: Annotated[str, typer.Argument(help="The agent's id")],
    ref: Annotated[str, typer.Option("--ref", help="A branch or commit id")] = "main",
    mode: Annotated[str, typer.Option("--mode", help="text or audio")] = "text",
    junit_file: Annotated[
        Path | None, typer.Option("--junit", help="Write a JUnit XML report here")
    ] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds to wait for the run")] = 900,
) -> None:
    """Run the agent's tests on `--ref` through the API (CALLPLANE_URL, CALLPLANE_API_KEY) and
    exit 1 unless every test passed."""
    import httpx

    url = os.environ.get("CALLPLANE_URL", "http://127.0.0.1:8000").rstrip("/")
    key = os.environ.get("CALLPLANE_API_KEY")
    if not key:
        fail("CALLPLANE_API_KEY is not set")
    headers = {"Authorization": f"Bearer {key}"}
    base = f"{url}/v1/agents/{agent_id}/test_runs"
    with httpx.Client(headers=headers, timeout=30, trust_env=False) as http:
        try:
            started = http.post(base, json={"ref": ref, "mode": mode})
            if started.status_code != 201:
                fail(f"the run was refused ({started.status_code}): {started.text}")
            run: dict[str, Any] = started.json()["test_run"]
            typer.echo(f"test run {run['id']} on {ref} ({run['commit_id']})")
            deadline = time.monotonic() + timeout
            while run["status"] == "running":
                if time.monotonic() > deadline:
                    fail(f"the run did not finish within {timeout:g} s")
                time.sleep(POLL_SECONDS)
                response = http.get(f"{base}/{run['id']}")
                if response.status_code != 200:
                    fail(f"reading the run failed ({response.status_code}): {response.text}")
                run = response.json()["test_run"]
        except httpx.HTTPError as exc:
            fail(f"cannot reach {url}: {exc}")
    for result in run["results"]:
        mark = "PASS" if result["passed"] else "FAIL"
        typer.echo(f"{mark}  {result['test']}  (pass rate {result['pass_rate']:g})")
        for number, repetition in enumerate(result["runs"], start=1):
            for failure in repetition["failures"]:
                typer.echo(f"      #{number}: {failure}")
    if junit_file is not None:
        junit_file.write_bytes(junit(agent_id, run))
    if run["status"] == "error":
        fail(f"the run could not be completed: {run['error']}")
    typer.echo(f"{run['status']}: {sum(r['passed'] for r in run['results'])}/{len(run['results'])}")
    if run["status"] != "passed":
        raise typer.Exit(1)
