"""Generation (engine/conversation/generation.py) against a real HTTP brain (tests/llm_stub.py):
a brain that is busy before its first word is asked once more; a second failure is apologised
for, as any other."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from callplane.brain import BrainError, ChatCompletionsBrain, ReplyEvent, TextDelta
from callplane.engine.agent import AgentSpec
from callplane.engine.conversation.turn_loop import AGENT_HANGUP, APOLOGY, REMOTE_HANGUP
from tests.fakes import Conversation, FakeBrain
from tests.llm_stub import StubLLM


async def _talk(stub: StubLLM) -> Conversation:
    brain = ChatCompletionsBrain(stub.base_url, timeout_seconds=5)
    call = Conversation(AgentSpec(first_message="Hi."), brain).start()
    call.says("Can you help me?")
    return call


async def test_a_busy_brain_is_asked_again_and_the_caller_never_knows() -> None:
    with StubLLM(replies=["Sure, happy to help."], busy_first=1) as stub:
        call = await _talk(stub)
        await call.until(lambda: "Sure, happy to help." in call.lines())
        call.hangs_up()
        assert await call.ended() == REMOTE_HANGUP
    assert len(stub.streamed_requests()) == 2
    assert call.lines() == ["Hi.", "Sure, happy to help."]
    assert not [kind for kind, _ in call.events if kind == "agent.brain_error"]


async def test_a_brain_busy_twice_is_apologised_for_once() -> None:
    with StubLLM(replies=["Never said."], busy_first=2) as stub:
        call = await _talk(stub)
        assert await call.ended() == AGENT_HANGUP
    assert len(stub.streamed_requests()) == 2
    assert call.lines()[-1] == APOLOGY
    [(_, error)] = [(k, d) for k, d in call.events if k == "agent.brain_error"]
    assert "HTTP 503" in error["error"]


async def test_a_failure_that_is_not_busy_is_not_asked_again() -> None:
    with StubLLM(mode="error") as stub:
        call = await _talk(stub)
        assert await call.ended() == AGENT_HANGUP
    assert len(stub.streamed_requests()) == 1


@pytest.mark.parametrize(("status", "retryable"), [(503, True), (502, True), (500, False)])
def test_which_statuses_are_worth_asking_again(status: int, retryable: bool) -> None:
    from callplane.brain.client import _check_status

    with pytest.raises(BrainError) as failed:
        _check_status(status, "busy")
    assert failed.value.retryable is retryable


async def test_a_reply_llama_cpp_python_cut_off_before_a_word_is_asked_again() -> None:
    # llama-cpp-python's server drops a streamed reply when another request waits behind it:
    # a role-only delta, then [DONE]. Read as a whole (empty) answer, the agent fell silent.
    with StubLLM(replies=["Sure, happy to help."], llama_cpp=True, cut_first=1) as stub:
        call = await _talk(stub)
        await call.until(lambda: "Sure, happy to help." in call.lines())
        call.hangs_up()
        assert await call.ended() == REMOTE_HANGUP
    assert len(stub.streamed_requests()) == 2
    assert not [kind for kind, _ in call.events if kind == "agent.brain_error"]


async def test_a_reply_cut_off_twice_is_apologised_for_and_recorded() -> None:
    with StubLLM(replies=["Never said."], llama_cpp=True, cut_first=2) as stub:
        call = await _talk(stub)
        assert await call.ended() == AGENT_HANGUP
    assert call.lines()[-1] == APOLOGY
    [error] = [data for kind, data in call.events if kind == "agent.brain_error"]
    assert "ended before the reply was finished" in error["error"]


class _BrokenBrain(FakeBrain):
    """A brain client that fails with something other than a ``BrainError`` (a bug, a reply
    shape nobody foresaw)."""

    async def stream_reply(self, *args: Any, **kwargs: Any) -> AsyncIterator[ReplyEvent]:
        yield TextDelta("")
        raise ValueError("an index that is not a number")


async def test_a_brain_failing_unexpectedly_is_apologised_for_and_recorded() -> None:
    call = Conversation(AgentSpec(first_message="Hi."), _BrokenBrain()).start()
    call.says("Can you help me?")
    assert await call.ended() == AGENT_HANGUP
    assert call.lines()[-1] == APOLOGY
    [error] = [data for kind, data in call.events if kind == "agent.brain_error"]
    assert "ValueError" in error["error"]


async def test_a_reply_with_nothing_in_it_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    # The model may finish with no words and no tool call; the caller then hears nothing, so
    # the operator must at least be able to find it in the logs.
    call = Conversation(AgentSpec(first_message="Hi."), FakeBrain(replies=[[TextDelta(" ")]]))
    call.start()
    call.says("Can you help me?")
    await call.until(lambda: "without a word or a tool call" in caplog.text)
    call.hangs_up()
    assert await call.ended() == REMOTE_HANGUP
    assert call.lines() == ["Hi."]
    assert not [kind for kind, _ in call.events if kind == "agent.brain_error"]
