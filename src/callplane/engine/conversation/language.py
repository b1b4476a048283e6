"""The call's language: which model hears the caller, which preset the agent speaks with, and
when an ``auto`` call changes language (docs/languages.md).

A call in English (the call's ``language``, else its agent's) is heard by tiny.en and looks as it
always did. Any other language is heard by the multilingual model in that language. ``auto``
starts in English and lets the model identify each caller turn; the call switches to a turn's
language only when the model is sure of it and the turn has a few words, since a lone "sí" or
"okay" is said in every language. The brain's ``switch_language`` tool switches at once.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from callplane.engine.agent import DEFAULT_LANGUAGE, AgentSpec
from callplane.settings import Settings
from callplane.speech.base import Segment, Transcriber
from callplane.speech.models import AUTO, is_english, known_language, language_name, primary
from callplane.speech.transcriber import shared_transcriber

#: A turn's language is believed at this probability or above...
SWITCH_PROBABILITY = 0.7
#: ...when it has at least this many words.
SWITCH_WORDS = 3
#: Recognitions waiting for their turn to be heard (a guess whose turn went on is never asked).
_REMEMBERED = 16


class CallLanguage:
    """One call's language, read by the listener's recognitions (worker threads) and changed
    by the turn loop (the event loop)."""

    def __init__(self, settings: Settings, spec: AgentSpec, *, call_overrides: set[str]) -> None:
        self.settings = settings
        #: The agent as resolved, before any preset: each preset applies to it afresh.
        self.base = spec
        #: The call's own fields (``first_message``, ``voice_id``) no preset overrides.
        self._overrides = call_overrides
        self.auto = spec.language.casefold() == AUTO
        self.current = DEFAULT_LANGUAGE if self.auto else spec.language
        self._heard: OrderedDict[str, tuple[str | None, float | None]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def multilingual(self) -> bool:
        """Whether this call speaks of languages at all (an English-only call looks as before:
        no ``language`` on its transcript entries, nothing added to the prompt)."""
        return self.auto or not is_english(self.current) or bool(self.base.languages)

    def transcriber(self) -> Transcriber:
        return _CallTranscriber(self)

    def entry_language(self) -> str | None:
        return primary(self.current) if self.multilingual else None

    def spec(self) -> AgentSpec:
        """The agent in the current language: its preset over the agent, and the brain told."""
        return in_language(self.base, self.current, self._overrides, tell=self.multilingual)

    def remember(self, text: str, segments: Sequence[Segment]) -> None:
        heard = next((s for s in segments if s.language), None)
        with self._lock:
            self._heard[text] = (
                (heard.language, heard.language_probability) if heard else (None, None)
            )
            while len(self._heard) > _REMEMBERED:
                self._heard.popitem(last=False)

    def heard(self, text: str) -> str | None:
        """The language to switch to after the caller said ``text`` (None: stay)."""
        with self._lock:
            language, probability = self._heard.pop(text, (None, None))
        if not self.auto or language is None or language == primary(self.current):
            return None
        if probability is None or probability < SWITCH_PROBABILITY:
            return None
        if len(text.split()) < SWITCH_WORDS:
            return None
        return language

    def switch(self, language: str) -> bool:
        """Speak ``language`` from now on; False when it is the current one already."""
        if primary(language) == primary(self.current):
            return False
        self.current = language
        return True


class _CallTranscriber(Transcriber):
    """The live transcriber of one call: tiny.en while the call is in English, the multilingual
    model otherwise (identifying each turn's language on an ``auto`` call)."""

    def __init__(self, language: CallLanguage) -> None:
        self._language = language

    def transcribe(
        self,
        pcm: bytes,
        sample_rate: int,
        *,
        hints: Sequence[str] = (),
        abandoned: threading.Event | None = None,
    ) -> list[Segment]:
        call = self._language
        asked = AUTO if call.auto else call.current
        transcriber = shared_transcriber(call.settings, "live", asked)
        # A language Whisper does not know (a call's free-form tag) is identified instead.
        fixed = primary(asked) if known_language(asked) else None
        segments = transcriber.transcribe(
            pcm, sample_rate, hints=hints, abandoned=abandoned, language=fixed
        )
        # As the listener joins them: the turn loop finds the turn's language by its text.
        text = " ".join(s.text.strip() for s in segments if s.text.strip())
        if text:
            call.remember(text, segments)
        return segments


def preset_for(languages: Mapping[str, Mapping[str, Any]], tag: str) -> Mapping[str, Any]:
    """The preset for ``tag``: its own (``es-MX``), else its language's (``es``), else the first
    of another region of it (``es-ES`` for ``es``)."""
    if tag in languages:
        return languages[tag]
    code = primary(tag)
    for key in sorted(languages, key=lambda k: (k != code, k)):
        if primary(key) == code:
            return languages[key]
    return {}


def in_language(spec: AgentSpec, tag: str, overrides: set[str], *, tell: bool = True) -> AgentSpec:
    preset = preset_for(spec.languages, tag)
    prompt = "\n\n".join(p for p in (spec.prompt, preset.get("prompt")) if p)
    if tell and known_language(tag):
        name = language_name(tag)
        prompt = "\n\n".join(
            p for p in (prompt, f"The caller speaks {name} ({tag}). Reply in {name}.") if p
        )
    voice = spec.voice_id
    if preset.get("voice_id") and "voice_id" not in overrides:
        voice = uuid.UUID(preset["voice_id"])
    first_message = spec.first_message
    if preset.get("first_message") and "first_message" not in overrides:
        first_message = preset["first_message"]
    return replace(
        spec,
        language=tag,
        prompt=prompt or None,
        voice_id=voice,
        first_message=first_message,
        end_call_phrases=tuple(preset.get("end_call_phrases") or spec.end_call_phrases),
        # Added to the agent's, not instead: "stop calling" still opts out of a Spanish call.
        opt_out_phrases=tuple(
            dict.fromkeys((*spec.opt_out_phrases, *preset.get("opt_out_phrases", ())))
        ),
    )
