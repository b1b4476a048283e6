"""The call's ``analyzers``, answered by the brain into ``analysis_results`` (SPEC,
docs/engine-core.md).

Each analyzer's ``output_config`` is the JSON schema of its answer. The answer is validated with
``jsonschema``; an answer that is not JSON or does not match is asked for once more (with the
validation error), then recorded as an error result: ``result`` null and ``error`` saying why.
Nothing here raises: one analyzer failing never costs the others theirs.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from callplane.brain.base import Brain, BrainError, Message
from callplane.brain.prompts import Entry, analyzer_messages

ATTEMPTS = 2
_FENCED = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


async def run_analyzers(
    brain: Brain | None, analyzers: Sequence[Mapping[str, Any]], transcript: Sequence[Entry]
) -> list[dict[str, Any]]:
    return [await run_analyzer(brain, analyzer, transcript) for analyzer in analyzers]


async def run_analyzer(
    brain: Brain | None, analyzer: Mapping[str, Any], transcript: Sequence[Entry]
) -> dict[str, Any]:
    output_config = dict(analyzer.get("output_config") or {})
    record: dict[str, Any] = {
        "id": str(uuid.uuid4()),
        "analyzer_id": analyzer.get("id"),
        "prompt": analyzer.get("prompt"),
        "output_config": output_config,
        "result": None,
    }
    try:
        Draft202012Validator.check_schema(output_config)
    except SchemaError as exc:
        return record | {"error": f"output_config is not a valid JSON schema: {exc.message}"}
    if brain is None:
        return record | {"error": "no brain is configured (CALLPLANE_LLM_BASE_URL is unset)"}
    validator = Draft202012Validator(output_config)
    messages = analyzer_messages(str(analyzer.get("prompt") or ""), output_config, transcript)
    problem = ""
    for _ in range(ATTEMPTS):
        try:
            answer = await brain.complete(messages)
        except BrainError as exc:
            return record | {"error": f"the brain did not answer: {exc}"}
        result, problem = _check(answer, validator)
        if result is not None:
            return record | {"result": result}
        messages = _retry(messages, answer, problem)
    return record | {"error": f"the brain's answer was invalid twice: {problem}"}


def _check(answer: str, validator: Draft202012Validator) -> tuple[dict[str, Any] | None, str]:
    text = answer.strip()
    fenced = _FENCED.search(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None, "the answer is not JSON"
    if not isinstance(value, dict):
        return None, "the answer is not a JSON object"
    error = next(iter(sorted(validator.iter_errors(value), key=lambda e: list(e.path))), None)
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        return None, f"at {where}: {error.message}"
    return value, ""


def _retry(messages: list[Message], answer: str, problem: str) -> list[Message]:
    return [
        *messages,
        {"role": "assistant", "content": answer},
        {
            "role": "user",
            "content": f"That answer is invalid ({problem}). Reply again with only the JSON "
            "object, valid against the schema.",
        },
    ]
