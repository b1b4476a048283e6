"""The call's transcript on its clock (``engine/conversation/transcript.py``): a line's tool calls
stay with the line, whatever was recorded between."""

from __future__ import annotations

import time

from callplane.brain import ToolCall
from callplane.engine.conversation.transcript import TranscriptLog


def test_a_lines_calls_follow_it_even_when_the_callers_answer_was_recorded_first() -> None:
    start = time.monotonic()
    log = TranscriptLog([], lambda: time.monotonic() - start)
    line = log.say(start + 1.0, "assistant", "Let me check Friday.")
    # The caller answered as the line ended; their words were recorded before the brain's reply
    # finished streaming its calls.
    log.say(start + 2.0, "user", "No, that's all. Thanks!")
    first = log.call(start + 2.0, ToolCall("find_slot", {"day": "Friday"}), after=line)
    second = log.call(start + 2.0, ToolCall("hold_slot", {"day": "Friday"}), after=line)
    log.answer(start + 2.1, first, '{"free": true}')
    log.answer(start + 2.1, second, '{"held": true}')

    entries = [(e["role"], e["text"] or e.get("function_name")) for e in log.entries]
    assert entries[:4] == [
        ("assistant", "Let me check Friday."),
        ("assistant", "find_slot"),
        ("assistant", "hold_slot"),
        ("user", "No, that's all. Thanks!"),
    ], entries
    stamps = [e["timestamp"] for e in log.entries]
    assert stamps == sorted(stamps) and stamps[1] == stamps[2] == stamps[0]
    # The brain reads the line, its calls and their answers, then the caller: the caller's words
    # are what it answers next.
    messages = log.messages(None)
    assert [m["role"] for m in messages[1:]] == ["assistant", "assistant", "tool", "tool", "user"]
    assert messages[-1]["content"] == "No, that's all. Thanks!"


def test_calls_without_a_line_are_placed_when_asked_for() -> None:
    start = time.monotonic()
    log = TranscriptLog([], lambda: time.monotonic() - start)
    log.say(start + 1.0, "user", "Book me in.")
    log.call(start + 3.0, ToolCall("book", {}))
    assert [e.get("function_name") for e in log.entries] == [None, "book"]
    assert log.entries[1]["timestamp"] >= log.entries[0]["timestamp"]
