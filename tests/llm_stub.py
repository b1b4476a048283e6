"""A tiny OpenAI-compatible chat-completions server: the one stand-in the tests allow (an LLM).

A real HTTP server on 127.0.0.1 (ephemeral port, its own thread, so a hanging reply never blocks
the test's event loop). The callplane client talks real HTTP to it.

- Streamed requests (conversation turns) get ``replies[n - 1]`` where ``n`` counts the user
  messages so far (``opening`` when there is none), as SSE chunks a few words long. A ``Reply``
  may carry a tool call.
- A request whose last message is a tool's answer gets the next of ``after_tool`` (the last one
  again once they run out): what the agent says once its tools have answered.
- Whole requests get ``summary`` (the summary instructions) or the next of ``analyses`` (the
  analyzer instructions; ``default_analysis`` once they run out).
- Whole requests of an agent test's judge get the next of ``verdicts`` (a pass once they run
  out); those of its caller persona the next of ``caller_lines`` ("[hang up]" once they run out).
- A whole request offering tools gets a call of the first one (``tool_calling=False``: text).
- ``GET /v1/models`` lists ``model`` (how ``callplane serve`` finds a server on this machine).
- ``mode="error"`` answers 500 to everything; ``mode="hang"`` answers nothing until stopped.
- ``busy_first=n``: the first ``n`` streamed requests are answered 503 (a server's blip).
- ``llama_cpp=True``: streamed chunks shaped as llama-cpp-python's server sends them (ids, a
  role-only first delta, ``logprobs: null``); ``cut_first=n``: the first ``n`` streamed
  requests end as that server ends a reply it drops for a request waiting behind it (its
  ``interrupt_requests``, on by default): the role-only delta, then ``[DONE]``, with no text
  and no ``finish_reason`` (bytes captured from llama-cpp-python 0.3.36).
- A body whose ``Content-Type`` is not ``application/json`` is answered 422, as servers built on
  FastAPI answer it.

Every request body is kept in ``requests`` for assertions.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from callplane.agent_tests.judge import CALLER_INSTRUCTIONS, HANG_UP, JUDGE_INSTRUCTIONS
from callplane.brain.prompts import ANALYZER_INSTRUCTIONS, SUMMARY_INSTRUCTIONS

Mode = Literal["ok", "error", "hang"]


@dataclass(frozen=True)
class Reply:
    text: str = ""
    tool: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict)
    #: More tool calls in the same reply, ``(name, arguments)``: streamed interleaved with the
    #: first, by index, as OpenAI streams parallel tool calls.
    more_tools: tuple[tuple[str, dict[str, Any]], ...] = ()


class StubLLM:
    def __init__(
        self,
        *,
        replies: Sequence[Reply | str] = ("Sure.",),
        opening: Reply | str = "Hello, how can I help you today?",
        summary: str = "The caller asked a question and the agent answered it.",
        analyses: Sequence[str] = (),
        default_analysis: str = "{}",
        mode: Mode = "ok",
        first_token_seconds: float = 0.0,
        words_per_chunk: int = 3,
        chunk_seconds: float = 0.0,
        after_tool: Sequence[Reply | str] = ("Done.",),
        busy_first: int = 0,
        llama_cpp: bool = False,
        cut_first: int = 0,
        verdicts: Sequence[str] = (),
        caller_lines: Sequence[str] = (),
        model: str = "stub-model",
        tool_calling: bool = True,
    ) -> None:
        #: What ``GET /v1/models`` lists, and whether a whole request with tools calls one.
        self.model = model
        self.tool_calling = tool_calling
        self.verdicts = list(verdicts)
        self.caller_lines = list(caller_lines)
        self.replies = [r if isinstance(r, Reply) else Reply(r) for r in replies]
        self.after_tool = [r if isinstance(r, Reply) else Reply(r) for r in after_tool]
        self.opening = opening
        self.summary = summary
        self.analyses = list(analyses)
        self.default_analysis = default_analysis
        self.mode: Mode = mode
        self.first_token_seconds = first_token_seconds
        self.words_per_chunk = words_per_chunk
        #: Time between streamed chunks: a model's pace (0: all at once).
        self.chunk_seconds = chunk_seconds
        self.busy_first = busy_first
        self.llama_cpp = llama_cpp
        self.cut_first = cut_first
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._released = threading.Event()
        self._server = _Server(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._server.block_on_close = False
        # A short poll interval: ``shutdown`` waits for the loop to notice, once per test.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> StubLLM:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._released.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def __enter__(self) -> StubLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _busy(self) -> bool:
        with self._lock:
            busy = self.busy_first > 0
            self.busy_first -= busy
            return busy

    def _cut(self) -> bool:
        with self._lock:
            cut = self.cut_first > 0
            self.cut_first -= cut
            return cut

    def streamed_requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r for r in self.requests if r.get("stream")]

    # What to answer.

    def _reply_for(self, messages: list[dict[str, Any]]) -> Reply:
        if messages and messages[-1].get("role") == "tool":
            with self._lock:
                return self.after_tool.pop(0) if len(self.after_tool) > 1 else self.after_tool[0]
        users = sum(1 for m in messages if m.get("role") == "user")
        if users == 0:
            return self.opening if isinstance(self.opening, Reply) else Reply(self.opening)
        return self.replies[min(users, len(self.replies)) - 1]

    def _answer_for(self, messages: list[dict[str, Any]]) -> str:
        system = str(messages[0].get("content", "")) if messages else ""
        if system == SUMMARY_INSTRUCTIONS:
            return self.summary
        if system == JUDGE_INSTRUCTIONS:
            with self._lock:
                return self.verdicts.pop(0) if self.verdicts else '{"passed": true, "reason": "ok"}'
        if system.startswith(CALLER_INSTRUCTIONS):
            with self._lock:
                return self.caller_lines.pop(0) if self.caller_lines else HANG_UP
        if system.startswith(ANALYZER_INSTRUCTIONS.split("{schema}")[0]):
            with self._lock:
                return self.analyses.pop(0) if self.analyses else self.default_analysis
        return self.opening.text if isinstance(self.opening, Reply) else self.opening

    def _chunks(self, reply: Reply, cut: bool = False) -> Iterator[dict[str, Any]]:
        if not self.llama_cpp and not cut:
            yield from self._deltas(reply)
            return
        # llama-cpp-python's envelope: an id, a role-only first delta, null logprobs.
        envelope = {
            "id": "chatcmpl-stub",
            "model": self.model,
            "created": int(time.time()),
            "object": "chat.completion.chunk",
        }
        first = {"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}
        deltas = iter(()) if cut else self._deltas(reply)
        for chunk in ({"choices": [first]}, *deltas):
            choices = [{"logprobs": None, "finish_reason": None} | c for c in chunk["choices"]]
            yield envelope | {"choices": choices}

    def _deltas(self, reply: Reply) -> Iterator[dict[str, Any]]:
        words = reply.text.split(" ") if reply.text else []
        step = self.words_per_chunk
        for i in range(0, len(words), step):
            piece = " ".join(words[i : i + step]) + (" " if i + step < len(words) else "")
            yield {"choices": [{"index": 0, "delta": {"content": piece}}]}
        if reply.tool:
            calls = [(reply.tool, reply.arguments), *reply.more_tools]
            texts = [json.dumps(arguments) for _, arguments in calls]
            for index, (name, _) in enumerate(calls):
                call = {"index": index, "id": f"call_stub{index or ''}", "type": "function"}
                yield _tool_delta(call | {"function": {"name": name, "arguments": ""}})
            for index, arguments in enumerate(texts):
                half = len(arguments) // 2
                yield _tool_delta({"index": index, "function": {"arguments": arguments[:half]}})
            for index, arguments in enumerate(texts):
                half = len(arguments) // 2
                yield _tool_delta({"index": index, "function": {"arguments": arguments[half:]}})
        finish = "tool_calls" if reply.tool else "stop"
        yield {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}


class _Server(ThreadingHTTPServer):
    # socketserver's default backlog is 5: more simultaneous conversations than that would
    # wait a whole second for a SYN retry, which is the network's doing, not the agent's.
    request_queue_size = 128


def _tool_delta(part: dict[str, Any]) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"tool_calls": [part]}}]}


def _handler_for(stub: StubLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

        def do_POST(self) -> None:  # noqa: N802
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            # As servers built on FastAPI (llama-cpp-python's, vLLM) do: a body not declared as
            # JSON is not read as JSON, whatever it holds.
            if self.headers.get("Content-Type", "").split(";")[0].strip() != "application/json":
                self._send_json(422, {"detail": "Input should be a valid dictionary"})
                return
            body = json.loads(raw)
            with stub._lock:
                stub.requests.append(body)
            if stub.mode == "hang":
                stub._released.wait(60)
                return
            if stub.mode == "error" or not self.path.endswith("/chat/completions"):
                self._send_json(500, {"error": {"message": "the stub was told to fail"}})
                return
            messages = body.get("messages") or []
            if body.get("stream") and stub._busy():
                self._send_json(503, {"error": {"message": "the stub is busy"}})
                return
            if body.get("stream"):
                self._stream(stub._reply_for(messages), cut=stub._cut())
            elif body.get("tools") and stub.tool_calling:
                # A whole request offering tools (``callplane doctor``'s check): the first one
                # is called, as a model that can call tools would.
                function = body["tools"][0]["function"]
                call = {
                    "id": "call_stub",
                    "type": "function",
                    "function": {"name": function["name"], "arguments": '{"order": "42"}'},
                }
                message = {"role": "assistant", "content": None, "tool_calls": [call]}
                self._send_json(200, {"choices": [{"index": 0, "message": message}]})
            else:
                answer = stub._answer_for(messages)
                message = {"role": "assistant", "content": answer}
                self._send_json(200, {"choices": [{"index": 0, "message": message}]})

        def do_GET(self) -> None:  # noqa: N802
            # What a server on this machine answers when callplane looks for one.
            if self.path.rstrip("/").endswith("/v1/models"):
                models = [{"id": stub.model, "object": "model"}]
                self._send_json(200, {"object": "list", "data": models})
            else:
                self._send_json(404, {"error": {"message": "not found"}})

        def _send_json(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, reply: Reply, cut: bool = False) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            if stub.first_token_seconds:
                time.sleep(stub.first_token_seconds)
            for n, chunk in enumerate(stub._chunks(reply, cut)):
                if n and stub.chunk_seconds:
                    time.sleep(stub.chunk_seconds)
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")

    return Handler
