"""Processing one recording leg: decode, recognise, redact, summarise
(docs/api-contract.md#external-calls).

``process_next_leg(runtime, transcriber)`` claims the oldest waiting leg (``legs.py``), works on
it with its lease renewed in the background, and settles it ``transcribed`` or ``error``. The
CPU-heavy part (decoding and recognition) runs in a thread, off the event loop.

What becomes of an upload:

- not audio of its declared type, empty, truncated to nothing, longer than
  CALLPLANE_MAX_RECORDING_SECONDS (measured while decoding), silent, or holding no recognisable
  speech: ``error``, with the reason in the leg's ``error``;
- otherwise ``transcribed``: one transcript entry per recognised segment, each with its
  ``channel`` (``left``/``right`` for a stereo file, one per side; ``mono`` otherwise),
  ``speaker`` (by channel: ``speaker_1``, ``speaker_2``), times in seconds from the start of the
  leg, and the recogniser's ``confidence``; a ``summary`` written by the brain when
  CALLPLANE_LLM_BASE_URL is set, else extractive.
- uploaded with ``?redact=true``: spoken runs of 6+ digits are ``[redacted]`` in the transcript
  and a tone in the audio, which replaces the upload (as 16 kHz WAV) before the leg gets a URL.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import tempfile
import wave
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

from callplane.external_calls import legs, redaction, service
from callplane.external_calls.legs import Claim
from callplane.external_calls.wire import wire_call, wire_leg
from callplane.media.storage import StorageError
from callplane.models.base import utcnow
from callplane.recordings.service import sign_recordings
from callplane.runtime import Runtime
from callplane.speech.base import Segment, Transcriber
from callplane.speech.decoding import (
    SAMPLE_RATE,
    TooLong,
    UndecodableAudio,
    decode,
    is_silent,
    media_format,
)
from callplane.webhooks.events import emit

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

log = logging.getLogger("callplane.external_calls")

T = TypeVar("T")

_ROLE_LABEL = re.compile(r"(^|\s)(?:Agent|Caller): ")
_CHANNEL_NAMES = {1: ("mono",), 2: ("left", "right")}


class LegFailed(Exception):
    """The upload cannot be transcribed; the message is the leg's ``error``."""

    def __init__(self, reason: str, duration: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.duration = duration


@dataclass
class Outcome:
    transcript: list[dict[str, Any]]
    duration: float
    #: The redacted audio to store in place of the upload (a WAV file), if any.
    redacted_audio: Path | None = None
    texts: list[str] = field(default_factory=list)


async def transact(runtime: Runtime, work: Callable[[AsyncSession], Awaitable[T]]) -> T:
    """One committed write transaction around ``work``."""
    async with runtime.db.session(write=True) as session:
        result = await work(session)
        await session.commit()
        return result


async def process_next_leg(runtime: Runtime, transcriber: Transcriber) -> bool:
    """Claim and process one leg; False when no leg is waiting."""
    async with runtime.db.session(write=False) as session:
        if not await legs.leg_waiting(session):
            return False
    lease = runtime.settings.recording_lease_seconds
    claim = await transact(runtime, lambda s: legs.claim_leg(s, lease))
    if claim is None:
        return False
    exhausted = f"processing was interrupted {claim.attempts - 1} times; giving up"
    if claim.attempts > legs.MAX_ATTEMPTS:
        log.warning("recording leg given up", extra={"recording_id": str(claim.recording_id)})
        await settle(runtime, claim, lambda s: legs.fail_leg(s, claim, exhausted), exhausted)
        return True
    await process_claim(runtime, transcriber, claim)
    return True


async def fail_next_leg(runtime: Runtime, reason: str, grace_seconds: float) -> bool:
    """Put the oldest leg that no worker took within ``grace_seconds`` in ``error`` with
    ``reason`` (a worker that cannot transcribe); False when no leg is waiting that long."""
    async with runtime.db.session(write=False) as session:
        if not await legs.leg_waiting(session):
            return False
    before = utcnow() - timedelta(seconds=grace_seconds)
    lease = runtime.settings.recording_lease_seconds
    claim = await transact(runtime, lambda s: legs.claim_leg(s, lease, uploaded_before=before))
    if claim is None:
        return False
    await settle(runtime, claim, lambda s: legs.fail_leg(s, claim, reason), reason)
    return True


async def process_claim(runtime: Runtime, transcriber: Transcriber, claim: Claim) -> None:
    settings = runtime.settings
    lost = asyncio.Event()
    renewer = asyncio.create_task(_keep_lease(runtime, claim, lost))
    workdir = Path(tempfile.mkdtemp(prefix="callplane-leg-"))
    try:
        try:
            outcome = await _work(runtime, transcriber, claim, workdir)
        except LegFailed as failed:
            reason, duration = failed.reason, failed.duration
            log.info(
                "recording leg failed",
                extra={"recording_id": str(claim.recording_id), "reason": reason},
            )
            await settle(
                runtime,
                claim,
                lambda s: legs.fail_leg(s, claim, reason, duration_seconds=duration),
                reason,
            )
            return
        except (StorageError, OSError):
            log.warning("recording storage unavailable; leg released", exc_info=True)
            await _release(runtime, claim)
            return
        except Exception:
            log.exception("recording leg processing crashed; leg released")
            await _release(runtime, claim)
            return
        if lost.is_set():
            return
        summary = await _summarize(settings, outcome.transcript)
        content_type = size = None
        if outcome.redacted_audio is not None and claim.storage_key is not None:
            # The redacted audio replaces the upload under the same key: the unredacted audio
            # is gone before the leg can have a URL.
            await runtime.storage.put_file(claim.storage_key, outcome.redacted_audio, "audio/wav")
            content_type, size = "audio/wav", outcome.redacted_audio.stat().st_size
        finished = await settle(
            runtime,
            claim,
            lambda s: legs.finish_leg(
                s,
                claim,
                transcript=outcome.transcript,
                summary=summary,
                duration_seconds=round(outcome.duration, 3),
                content_type=content_type,
                size_bytes=size,
            ),
        )
        if not finished:
            log.warning(
                "recording leg lease lost before finishing",
                extra={"recording_id": str(claim.recording_id)},
            )
    finally:
        renewer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await renewer
        await asyncio.to_thread(_remove_tree, workdir)


async def _release(runtime: Runtime, claim: Claim) -> None:
    if claim.attempts >= legs.MAX_ATTEMPTS:
        reason = f"processing failed {claim.attempts} times; giving up"
        await settle(runtime, claim, lambda s: legs.fail_leg(s, claim, reason), reason)
    else:
        await transact(runtime, lambda s: legs.release_leg(s, claim))


async def settle(
    runtime: Runtime,
    claim: Claim,
    change: Callable[[AsyncSession], Awaitable[bool]],
    error: str | None = None,
) -> bool:
    """Apply a final change to the leg and, in the same transaction, write the webhook event
    (``external_call.transcribed``, or ``external_call.error`` with the reason), so the event
    exists exactly when the change is committed. False when the claim was no longer held."""
    # The URL signing key is read in a transaction of its own: fetch it before ours is open.
    await runtime.signer.secret(runtime.db)

    async def work(session: AsyncSession) -> bool:
        if not await change(session):
            return False
        event = "external_call.error" if error is not None else "external_call.transcribed"

        async def data() -> dict[str, Any]:
            call, visible = await service.get_external_call(
                session, claim.organization_id, claim.external_call_id
            )
            urls = await sign_recordings(runtime, visible)
            leg = next((v for v in visible if v.id == claim.recording_id), None)
            payload: dict[str, Any] = {
                "external_call": wire_call(call, visible, urls),
                "recording": wire_leg(leg) if leg is not None else None,
            }
            if error is not None:
                payload["error"] = error
            return payload

        await emit(session, claim.organization_id, event, data)
        return True

    return await transact(runtime, work)


async def _keep_lease(runtime: Runtime, claim: Claim, lost: asyncio.Event) -> None:
    lease = runtime.settings.recording_lease_seconds
    while True:
        await asyncio.sleep(lease / 3)
        try:
            held = await transact(runtime, lambda s: legs.renew_lease(s, claim, lease))
        except Exception:
            log.warning("recording lease renewal failed", exc_info=True)
            continue
        if not held:
            lost.set()
            return


async def _work(runtime: Runtime, transcriber: Transcriber, claim: Claim, workdir: Path) -> Outcome:
    if claim.storage_key is None:
        raise LegFailed("the leg has no audio")
    declared = media_format(claim.content_type)
    if declared is None:
        raise LegFailed(f"unsupported content type {claim.content_type}")
    source = workdir / "upload"
    await runtime.storage.download(claim.storage_key, source)
    max_seconds = runtime.settings.max_recording_seconds
    return await asyncio.to_thread(
        _recognise, transcriber, source, declared, max_seconds, claim.redact, workdir
    )


def _recognise(
    transcriber: Transcriber,
    source: Path,
    declared: Any,
    max_seconds: float,
    redact: bool,
    workdir: Path,
) -> Outcome:
    try:
        audio = decode(source, declared, max_seconds)
    except TooLong as exc:
        raise LegFailed(str(exc)) from None
    except UndecodableAudio as exc:
        raise LegFailed(str(exc)) from None
    duration = audio.duration
    if duration < 0.1:
        raise LegFailed("the recording holds no audio", duration)
    if all(is_silent(channel) for channel in audio.channels):
        raise LegFailed("the recording is silent", duration)

    names = _CHANNEL_NAMES.get(len(audio.channels), ("mono",))
    per_channel: list[tuple[str, str, list[Segment]]] = []
    spans: list[tuple[float, float]] = []
    for index, (samples, channel) in enumerate(zip(audio.channels, names, strict=False)):
        segments = [] if is_silent(samples) else transcriber.transcribe(_pcm(samples), SAMPLE_RATE)
        if redact:
            redacted = redaction.redact_segments(segments)
            segments = redacted.segments
            words = [w for segment in segments for w in segment.words]
            spans += redacted.spans + redaction.unaccounted_speech(samples, words, SAMPLE_RATE)
        per_channel.append((channel, f"speaker_{index + 1}", segments))

    entries = [
        {
            "speaker": speaker,
            "text": segment.text,
            "start": segment.start,
            "end": min(segment.end, round(duration, 3)),
            "confidence": segment.confidence,
            "channel": channel,
            "language": segment.language,
        }
        for channel, speaker, segments in per_channel
        for segment in segments
    ]
    if not entries:
        raise LegFailed("no speech was recognised in the recording", duration)
    entries.sort(key=lambda e: (e["start"], e["channel"]))

    redacted_audio = None
    if redact:
        redaction.apply_tone(audio.channels, spans, SAMPLE_RATE)
        redacted_audio = workdir / "redacted.wav"
        _write_wav(redacted_audio, audio.channels)
    return Outcome(transcript=entries, duration=duration, redacted_audio=redacted_audio)


def _pcm(samples: npt.NDArray[np.float32]) -> bytes:
    import numpy as np

    return (np.clip(samples, -1.0, 1.0) * 32767).astype("<i2").tobytes()


def _write_wav(path: Path, channels: Sequence[npt.NDArray[np.float32]]) -> None:
    import numpy as np

    interleaved = np.stack([np.clip(c, -1.0, 1.0) for c in channels], axis=1)
    with wave.open(str(path), "wb") as out:
        out.setnchannels(len(channels))
        out.setsampwidth(2)
        out.setframerate(SAMPLE_RATE)
        out.writeframes((interleaved * 32767).astype("<i2").tobytes())


async def _summarize(settings: Any, transcript: list[dict[str, Any]]) -> str | None:
    """The brain's summary when one is configured (CALLPLANE_LLM_BASE_URL), else extractive."""
    from callplane.brain import build_brain
    from callplane.brain.summary import summarize

    entries = [{"role": "user", "text": e["text"]} for e in transcript]
    brain = build_brain(settings)
    try:
        result = await summarize(brain, entries)
    finally:
        if brain is not None:
            await brain.aclose()
    if result.error:
        log.warning("brain summary unavailable; extractive used", extra={"error": result.error})
    if result.text is not None and (brain is None or result.error):
        # The extractive summary labels sentences Agent/Caller by the platform's roles; the
        # speakers of an imported recording have no such roles.
        return _ROLE_LABEL.sub(r"\1", result.text)
    return result.text


def _remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)
