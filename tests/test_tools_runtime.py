"""The tool runtime on the conversation fakes (tests/fakes.py): the real TurnLoop runs the
brain's tool calls — validated, under a deadline, concurrently, recorded — in milliseconds."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from prometheus_client import REGISTRY

from callplane.brain import TextDelta, ToolCall
from callplane.engine.agent import AgentSpec
from callplane.engine.conversation import generation
from callplane.engine.conversation.turn_loop import AGENT_HANGUP, REMOTE_HANGUP
from callplane.tools import Tool, ToolContext, ToolError, ToolResult
from callplane.tools.registry import TOOL_TYPES
from callplane.tools.toolbox import RESULT_CHARS, Toolbox
from tests.fakes import Conversation, FakeBrain


class Lookup(Tool):
    """A test tool: answers after ``gate`` opens (when given), or as ``behaviour`` says."""

    type = "lookup"

    def __init__(self, config: dict[str, Any], behaviour: str = "ok") -> None:
        super().__init__(config)
        self.behaviour = behaviour
        self.gate: asyncio.Event | None = None
        self.started = asyncio.Event()
        self.runs: list[dict[str, Any]] = []

    @property
    def timeout_seconds(self) -> float:
        return 0.05 if self.behaviour == "hang" else 5.0

    @property
    def speak_while_running(self) -> str | None:
        return self.config.get("speak_while_running")

    def parameters(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"order": {"type": "string", "pattern": "^[0-9]+$"}},
            "required": ["order"],
            "additionalProperties": False,
        }

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        self.runs.append(arguments)
        self.started.set()
        if self.gate is not None:
            await self.gate.wait()
        if self.behaviour == "hang":
            await asyncio.Event().wait()
        if self.behaviour == "refuse":
            raise ToolError("no such order")
        if self.behaviour == "crash":
            raise RuntimeError("boom")
        if self.behaviour == "huge":
            return ToolResult("x" * 10_000)
        return ToolResult({"order": arguments["order"], "status": "shipped"})


def tool_events(call: Any) -> list[tuple[str, dict[str, Any]]]:
    """The ``tool.called`` events (each answered turn also reports its latency)."""
    return [(kind, data) for kind, data in call.events if kind == "tool.called"]


def conversation(brain: FakeBrain, *tools: Tool, spec: AgentSpec | None = None) -> Conversation:
    spec = spec or AgentSpec(first_message="Hi.")
    return Conversation(spec, brain, toolbox=Toolbox(list(tools))).start()


def tool_entries(call: Conversation) -> list[tuple[str, str, Any]]:
    return [
        (e["role"], e["function_name"], e.get("arguments", e.get("text")))
        for e in call.transcript
        if e.get("function_name")
    ]


async def finish(call: Conversation, lines: int) -> None:
    await call.until(lambda: len(call.lines()) >= lines)
    call.hangs_up()
    assert await call.ended() == REMOTE_HANGUP


async def test_the_brain_sees_the_tools_as_functions_end_call_always_among_them() -> None:
    brain = FakeBrain(["Sure."])
    call = conversation(brain, Lookup({"type": "lookup", "name": "find_order"}))
    call.says("Hi")
    await finish(call, 2)
    assert brain.offered == [["find_order", "end_call", "opt_out"]]


def test_a_spec_tools_become_the_registry_tools_and_the_registry_keys_are_design_s() -> None:
    assert set(TOOL_TYPES) == {
        "end_call",
        "transfer_call",
        "send_dtmf",
        "contact_data",
        "query_table",
        "insert_record",
        "function",
        "knowledge_search",
        "opt_out",
        "switch_language",
    }
    spec = AgentSpec(
        tools=(
            {"type": "send_dtmf"},
            {"type": "function", "name": "lookup", "url": "https://x.test", "parameters": {}},
            {"type": "no_such_type"},
        )
    )
    box = Toolbox.from_configs(spec.tools)
    assert list(box.tools) == ["send_dtmf", "lookup", "end_call", "opt_out"]
    [definition] = [d for d in box.definitions() if d["function"]["name"] == "send_dtmf"]
    assert definition["type"] == "function"
    assert definition["function"]["parameters"]["required"] == ["digits"]


async def test_a_tool_call_runs_its_result_goes_back_and_the_brain_answers() -> None:
    lookup = Lookup({"type": "lookup"})
    brain = FakeBrain(
        [[TextDelta("Let me look."), ToolCall("lookup", {"order": "42"})], "It has shipped."]
    )
    call = conversation(brain, lookup)
    call.says("Where is order 42?")
    await finish(call, 3)
    assert call.lines() == ["Hi.", "Let me look.", "It has shipped."]
    result = '{"order":"42","status":"shipped"}'
    assert tool_entries(call) == [
        ("assistant", "lookup", {"order": "42"}),
        ("tool", "lookup", result),
    ]
    [asked] = [e for e in call.transcript if e.get("function_name") and e["role"] == "assistant"]
    assert asked["text"] == ""
    messages = brain.requests[1][0]
    assert messages[-1]["role"] == "tool" and messages[-1]["content"] == result
    assert messages[-2]["tool_calls"][0]["function"]["name"] == "lookup"
    [(kind, data)] = tool_events(call)
    assert kind == "tool.called"
    assert data["name"] == "lookup" and data["outcome"] == "ok"
    assert data["duration_seconds"] >= 0


async def test_arguments_breaking_the_schema_are_explained_and_the_brain_may_retry() -> None:
    lookup = Lookup({"type": "lookup"})
    brain = FakeBrain(
        [
            [ToolCall("lookup", {"order": "forty-two", "extra": 1})],
            [ToolCall("lookup", {"order": "42"})],
            "Found it.",
        ]
    )
    call = conversation(brain, lookup)
    call.says("Order forty-two")
    await finish(call, 2)
    assert lookup.runs == [{"order": "42"}]
    first_answer = tool_entries(call)[1][2]
    assert "invalid arguments" in first_answer
    assert "does not match" in first_answer and "extra" in first_answer
    assert [d["outcome"] for _, d in tool_events(call)] == ["invalid_arguments", "ok"]
    assert call.lines()[-1] == "Found it."


@pytest.mark.parametrize(
    ("asked", "outcome", "says"),
    [
        (ToolCall("launch_rockets", {}), "unknown_tool", "there is no tool 'launch_rockets'"),
        (ToolCall("lookup", {"order": "1" * 1_000_000}), "invalid_arguments", "larger than"),
    ],
)
async def test_an_unknown_tool_or_a_megabyte_of_arguments_is_told_and_the_call_goes_on(
    asked: ToolCall, outcome: str, says: str
) -> None:
    lookup = Lookup({"type": "lookup"})
    brain = FakeBrain([[asked], "Sorry about that."])
    call = conversation(brain, lookup)
    call.says("Do it")
    await finish(call, 2)
    assert lookup.runs == []
    assert says in tool_entries(call)[1][2]
    assert [d["outcome"] for _, d in tool_events(call)] == [outcome]
    assert call.lines()[-1] == "Sorry about that."


@pytest.mark.parametrize(
    ("behaviour", "outcome", "says"),
    [
        ("refuse", "error", '{"error":"no such order"}'),
        ("crash", "error", '{"error":"the tool failed (RuntimeError)"}'),
        ("hang", "timeout", '{"error":"no result within 0.05 s"}'),
    ],
)
async def test_a_failing_tool_never_breaks_the_call(
    behaviour: str, outcome: str, says: str
) -> None:
    brain = FakeBrain([[ToolCall("lookup", {"order": "7"})], "I could not find it."])
    call = conversation(brain, Lookup({"type": "lookup"}, behaviour))
    call.says("Order 7")
    await finish(call, 2)
    assert tool_entries(call)[1] == ("tool", "lookup", says)
    assert tool_events(call)[0][1]["outcome"] == outcome
    assert tool_events(call)[0][1]["error"] == says
    assert call.lines()[-1] == "I could not find it."


async def test_a_long_result_is_cut_to_2000_characters() -> None:
    brain = FakeBrain([[ToolCall("lookup", {"order": "7"})], "Done."])
    call = conversation(brain, Lookup({"type": "lookup"}, "huge"))
    call.says("Order 7")
    await finish(call, 2)
    assert len(tool_entries(call)[1][2]) == RESULT_CHARS


async def test_several_tool_calls_in_one_reply_run_at_once() -> None:
    first, second = Lookup({"type": "lookup", "name": "a"}), Lookup({"type": "lookup", "name": "b"})
    # Each waits for the other to have started: run one after the other, they never finish.
    first.gate, second.gate = second.started, first.started
    brain = FakeBrain([[ToolCall("a", {"order": "1"}), ToolCall("b", {"order": "2"})], "Both."])
    call = conversation(brain, first, second)
    call.says("Both orders")
    await finish(call, 2)
    assert sorted((r, n) for r, n, _ in tool_entries(call)) == [
        ("assistant", "a"),
        ("assistant", "b"),
        ("tool", "a"),
        ("tool", "b"),
    ]
    tool_messages = [m for m in brain.requests[1][0] if m["role"] == "tool"]
    assert len(tool_messages) == 2 and all("shipped" in m["content"] for m in tool_messages)


async def test_a_slow_tool_has_its_line_said_while_it_runs(monkeypatch: Any) -> None:
    monkeypatch.setattr(generation, "SPEAK_WHILE_RUNNING_AFTER", 0.01)
    lookup = Lookup({"type": "lookup", "speak_while_running": "One moment please."})
    lookup.gate = asyncio.Event()
    brain = FakeBrain([[ToolCall("lookup", {"order": "9"})], "It shipped."])
    call = conversation(brain, lookup)
    call.says("Order 9")
    await call.until(lambda: "One moment please." in call.lines())
    lookup.gate.set()
    await finish(call, 3)
    assert call.lines() == ["Hi.", "One moment please.", "It shipped."]
    # The brain hears its hold line as said with the call, before the answer came. (Where the
    # greeting falls against the caller's first words depends on timing: not looked at.)
    history = brain.requests[1][0]
    [made] = [n for n, message in enumerate(history) if message.get("tool_calls")]
    assert history[made]["content"] == "One moment please."
    assert [m["role"] for m in history[made + 1 :]] == ["tool"]


async def test_the_caller_may_barge_in_while_a_tool_runs() -> None:
    lookup = Lookup({"type": "lookup"})
    lookup.gate = asyncio.Event()  # never opens
    brain = FakeBrain([[ToolCall("lookup", {"order": "9"})], "Of course, what else?"])
    call = conversation(brain, lookup)
    call.says("Order 9")
    await call.until(lambda: lookup.started.is_set())
    call.says("Actually, never mind")
    await finish(call, 2)
    [answer] = [e for e in call.transcript if e["role"] == "tool"]
    assert "interrupted" in answer["text"]
    assert call.lines("user") == ["Order 9", "Actually, never mind"]
    assert call.lines()[-1] == "Of course, what else?"
    await call.until(lambda: tool_events(call))
    assert tool_events(call)[0][1]["outcome"] == "interrupted"


async def test_end_call_is_a_registry_tool_and_hangs_up_once_the_line_is_heard() -> None:
    brain = FakeBrain([[TextDelta("Goodbye then."), ToolCall("end_call", {"reason": "done"})]])
    call = conversation(brain, spec=AgentSpec(first_message="Hi."))
    call.says("Bye")
    assert await call.ended() == AGENT_HANGUP
    assert call.lines()[-1] == "Goodbye then."
    assert tool_entries(call) == [
        ("assistant", "end_call", {"reason": "done"}),
        ("tool", "end_call", '{"ended":true}'),
    ]
    assert [d["name"] for _, d in tool_events(call)] == ["end_call"]


async def test_send_dtmf_presses_the_keys_and_a_transfer_the_line_cannot_do_is_told() -> None:
    spec = AgentSpec(
        first_message="Hi.",
        tools=(
            {"type": "send_dtmf"},
            {"type": "transfer_call", "destinations": [{"name": "sales", "number": "+15550100"}]},
        ),
    )
    brain = FakeBrain(
        [
            [ToolCall("send_dtmf", {"digits": "12#"}), ToolCall("send_dtmf", {"digits": "9x"})],
            [ToolCall("transfer_call", {"destination": "sales"})],
            "I cannot transfer you, sorry.",
        ]
    )
    call = Conversation(spec, brain).start()
    call.says("Press one two pound")
    await finish(call, 2)
    assert call.connection.dtmf == ["12#"]
    answers = [e["text"] for e in call.transcript if e["role"] == "tool"]
    assert answers[0] == '{"sent":"12#"}' or answers[1] == '{"sent":"12#"}'
    assert any("does not match" in a for a in answers[:2])
    assert orjson.loads(answers[2]) == {"error": "this phone network cannot transfer calls"}


def test_a_tool_whose_parameters_are_no_schema_is_left_out_not_the_call() -> None:
    box = Toolbox.from_configs(
        [
            {"type": "function", "name": "bad", "url": "https://x.test", "parameters": {"type": 5}},
            {"type": "function", "name": "good", "url": "https://x.test", "parameters": {}},
        ]
    )
    assert list(box.tools) == ["good", "end_call", "opt_out"]


def test_contact_data_reads_the_other_party_never_our_own_number() -> None:
    from callplane.tools.contact_data import ContactData
    from tests.fakes import FakeConnection

    tool = ContactData({"type": "contact_data"})

    def other(**call: Any) -> str:
        return tool._identifier(ToolContext(connection=FakeConnection(), call=call))

    assert other(direction="inbound", from_number="+1555", to_number="+1999") == "+1555"
    assert other(direction="outbound", from_number="+1999", to_number="+1555") == "+1555"
    with pytest.raises(ToolError):
        other(direction="inbound", from_number=None, to_number="+1999")


async def test_one_tool_called_twice_gets_each_answer_to_its_own_call() -> None:
    # Order 1 is slow, order 2 answers first: each answer must go back with its own call.
    lookup = Lookup({"type": "lookup"})
    lookup.gate = asyncio.Event()

    class Ordered(Lookup):
        async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
            if arguments["order"] == "2":
                self.runs.append(arguments)
                return ToolResult({"order": "2", "status": "lost"})
            result = await lookup.run(arguments, context)
            return result

    ordered = Ordered({"type": "lookup"})
    brain = FakeBrain(
        [[ToolCall("lookup", {"order": "1"}), ToolCall("lookup", {"order": "2"})], "Both."]
    )
    call = conversation(brain, ordered)
    call.says("Orders 1 and 2")
    await call.until(lambda: len([e for e in call.transcript if e["role"] == "tool"]) == 1)
    lookup.gate.set()
    await finish(call, 2)
    answers = [e["text"] for e in call.transcript if e["role"] == "tool"]
    assert answers == ['{"order":"2","status":"lost"}', '{"order":"1","status":"shipped"}']
    history = brain.requests[1][0]
    [made] = [m for m in history if m.get("tool_calls")]
    asked = {c["id"]: orjson.loads(c["function"]["arguments"])["order"] for c in made["tool_calls"]}
    told = {
        m["tool_call_id"]: orjson.loads(m["content"])["order"]
        for m in history
        if m["role"] == "tool"
    }
    assert len(asked) == 2 and told == asked


def _tool_sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_each_tool_use_is_counted_in_the_metrics_by_type_and_outcome() -> None:
    ok = _tool_sample("callplane_tool_calls_total", tool_type="lookup", outcome="ok")
    error = _tool_sample("callplane_tool_calls_total", tool_type="lookup", outcome="error")
    timed = _tool_sample("callplane_tool_duration_seconds_count", tool_type="lookup")
    for behaviour in ("ok", "refuse", "ok"):
        brain = FakeBrain([[ToolCall("lookup", {"order": "7"})], "Done."])
        call = conversation(brain, Lookup({"type": "lookup"}, behaviour))
        call.says("Order 7")
        await finish(call, 2)
    assert _tool_sample("callplane_tool_calls_total", tool_type="lookup", outcome="ok") == ok + 2
    assert (
        _tool_sample("callplane_tool_calls_total", tool_type="lookup", outcome="error") == error + 1
    )
    assert _tool_sample("callplane_tool_duration_seconds_count", tool_type="lookup") == timed + 3
