"""The brain's client, summary and analyzers against a real local OpenAI-compatible server."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from callplane.brain import (
    Brain,
    BrainError,
    ChatCompletionsBrain,
    ChatHistory,
    SentenceSplitter,
    TextDelta,
    ToolCall,
    run_analyzers,
    summarize,
)
from callplane.brain.history import Item, Said, ToolAnswered, ToolCalled, chat_messages
from callplane.brain.summary import extractive_summary
from tests.llm_stub import Reply, StubLLM

TRANSCRIPT: list[dict[str, Any]] = [
    {"role": "assistant", "text": "Hi, this is Ada from Acme Dental.", "timestamp": 0.1},
    {"role": "user", "text": "Hi. I need to move my dental appointment.", "timestamp": 2.0},
    {"role": "assistant", "text": "Of course. Which day suits you?", "timestamp": 3.1},
    {"role": "user", "text": "Friday morning, the appointment at nine.", "timestamp": 5.0},
    {"role": None, "function_name": "end_call", "arguments": {"reason": "done"}, "timestamp": 6},
]
SENTIMENT = {
    "type": "object",
    "properties": {"sentiment": {"type": "string", "enum": ["positive", "negative"]}},
    "required": ["sentiment"],
}


@pytest.fixture
def stub() -> Iterator[StubLLM]:
    with StubLLM(
        replies=[
            "Sure, Dr. Smith can see you Friday at 9.30 am. Does that work? Great!",
            Reply("Goodbye.", tool="end_call", arguments={"reason": "caller is done"}),
        ]
    ) as server:
        yield server


def _items(entries: list[dict[str, Any]]) -> list[Item]:
    """Entries as history items; a call's ``id`` (default: its index) ties an answer to it."""
    items: list[Item] = []
    for n, e in enumerate(entries):
        if e.get("role") == "tool":
            items.append(ToolAnswered(e["id"], e["function_name"], e["text"]))
        elif e.get("function_name"):
            items.append(ToolCalled(e.get("id", f"c{n}"), e["function_name"], e["arguments"]))
        else:
            items.append(Said(e["role"], e["text"]))
    return items


def conversation_messages(prompt: str | None, entries: list[dict[str, Any]]) -> list[Any]:
    return chat_messages(prompt, _items(entries))


async def _reply(brain: Brain, transcript: list[dict[str, Any]]) -> list[Any]:
    return [e async for e in brain.stream_reply(conversation_messages("Be brief.", transcript))]


async def test_streamed_reply_arrives_in_pieces_and_keeps_the_prompt(stub: StubLLM) -> None:
    brain = ChatCompletionsBrain(stub.base_url, model="stub-model", api_key="sk-test")
    try:
        events = await _reply(brain, TRANSCRIPT[:2])
    finally:
        await brain.aclose()
    assert len(events) > 3 and all(isinstance(e, TextDelta) for e in events)
    text = "".join(e.text for e in events)
    assert text == "Sure, Dr. Smith can see you Friday at 9.30 am. Does that work? Great!"
    sent = stub.requests[0]
    assert sent["model"] == "stub-model" and sent["stream"] is True
    assert sent["messages"][0] == {"role": "system", "content": "Be brief."}
    assert [m["role"] for m in sent["messages"][1:]] == ["assistant", "user"]


async def test_tool_call_arrives_whole_after_the_text(stub: StubLLM) -> None:
    brain = ChatCompletionsBrain(stub.base_url)
    try:
        events = await _reply(brain, TRANSCRIPT[:4])
    finally:
        await brain.aclose()
    assert events[0] == TextDelta("Goodbye.")
    assert events[-1] == ToolCall("end_call", {"reason": "caller is done"}, "call_stub")
    assert "model" not in stub.requests[0]


def test_tool_call_entries_become_a_valid_chat_history() -> None:
    messages = conversation_messages(None, [*TRANSCRIPT, {"role": "user", "text": "Wait!"}])
    call, answer = messages[-3], messages[-2]
    assert call["role"] == "assistant"
    assert call["tool_calls"][0]["function"] == {
        "name": "end_call",
        "arguments": '{"reason":"done"}',
    }
    assert answer == {
        "role": "tool",
        "tool_call_id": call["tool_calls"][0]["id"],
        "content": "no result",
    }
    assert messages[-1] == {"role": "user", "content": "Wait!"}


def test_a_tool_answer_follows_its_call_even_after_the_caller_spoke() -> None:
    transcript = [
        {"role": "assistant", "function_name": "lookup", "arguments": {"n": 1}, "id": "a"},
        {"role": "assistant", "function_name": "other", "arguments": {}, "id": "b"},
        {"role": "user", "text": "Hello?"},
        {"role": "tool", "function_name": "other", "text": '{"b":2}', "id": "b"},
        {"role": "tool", "function_name": "lookup", "text": '{"a":1}', "id": "a"},
    ]
    messages = conversation_messages(None, transcript)
    assert [m["role"] for m in messages] == ["system", "assistant", "tool", "tool", "user"]
    ids = [c["id"] for c in messages[1]["tool_calls"]]
    assert [(m["tool_call_id"], m["content"]) for m in messages[2:4]] == [
        (ids[0], '{"a":1}'),
        (ids[1], '{"b":2}'),
    ]


def test_a_line_said_while_the_tools_ran_goes_with_their_calls() -> None:
    transcript = [
        {"role": "user", "text": "Is Friday free?"},
        {"role": "assistant", "function_name": "lookup", "arguments": {}, "id": "a"},
        {"role": "assistant", "text": "One moment, let me check."},
        {"role": "user", "text": "Sure."},
        {"role": "tool", "function_name": "lookup", "text": '{"free":true}', "id": "a"},
        {"role": "assistant", "text": "Friday is free."},
    ]
    messages = conversation_messages(None, transcript)
    assert [m["role"] for m in messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "user",
        "assistant",
    ]
    assert messages[2]["content"] == "One moment, let me check."
    assert messages[2]["tool_calls"][0]["function"]["name"] == "lookup"
    assert messages[3]["content"] == '{"free":true}'
    assert [m["content"] for m in messages[4:]] == ["Sure.", "Friday is free."]


def test_the_same_tool_called_twice_gets_each_answer_by_id_not_by_order() -> None:
    transcript = [
        {"role": "assistant", "function_name": "lookup", "arguments": {"n": 1}, "id": "a"},
        {"role": "assistant", "function_name": "lookup", "arguments": {"n": 2}, "id": "b"},
        {"role": "tool", "function_name": "lookup", "text": "order 2", "id": "b"},
        {"role": "tool", "function_name": "lookup", "text": "order 1", "id": "a"},
    ]
    messages = conversation_messages(None, transcript)
    assert [(m["tool_call_id"], m["content"]) for m in messages[2:]] == [
        ("a", "order 1"),
        ("b", "order 2"),
    ]


def test_the_history_keeps_the_spec_transcript_in_step() -> None:
    history = ChatHistory()
    later = history.add(Said("assistant", "Bye.", 3.0))
    history.add(Said("user", "Hi.", 1.0))
    call_id = history.call_id()
    history.add(ToolCalled(call_id, "lookup", {"n": 1}, 2.0))
    history.add(ToolAnswered(call_id, "lookup", "found", 2.5))
    history.retext(later, "By")
    assert history.transcript == [
        {"role": "user", "text": "Hi.", "timestamp": 1.0},
        {
            "role": "assistant",
            "function_name": "lookup",
            "arguments": {"n": 1},
            "text": "",
            "timestamp": 2.0,
        },
        {"role": "tool", "function_name": "lookup", "text": "found", "timestamp": 2.5},
        {"role": "assistant", "text": "By", "timestamp": 3.0},
    ]
    history.remove(later)
    assert [e["text"] for e in history.transcript] == ["Hi.", "", "found"]
    assert history.messages(None)[-1] == {
        "role": "tool",
        "tool_call_id": call_id,
        "content": "found",
    }


def test_a_call_never_answered_takes_no_line_with_it() -> None:
    transcript = [
        {"role": "assistant", "function_name": "lookup", "arguments": {}, "text": ""},
        {"role": "assistant", "text": "Anything else?"},
    ]
    messages = conversation_messages(None, transcript)
    assert messages[1]["content"] is None and messages[2]["content"] == "no result"
    assert messages[3] == {"role": "assistant", "content": "Anything else?"}


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.parametrize("failure", ["error", "hang", "down"])
async def test_every_failure_is_a_brain_error_and_never_hangs(failure: str) -> None:
    with StubLLM(mode="error" if failure == "error" else "hang") as server:
        url = server.base_url if failure != "down" else f"http://127.0.0.1:{_closed_port()}/v1"
        brain = ChatCompletionsBrain(url, timeout_seconds=0.5)
        started = time.monotonic()
        try:
            with pytest.raises(BrainError) as streamed:
                await _reply(brain, TRANSCRIPT[:2])
            with pytest.raises(BrainError):
                await brain.complete([{"role": "user", "content": "hi"}])
        finally:
            await brain.aclose()
    assert time.monotonic() - started < 3
    expected = {"error": "HTTP 500", "hang": "within 0.5 s", "down": "could not reach"}[failure]
    assert expected in str(streamed.value)


@pytest.mark.parametrize(
    ("pieces", "sentences", "rest"),
    [
        (
            ["Hello there. How are", " you? I'm", " fine"],
            ["Hello there.", "How are you?"],
            "I'm fine",
        ),
        (["It costs 3.", "5 dollars. Ok"], ["It costs 3.5 dollars."], "Ok"),
        (['Dr. Smith said "yes!" Then', " left."], ['Dr. Smith said "yes!"'], "Then left."),
        (["One\nTwo\n"], ["One", "Two"], None),
    ],
    ids=["streamed", "decimal", "abbreviation-and-quote", "line-breaks"],
)
def test_sentences_are_cut_only_at_real_boundaries(
    pieces: list[str], sentences: list[str], rest: str | None
) -> None:
    splitter = SentenceSplitter()
    found = [s for piece in pieces for s in splitter.feed(piece)]
    assert found == sentences
    assert splitter.flush() == rest


@pytest.mark.parametrize(
    ("pieces", "found"),
    [
        # The clause goes as soon as its break has arrived.
        (
            ["Of course,", " I can", " do that. Is", " that all?"],
            [["Of course,"], [], ["I can do that."], []],
        ),
        (["Of course, I", " can", " do it. "], [["Of course,"], [], ["I can do it."]]),
        # Only a reply's first clause, and only ahead of its first sentence.
        (["Sure. Well then, I", " can."], [["Sure."], []]),
        # A whole sentence arriving at once is the speaker's to cut (first_audio_parts).
        (["Of course, I can. Then, we", " go."], [["Of course, I can."], []]),
        # One word before the break is not a clause; a number's comma is no break.
        (["Hi, this", " is it. "], [[], ["Hi, this is it."]]),
        (["It is 1,000 dollars", " now. "], [[], ["It is 1,000 dollars now."]]),
        (["It is 1,", "000 dollars, I", " think. "], [[], ["It is 1,000 dollars,"], ["I think."]]),
    ],
    ids=[
        "streamed",
        "next-word",
        "after-a-sentence",
        "same-piece",
        "one-word",
        "number",
        "split-number",
    ],
)
def test_a_replys_opening_clause_goes_ahead_of_its_sentence(
    pieces: list[str], found: list[list[str]]
) -> None:
    splitter = SentenceSplitter(opening_clause=True)
    assert [splitter.feed(piece) for piece in pieces] == found
    everything = " ".join(s for piece in found for s in piece)
    assert everything + (" " + rest if (rest := splitter.flush()) else "") == " ".join(
        "".join(pieces).split()
    )


async def test_summary_by_the_brain_else_extractive(stub: StubLLM) -> None:
    brain = ChatCompletionsBrain(stub.base_url)
    try:
        by_brain = await summarize(brain, TRANSCRIPT)
    finally:
        await brain.aclose()
    assert by_brain.text == stub.summary and by_brain.error is None
    assert (
        "Caller: Hi. I need to move my dental appointment."
        in (stub.requests[-1]["messages"][1]["content"])
    )

    local = await summarize(None, TRANSCRIPT)
    assert local.error is None and local.text
    assert "appointment" in local.text and local.text.count(": ") <= 3
    assert await summarize(None, []) == type(local)(None)


async def test_summary_falls_back_when_the_brain_fails() -> None:
    with StubLLM(mode="error") as server:
        brain = ChatCompletionsBrain(server.base_url)
        try:
            summary = await summarize(brain, TRANSCRIPT)
        finally:
            await brain.aclose()
    assert summary.text == extractive_summary(TRANSCRIPT[:4])
    assert summary.error and "HTTP 500" in summary.error


async def test_analyzers_validate_retry_once_then_record_an_error() -> None:
    analyzers = [
        {"id": str(uuid.uuid4()), "prompt": "Caller's mood?", "output_config": SENTIMENT},
        {"id": str(uuid.uuid4()), "prompt": "Mood again?", "output_config": SENTIMENT},
        {"id": str(uuid.uuid4()), "prompt": "Bad schema", "output_config": {"type": 5}},
    ]
    answers = [
        "this is not json",
        '```json\n{"sentiment": "positive"}\n```',
        '{"sentiment": "furious"}',
        '{"mood": "positive"}',
    ]
    with StubLLM(analyses=answers) as server:
        brain = ChatCompletionsBrain(server.base_url)
        try:
            results = await run_analyzers(brain, analyzers, TRANSCRIPT)
        finally:
            await brain.aclose()
        retry = server.requests[1]["messages"]
    first, second, third = results
    assert first["result"] == {"sentiment": "positive"} and "error" not in first
    assert first["analyzer_id"] == analyzers[0]["id"] and first["output_config"] == SENTIMENT
    assert "not JSON" in retry[-1]["content"] and retry[-2]["content"] == "this is not json"
    assert second["result"] is None
    assert "invalid twice" in second["error"] and "sentiment" in second["error"]
    assert third["result"] is None and "not a valid JSON schema" in third["error"]
    assert len(server.requests) == 4
    assert len({r["id"] for r in results}) == 3


async def test_analyzers_without_a_brain_are_recorded_as_errors() -> None:
    [result] = await run_analyzers(
        None, [{"id": "a", "prompt": "p", "output_config": SENTIMENT}], TRANSCRIPT
    )
    assert result["result"] is None and "CALLPLANE_LLM_BASE_URL" in result["error"]


async def test_llama_cpp_python_stream_is_read_whole() -> None:
    with StubLLM(replies=["Sure. Friday at nine works."], llama_cpp=True) as server:
        brain = ChatCompletionsBrain(server.base_url)
        try:
            events = await _reply(brain, TRANSCRIPT[:2])
        finally:
            await brain.aclose()
    assert "".join(e.text for e in events) == "Sure. Friday at nine works."


async def test_a_stream_that_ends_without_finishing_is_a_brain_error() -> None:
    """``[DONE]`` without a ``finish_reason`` is a reply the server dropped, not an empty one;
    asking again is worth it only while nothing of it has been read."""
    with StubLLM(llama_cpp=True, cut_first=1) as server:
        brain = ChatCompletionsBrain(server.base_url)
        try:
            with pytest.raises(BrainError) as cut:
                await _reply(brain, TRANSCRIPT[:2])
        finally:
            await brain.aclose()
    assert cut.value.retryable
    assert "ended before the reply was finished" in str(cut.value)
