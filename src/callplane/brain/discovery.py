"""Finding a brain already running on this machine, and asking it once whether it calls tools.

A newcomer with Ollama (11434), llama.cpp's server (8080) or LM Studio (1234) running should hear
the agent converse without configuring anything: ``serve`` asks each port's OpenAI-compatible
``GET /v1/models`` (a short timeout, loopback only) and uses the first that lists a model.
``doctor`` then sends it one real chat request offering a tool, because a model that cannot call
tools still talks but never hangs up or looks anything up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

#: Long enough for a local server on a busy laptop, short enough not to delay ``serve``.
PROBE_SECONDS = 0.5
#: A model's first answer may load it from disk (Ollama does, for several seconds).
TOOL_CHECK_SECONDS = 60.0

_LOOKUP = {
    "type": "function",
    "function": {
        "name": "lookup_order",
        "description": "Look up an order's delivery status by its number.",
        "parameters": {
            "type": "object",
            "properties": {"order": {"type": "string", "description": "The order number"}},
            "required": ["order"],
        },
    },
}


@dataclass(frozen=True)
class FoundBrain:
    base_url: str
    model: str


def discover(ports: list[int], host: str = "127.0.0.1") -> FoundBrain | None:
    """The first OpenAI-compatible server on ``ports`` of this machine listing a model."""
    with httpx.Client(timeout=PROBE_SECONDS, trust_env=False) as client:
        for port in ports:
            base_url = f"http://{host}:{port}/v1"
            try:
                response = client.get(f"{base_url}/models")
                listed = response.json().get("data") if response.status_code == 200 else None
            except (httpx.HTTPError, ValueError, AttributeError):
                continue
            ids = [m.get("id") for m in listed or [] if isinstance(m, dict)]
            models = [m for m in ids if isinstance(m, str) and m]
            if models:
                return FoundBrain(base_url, _chat_model(models))
    return None


def _chat_model(models: list[str]) -> str:
    """An embedding model cannot converse: prefer any other one the server lists."""
    talkers = [m for m in models if "embed" not in m.lower()]
    return (talkers or models)[0]


async def calls_tools(base_url: str, model: str | None, api_key: str | None) -> tuple[bool, str]:
    """(whether the model called the tool it was offered, what happened) after one request."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    body: dict[str, Any] = {
        "model": model or "default",
        "messages": [
            {"role": "system", "content": "You are a shop's phone agent. Use your tools."},
            {"role": "user", "content": "Where is my order 42?"},
        ],
        "tools": [_LOOKUP],
        "max_tokens": 200,
        "stream": False,
    }
    url = base_url.rstrip("/") + "/chat/completions"
    try:
        async with httpx.AsyncClient(timeout=TOOL_CHECK_SECONDS, trust_env=False) as client:
            response = await client.post(url, json=body, headers=headers)
    except httpx.HTTPError as exc:
        return False, f"no answer to a chat request ({type(exc).__name__})"
    if response.status_code != 200:
        return False, f"a chat request answered HTTP {response.status_code}: {response.text[:200]}"
    try:
        message = response.json()["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError):
        return False, "a chat request answered something other than a chat completion"
    called = [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]
    if any(c.get("function", {}).get("name") == "lookup_order" for c in called):
        return True, "tool calling works"
    return False, (
        "it answered but called no tool: agents will talk but cannot hang up or use tools; "
        "pick a model that calls tools (e.g. qwen2.5 or llama3.2 on Ollama)"
    )
