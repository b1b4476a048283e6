"""The TRANSCRIPTION worker task: recording legs are processed by every worker
(docs/api-contract.md#external-calls).

Each worker takes one leg at a time (recognition uses the machine's cores), woken at once when
a leg is uploaded and polling at CALLPLANE_WORKER_POLL_SECONDS otherwise. The model is loaded on
the first leg, not when the worker starts, so a worker that never sees an upload never pays
for it. A worker installed without the speech extra does not take legs at all (it says so
once), leaving them to workers that can transcribe them; a leg that none of them takes within
``UNHEARD_GRACE_SECONDS`` (none can: the model is not installed anywhere, as on a fresh clone
without it) is put in ``error`` with the sentence that says how to install it, rather than
staying pending for ever.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from collections.abc import Sequence
from pathlib import Path

from callplane.external_calls.processing import fail_next_leg, process_next_leg
from callplane.jobs import TaskContext, WorkerTask
from callplane.kit import wakeups
from callplane.settings import Settings
from callplane.speech.base import Segment, Transcriber
from callplane.speech.models import AUTO, model_installed
from callplane.speech.transcriber import SpeechUnavailable, bundled_model_dir, shared_transcriber

log = logging.getLogger("callplane.external_calls")

#: How long a worker that cannot transcribe leaves a leg to the workers that can.
UNHEARD_GRACE_SECONDS = 3.0


class LazyTranscriber(Transcriber):
    """The process's shared transcriber, built (in the worker thread) on first use."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def transcribe(
        self,
        pcm: bytes,
        sample_rate: int,
        *,
        hints: Sequence[str] = (),
        abandoned: threading.Event | None = None,
    ) -> list[Segment]:
        # A recording says nothing of its language: the multilingual model identifies it
        # (where the install has one: docs/languages.md), then the model for that language
        # transcribes it, as a call in it would be (English stays on the faster tiny.en).
        language = "en"
        if model_installed(self.settings, AUTO):
            identifier = shared_transcriber(self.settings, "batch", AUTO)
            language, _ = identifier.detect_language(pcm, sample_rate)
        transcriber = shared_transcriber(self.settings, "batch", language)
        return transcriber.transcribe(
            pcm, sample_rate, hints=hints, abandoned=abandoned, language=language
        )


def speech_available(settings: Settings) -> str | None:
    """None when this process can transcribe, else why not (without loading the model)."""
    if importlib.util.find_spec("faster_whisper") is None:
        return "the speech extra is not installed (pip install 'callplane[speech]')"
    if settings.whisper_model_dir is None:
        try:
            bundled_model_dir()
        except SpeechUnavailable as exc:
            return str(exc)
    elif not (Path(settings.whisper_model_dir) / "model.bin").is_file():
        return (
            f"CALLPLANE_WHISPER_MODEL_DIR ({settings.whisper_model_dir}) holds no model.bin: "
            "point it at a CTranslate2 Whisper model, or unset it to use the bundled one "
            "(`make install` installs it)"
        )
    return None


async def _run(engine: TaskContext) -> None:
    missing = speech_available(engine.settings)
    if missing is not None:
        log.warning("this worker does not transcribe recordings: %s", missing)
        reason = f"Speech recognition is not installed: {missing}"

        async def fail_unheard_leg(engine: TaskContext) -> bool:
            return await fail_next_leg(engine.runtime, reason, UNHEARD_GRACE_SECONDS)

        await engine.repeat(fail_unheard_leg, interval=1.0, wake_on=wakeups.RECORDINGS)
        return
    transcriber = LazyTranscriber(engine.settings)

    async def transcribe_next_leg(engine: TaskContext) -> bool:
        return await process_next_leg(engine.runtime, transcriber)

    await engine.repeat(
        transcribe_next_leg,
        interval=engine.settings.worker_poll_seconds,
        wake_on=wakeups.RECORDINGS,
    )


TRANSCRIPTION = WorkerTask("transcription", _run)
