"""``switch_language``: the brain changes the call's language at once (the caller asked to be
spoken to in another language). The agent's preset for it applies, its voice speaks the next
line and the recogniser listens for it (docs/languages.md)."""

from __future__ import annotations

from typing import Any, Literal

from callplane.speech.models import known_language
from callplane.tools import Tool, ToolContext, ToolError, ToolResult
from callplane.tools.config import ToolConfig


class SwitchLanguageConfig(ToolConfig):
    type: Literal["switch_language"]


class SwitchLanguage(Tool):
    config_model = SwitchLanguageConfig
    default_description = (
        "Speak another language from now on, when the caller asks for it or clearly speaks it."
    )

    def parameters(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "language": {
                    "type": "string",
                    "description": "the language's ISO 639-1 code, such as es, fr or en",
                }
            },
            "required": ["language"],
        }

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        language = str(arguments.get("language", "")).strip()
        if not known_language(language):
            raise ToolError(f"unknown language: {language}")
        if context.switch_language is None:
            raise ToolError("there is no call whose language could change")
        changed = await context.switch_language(language)
        return ToolResult({"language": language, "changed": changed})
