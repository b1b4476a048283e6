"""GET /voices/{uuid}/preview: a line spoken in the voice, as a caller hears it (docs/voices.md)."""

from __future__ import annotations

import asyncio
import io
import unicodedata
import wave

from callplane.errors import Conflict, InvalidInput, Unavailable
from callplane.settings import Settings
from callplane.speech.base import SynthesisFailed
from callplane.speech.engines import (
    EngineNotInstalled,
    check_engine,
    shared_synthesizers,
    spoken_default,
)
from callplane.voices.schemas import Voice

#: docs/voices.md: a preview is a line, not a recording studio.
MAX_PREVIEW_CHARS = 500
#: The telephone rate: a preview sounds as the voice will on a call.
PREVIEW_RATE = 8000


def preview_text(voice: Voice, text: str | None) -> str:
    if text is None:
        return f"Hello, this is {voice.name}. How can I help you today?"[:MAX_PREVIEW_CHARS]
    if any(unicodedata.category(c) == "Cc" for c in text):
        raise InvalidInput("text may not contain control characters", loc=("query", "text"))
    if not any(c.isalnum() for c in text):
        raise InvalidInput("text has nothing to say", loc=("query", "text"))
    return text


async def speak_preview(voice: Voice, text: str, settings: Settings) -> bytes:
    """A mono 16-bit WAV file of ``text`` in the voice."""
    # A voice naming no engine sounds as calls without one do: the default, or espeak-ng where
    # the default is not installed (a server without Piper still previews).
    engine = voice.engine or spoken_default(settings)
    try:
        check_engine(engine, settings)
    except (ValueError, EngineNotInstalled) as exc:
        raise Conflict(f"This voice cannot be heard here: {exc}") from None
    voices = shared_synthesizers(settings)
    synthesizer = voices.get(engine)
    try:
        pcm = await asyncio.to_thread(synthesizer.synthesize, text, PREVIEW_RATE)
    except (SynthesisFailed, OSError) as exc:
        # The server's speech programs are broken (espeak-ng missing, Piper failing twice):
        # not the request's fault, and perhaps passing.
        raise Unavailable(f"Speech synthesis failed: {exc}", retry_after=5) from None
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(PREVIEW_RATE)
        wav.writeframes(pcm)
    return buffer.getvalue()
