"""Test runs: worked through by the workers against any ref, in text mode, with the stub LLM as
agent, caller and judge. A failure says what was expected and what was said; a judge that
answers garbage makes the run `error`; a test deleted mid-run changes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.agent_tests_support import CONFIG, add_test, finished, start_run
from tests.agents_support import commit, create_agent, head
from tests.conftest import client_for
from tests.factories import make_org
from tests.llm_stub import Reply, StubLLM

BOOKS = Reply("Booking you for Monday.", tool="book", arguments={"day": "Monday", "time": "9"})


@pytest.fixture
def llm() -> Iterator[StubLLM]:
    with StubLLM(
        replies=[BOOKS, "Anything else?", "Goodbye!"], after_tool=["You are booked."]
    ) as stub:
        yield stub


@pytest.fixture
async def app(make_app: Any, llm: StubLLM) -> Any:
    return await make_app(llm_base_url=llm.base_url, worker="embedded", worker_poll_seconds=0.05)


async def test_a_run_passes_and_fails_saying_what_was_expected(app, client, llm):
    org = await make_org(app)
    agent = await create_agent(client, org, CONFIG)
    turns = [{"user": "A cleaning on Monday please"}, {"user": "No thanks"}]
    await add_test(
        client,
        org,
        agent["id"],
        name="books",
        turns=turns,
        mocks={"book": {"slot": "9:00"}},
        expect={
            "tool_calls": [{"name": "book", "arguments": {"day": "Monday"}}],
            "not_tool_calls": ["end_call"],
            "said": ["booked", "(?i)anything else"],
            "not_said": "sorry",
            "ended": False,
            "transferred": False,
        },
    )
    await add_test(
        client,
        org,
        agent["id"],
        name="never books tuesday",
        turns=turns,
        expect={
            "tool_calls": [{"name": "book", "arguments": {"day": "Tuesday"}}],
            "said": "Tuesday",
            "ended": True,
        },
    )
    run = await start_run(client, org, agent["id"])
    assert run["ref"] == "main" and run["commit_id"] == head(agent) and run["mode"] == "text"
    done = await finished(client, org, agent["id"], run["id"])
    assert done["status"] == "failed" and done["error"] is None and done["finished_at"]
    results = {r["test"]: r for r in done["results"]}
    good = results["books"]
    assert good["passed"] is True and good["pass_rate"] == 1, good
    [one] = good["runs"]
    assert one["failures"] == [] and one["passed"] is True
    transcript = one["transcript"]
    assert transcript[0] == {"role": "assistant", "text": "Hi, this is Bright Smiles."}
    assert {
        "role": "tool",
        "function_name": "book",
        "text": '{"slot":"9:00"}',
    } in (transcript)
    bad = results["never books tuesday"]
    assert bad["passed"] is False and bad["pass_rate"] == 0
    failures = bad["runs"][0]["failures"]
    assert failures[0] == (
        'expect.tool_calls.0: expected book({"day":"Tuesday"}) (arguments a subset, in order), '
        'the agent called book({"day":"Monday","time":"9"})'
    )
    assert failures[1].startswith("expect.said.0: /Tuesday/: expected the agent to say it, ")
    assert '"Booking you for Monday."' in failures[1] and '"Anything else?"' in failures[1]
    assert failures[2] == "expect.ended: expected true, it was false"
    # The mocked tool answered the other test {"mocked": true}.
    assert {"role": "tool", "function_name": "book", "text": '{"mocked":true}'} in (
        bad["runs"][0]["transcript"]
    )

    listed = await client.get(
        f"/v1/agents/{agent['id']}/test_runs",
        headers=org.headers,
        params={"commit_id": head(agent)},
    )
    assert [r["id"] for r in listed.json()["test_runs"]] == [run["id"]]
    assert listed.json()["total_count"] == 1
    other = await client.get(
        f"/v1/agents/{agent['id']}/test_runs",
        headers=org.headers,
        params={"commit_id": "00000000-0000-0000-0000-000000000000"},
    )
    assert other.json()["test_runs"] == []


async def test_runs_on_a_branch_with_named_tests(app, client, llm):
    org = await make_org(app)
    agent = await create_agent(client, org, {"prompt": "Hi."})
    await client.post(
        f"/v1/agents/{agent['id']}/branches", headers=org.headers, json={"name": "tools"}
    )
    made = await commit(client, org, agent["id"], branch="tools", config=CONFIG)
    test = {"turns": [{"user": "Monday"}], "mocks": {"book": {}}, "expect": {"said": "Monday"}}
    await add_test(client, org, agent["id"], name="a", **test)
    await add_test(client, org, agent["id"], name="b", **test)
    run = await start_run(client, org, agent["id"], ref="tools", tests=["b"])
    assert run["commit_id"] == made["commit"]["id"]
    done = await finished(client, org, agent["id"], run["id"])
    assert done["status"] == "passed" and [r["test"] for r in done["results"]] == ["b"]

    # On main the tool does not exist: the mock fails the test, saying so.
    on_main = await finished(
        client, org, agent["id"], (await start_run(client, org, agent["id"], tests=["a"]))["id"]
    )
    assert on_main["status"] == "failed"
    assert on_main["results"][0]["runs"][0]["failures"] == [
        "mocks.book: the commit has no tool book"
    ]

    for body, named in [
        ({"ref": "nope"}, "ref"),
        ({"tests": ["zzz"]}, "tests: no test named zzz"),
        ({"tests": []}, "tests"),
        ({"mode": "video"}, "mode"),
    ]:
        response = await client.post(
            f"/v1/agents/{agent['id']}/test_runs", headers=org.headers, json=body
        )
        assert response.status_code == 422 and named in response.json()["error"], response.text


async def test_judge_verdicts_and_a_judge_that_answers_garbage(app, client, llm):
    org = await make_org(app)
    agent = await create_agent(client, org, CONFIG)
    judged = {"turns": [{"user": "Monday"}], "judge": ["The agent is polite", "It confirms"]}
    await add_test(client, org, agent["id"], name="judged", **judged)
    llm.verdicts = ['{"passed": true, "reason": "polite"}', '{"passed": false, "reason": "no"}']
    done = await finished(
        client, org, agent["id"], (await start_run(client, org, agent["id"]))["id"]
    )
    assert done["status"] == "failed"
    assert done["results"][0]["runs"][0]["failures"] == [
        "judge.1: 'It confirms' was judged failed: no"
    ]
    judge_requests = [r for r in llm.requests if not r.get("stream")]
    assert "Criterion: The agent is polite" in judge_requests[0]["messages"][1]["content"]
    assert "Caller: Monday" in judge_requests[0]["messages"][1]["content"]

    llm.verdicts = ["Sure, looks fine to me!"]
    broken = await finished(
        client, org, agent["id"], (await start_run(client, org, agent["id"]))["id"]
    )
    assert broken["status"] == "error" and broken["results"] == []
    assert "is not a verdict: 'Sure, looks fine to me!'" in broken["error"]


async def test_repeat_and_pass_rate(app, client, llm):
    org = await make_org(app)
    agent = await create_agent(client, org, CONFIG)
    body = {"turns": [{"user": "Monday"}], "judge": ["ok"], "repeat": 4}
    await add_test(client, org, agent["id"], name="half", pass_rate=0.5, **body)
    verdicts = [f'{{"passed": {v}, "reason": "r"}}' for v in ("true", "false", "true", "false")]
    llm.verdicts = list(verdicts)
    done = await finished(
        client, org, agent["id"], (await start_run(client, org, agent["id"]))["id"]
    )
    [result] = done["results"]
    assert [r["passed"] for r in result["runs"]] == [True, False, True, False]
    assert result["pass_rate"] == 0.5 and result["passed"] is True and done["status"] == "passed"

    await client.patch(
        f"/v1/agents/{agent['id']}/tests/half", headers=org.headers, json={"pass_rate": 0.75}
    )
    llm.verdicts = list(verdicts)
    done = await finished(
        client, org, agent["id"], (await start_run(client, org, agent["id"]))["id"]
    )
    assert done["results"][0]["passed"] is False and done["status"] == "failed"


async def test_a_persona_plays_the_caller_and_is_bounded_by_max_turns(app, client, llm):
    org = await make_org(app)
    agent = await create_agent(client, org, CONFIG)
    caller = {"persona": "a patient", "goal": "book Monday", "max_turns": 3}
    await add_test(
        client, org, agent["id"], name="persona", caller=caller, expect={"said": "booked"}
    )
    llm.caller_lines = ["Hi, Monday please.", "No, that's all.", "Bye.", "Never hang up!"]
    done = await finished(
        client, org, agent["id"], (await start_run(client, org, agent["id"]))["id"]
    )
    transcript = done["results"][0]["runs"][0]["transcript"]
    callers = [e["text"] for e in transcript if e["role"] == "user"]
    assert callers == ["Hi, Monday please.", "No, that's all.", "Bye."]
    assert done["status"] == "passed"
    persona_requests = [
        r
        for r in llm.requests
        if not r.get("stream") and "a patient" in r["messages"][0]["content"]
    ]
    # The caller hears the agent as the other party.
    assert persona_requests[1]["messages"][-1] == {"role": "user", "content": "You are booked."}

    llm.caller_lines = []  # hangs up at once
    done = await finished(
        client, org, agent["id"], (await start_run(client, org, agent["id"]))["id"]
    )
    transcript = done["results"][0]["runs"][0]["transcript"]
    assert [e["role"] for e in transcript] == ["assistant"]
    assert done["results"][0]["runs"][0]["failures"][0].startswith("expect.said.0: /booked/")


async def test_a_backtracking_pattern_fails_its_test_and_the_run_finishes(app, client, llm):
    org = await make_org(app)
    agent = await create_agent(client, org, {"prompt": "Hi.", "first_message": "a" * 1990})
    await add_test(
        client, org, agent["id"], name="slow", turns=[{"user": "x"}], expect={"said": "(a|aa)+b"}
    )
    done = await finished(
        client, org, agent["id"], (await start_run(client, org, agent["id"]))["id"]
    )
    assert done["status"] == "failed"
    assert done["results"][0]["runs"][0]["failures"] == [
        "expect.said.0: /(a|aa)+b/ took too long to match (a pattern that backtracks)"
    ]


async def test_a_test_deleted_while_its_run_waits_is_still_run(make_app, llm):
    # No worker yet: the run waits, its test is deleted, then a worker takes the run.
    quiet = await make_app(llm_base_url=llm.base_url)
    org = await make_org(quiet)
    async with client_for(quiet) as api:
        agent = await create_agent(api, org, CONFIG)
        await add_test(api, org, agent["id"], name="gone", turns=[{"user": "hi"}])
        run = await start_run(api, org, agent["id"])
        deleted = await api.delete(f"/v1/agents/{agent['id']}/tests/gone", headers=org.headers)
        assert deleted.status_code == 200
        await make_app(llm_base_url=llm.base_url, worker="embedded", worker_poll_seconds=0.05)
        done = await finished(api, org, agent["id"], run["id"])
    assert done["status"] == "passed" and done["results"][0]["test"] == "gone"
