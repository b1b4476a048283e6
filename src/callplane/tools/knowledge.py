"""``knowledge_search``: the brain looks something up in one of the organization's knowledge
bases (docs/knowledge.md); and ``knowledge.auto``, the same search run on each caller turn
before the brain is asked, its best chunks handed to the brain within a token budget.

Both read the knowledge base named in the agent's config, in the call's own organization: the
brain chooses the words, never where they are looked up.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

import orjson
from pydantic import Field, StringConstraints

from callplane.errors import NotFound
from callplane.kit.schemas import UUID_TEXT
from callplane.knowledge import service
from callplane.knowledge.search import Hit
from callplane.tools import Tool, ToolContext, ToolError, ToolResult
from callplane.tools.config import ToolConfig

if TYPE_CHECKING:
    from callplane.runtime import Runtime

log = logging.getLogger("callplane.tools.knowledge")

TYPE = "knowledge_search"
DEFAULT_TOP_K = 3
#: What ``auto`` adds to the brain's context each turn, at most: tokens, counted as four
#: characters each (a fair rule for English prose under the common tokenizers).
AUTO_TOKEN_BUDGET = 400
CHARS_PER_TOKEN = 4
AUTO_TOP_K = 3
#: The most a ``knowledge_search`` result holds: under what the toolbox keeps of any result
#: (``toolbox.RESULT_CHARS``), so the brain always reads whole JSON.
RESULT_BUDGET = 1_950
#: A chunk cut shorter than this is left out rather than shown.
MIN_SHOWN = 80
#: A search that takes longer is left out of the turn rather than holding up the reply.
AUTO_TIMEOUT_SECONDS = 1.0


async def look_up(
    runtime: Runtime, organization_id: int, knowledge_base_id: str, query: str, top_k: int
) -> list[Hit]:
    try:
        base_uuid = uuid.UUID(str(knowledge_base_id))
    except ValueError:
        raise ToolError("the agent's knowledge base id is not a uuid") from None
    async with runtime.db.session(write=False) as session:
        try:
            base = await service.get_knowledge_base(session, organization_id, base_uuid)
        except NotFound:
            raise ToolError("the agent's knowledge base does not exist (any more)") from None
        return await service.search(session, organization_id, base, query, top_k)


def found(hits: list[Hit], budget: int) -> dict[str, Any]:
    """The results as the brain reads them: best first, the last one cut short (and the rest
    left out) where the budget of characters (of the JSON text) runs out."""
    results: list[dict[str, Any]] = []
    for hit in hits:
        entry = service.hit_wire(hit)
        results.append(entry)
        over = _size(results) - budget
        if over <= 0:
            continue
        # The longest cut of this entry's text that fits (escaping makes some characters
        # cost two): a binary search over its length.
        whole, low, high = entry["text"], 0, len(entry["text"])
        while low < high:
            middle = (low + high + 1) // 2
            entry["text"] = whole[:middle].rstrip() + "…"
            low, high = (middle, high) if _size(results) <= budget else (low, middle - 1)
        entry["text"] = whole[:low].rstrip() + "…"
        if low < MIN_SHOWN:
            results.pop()
        break
    return {"results": results}


def _size(results: list[dict[str, Any]]) -> int:
    return len(orjson.dumps({"results": results}).decode())


class KnowledgeSearchConfig(ToolConfig):
    type: Literal["knowledge_search"]
    knowledge_base_id: Annotated[str, StringConstraints(pattern=UUID_TEXT)]
    top_k: Annotated[int, Field(ge=1, le=20)] = DEFAULT_TOP_K


class KnowledgeSearch(Tool):
    config_model = KnowledgeSearchConfig
    default_description = (
        "Search the organization's documents (policies, prices, instructions) for what the "
        "caller asks about. Use the caller's key words as the query."
    )

    def parameters(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 1000,
                    "description": "the words to look for",
                }
            },
            "required": ["query"],
        }

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        runtime, organization_id = context.need_runtime()
        top_k = int(self.config.get("top_k") or DEFAULT_TOP_K)
        hits = await look_up(
            runtime,
            organization_id,
            str(self.config.get("knowledge_base_id")),
            str(arguments["query"]),
            top_k,
        )
        return ToolResult(found(hits, RESULT_BUDGET))


@dataclass(frozen=True)
class Consulted:
    """What ``auto`` found for one caller turn: the transcript's tool entries and the
    ``agent.knowledge`` event."""

    query: str
    #: The ``tool`` entry's text (JSON, at most the budget).
    text: str
    event: dict[str, Any]


def auto_enabled(knowledge: Mapping[str, Any] | None) -> bool:
    return bool(knowledge and knowledge.get("auto") and knowledge.get("knowledge_base_id"))


async def consult(
    runtime: Runtime, organization_id: int, knowledge: Mapping[str, Any], heard: str
) -> Consulted | None:
    """``auto``'s search for one caller turn; None when it found nothing to add or could not
    search (the turn goes on without it, and the log says why)."""
    began = time.monotonic()
    try:
        hits = await look_up(
            runtime, organization_id, str(knowledge["knowledge_base_id"]), heard, AUTO_TOP_K
        )
    except ToolError as exc:
        log.warning("knowledge.auto could not search: %s", exc)
        return None
    if not hits:
        return None
    output = found(hits, AUTO_TOKEN_BUDGET * CHARS_PER_TOKEN)
    text = orjson.dumps(output).decode()
    event = {
        "query": heard,
        "results": [
            {"document_id": r["document_id"], "title": r["title"], "score": r["score"]}
            for r in output["results"]
        ],
        "duration_ms": round((time.monotonic() - began) * 1000, 1),
    }
    return Consulted(heard, text, event)
