"""Decoding uploaded recordings: wav, mp3, ogg (Vorbis/Opus) and flac through PyAV (FFmpeg's
libraries, in-process; no ffmpeg binary is run).

The format is judged from the bytes, never from the declared Content-Type alone: the file must
start with its format's signature and FFmpeg's own probe must agree. The length limit is applied
to the decoded stream as it is decoded, so a small file that claims (or really holds) hours of
audio is refused after decoding the allowed length, not after hours of work.

Output: 16 kHz mono float32 per channel (a stereo call gives one channel per side).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

AudioFormat = Literal["wav", "mp3", "ogg", "flac"]

#: The media types an upload may declare, and the format each one promises.
MEDIA_TYPES: dict[str, AudioFormat] = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/vnd.wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
    "audio/ogg": "ogg",
    "application/ogg": "ogg",
    "audio/flac": "flac",
    "audio/x-flac": "flac",
}

#: FFmpeg's demuxer names for each format.
_DEMUXERS: dict[AudioFormat, frozenset[str]] = {
    "wav": frozenset({"wav", "w64"}),
    "mp3": frozenset({"mp3"}),
    "ogg": frozenset({"ogg"}),
    "flac": frozenset({"flac"}),
}

SAMPLE_RATE = 16_000
#: At most this many channels are kept apart (a stereo call: one per side); more are mixed.
MAX_CHANNELS = 2


class UndecodableAudio(ValueError):
    """The bytes are not playable audio of the declared format; the message says why."""


class TooLong(UndecodableAudio):
    """The decoded audio is longer than the allowed length."""


@dataclass
class DecodedAudio:
    format: AudioFormat
    #: Sample rate of the upload itself (before resampling to 16 kHz).
    source_rate: int
    #: One 16 kHz float32 array per channel, all the same length.
    channels: list[npt.NDArray[np.float32]]

    @property
    def duration(self) -> float:
        return len(self.channels[0]) / SAMPLE_RATE if self.channels else 0.0


def sniff(head: bytes) -> AudioFormat | None:
    """The format a file's first bytes announce (its signature), or None."""
    if len(head) >= 12 and head[:4] in (b"RIFF", b"RF64") and head[8:12] == b"WAVE":
        return "wav"
    if head[:4] == b"fLaC":
        return "flac"
    if head[:4] == b"OggS":
        return "ogg"
    if head[:3] == b"ID3":
        # An ID3 tag precedes MP3 audio (and, rarely, FLAC): FFmpeg's probe decides below.
        return "mp3"
    if len(head) >= 2 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0 and head[1] & 0x06:
        return "mp3"  # an MPEG audio frame header: 11 sync bits and a layer
    return None


def media_format(content_type: str | None) -> AudioFormat | None:
    if not content_type:
        return None
    return MEDIA_TYPES.get(content_type.split(";", 1)[0].strip().lower())


def decode(path: Path, declared: AudioFormat, max_seconds: float) -> DecodedAudio:
    """Decode a stored upload. Raises UndecodableAudio (TooLong for over-long audio)."""
    import av
    import numpy as np

    with path.open("rb") as handle:
        head = handle.read(64)
    if not head:
        raise UndecodableAudio("the recording is empty")
    found = sniff(head)
    if found is None:
        raise UndecodableAudio(f"the recording is not {declared} audio")
    if found != declared and not (declared == "flac" and head[:3] == b"ID3"):
        raise UndecodableAudio(f"the recording is {found} audio, not {declared} as declared")

    try:
        container = av.open(str(path), mode="r", format=None, metadata_errors="ignore")
    except (av.FFmpegError, UnicodeDecodeError, ValueError) as exc:
        raise UndecodableAudio(f"the recording could not be read as {declared}: {exc}") from None
    try:
        if not set(container.format.name.split(",")) & _DEMUXERS[declared]:
            raise UndecodableAudio(f"the recording is not {declared} audio")
        if not container.streams.audio:
            raise UndecodableAudio("the recording has no audio stream")
        stream = container.streams.audio[0]
        source_rate = int(stream.codec_context.sample_rate or 0)
        source_channels = int(stream.codec_context.channels or 0)
        if source_rate <= 0 or source_channels <= 0:
            raise UndecodableAudio("the recording has no sample rate or channels")
        keep = source_channels if source_channels <= MAX_CHANNELS else 1
        layout = "stereo" if keep == 2 else "mono"
        resampler = av.AudioResampler(format="fltp", layout=layout, rate=SAMPLE_RATE)
        limit = int(max_seconds * SAMPLE_RATE)
        chunks: list[npt.NDArray[np.float32]] = []
        total = 0
        try:
            for frame in container.decode(stream):
                for out in resampler.resample(frame):
                    array = np.asarray(out.to_ndarray(), dtype=np.float32)
                    total += array.shape[1]
                    if total > limit:
                        raise TooLong(
                            f"the recording is longer than the limit of {max_seconds:g} seconds"
                        )
                    chunks.append(array)
            for out in resampler.resample(None):
                chunks.append(np.asarray(out.to_ndarray(), dtype=np.float32))
        except av.FFmpegError as exc:
            if not chunks:
                raise UndecodableAudio(f"the recording could not be decoded: {exc}") from None
            # A damaged tail (a cut-off upload) keeps what decoded before it; an empty or
            # silent result is judged by the caller.
    finally:
        container.close()
    if not chunks:
        raise UndecodableAudio("the recording holds no audio")
    samples = np.concatenate(chunks, axis=1).astype(np.float32, copy=False)
    if samples.shape[0] == 2 and _same_signal(samples[0], samples[1]):
        # A mono recording saved as stereo: one side, not the same words twice.
        samples = samples[:1]
    return DecodedAudio(
        format=declared,
        source_rate=source_rate,
        channels=[np.ascontiguousarray(samples[i]) for i in range(samples.shape[0])],
    )


def _same_signal(left: npt.NDArray[np.float32], right: npt.NDArray[np.float32]) -> bool:
    import numpy as np

    difference = float(np.sum((left - right) ** 2))
    energy = float(np.sum(left * left) + np.sum(right * right)) or 1.0
    return difference / energy < 1e-4


def is_silent(samples: npt.NDArray[np.float32], threshold_dbfs: float = -55.0) -> bool:
    """True when nothing in the audio rises above a quiet room (peak level in dBFS)."""
    import numpy as np

    if samples.size == 0:
        return True
    peak = float(np.max(np.abs(samples)))
    return peak <= 10 ** (threshold_dbfs / 20)
