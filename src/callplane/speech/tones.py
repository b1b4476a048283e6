"""A voicemail beep in telephone audio: a pure tone of 300-2,500 Hz held for at least 150 ms.

Each 20 ms frame (160 samples at 8 kHz) goes through a Hann-windowed FFT (50 Hz bins). The
frame is *tonal* when nearly all of its energy sits around one peak (the peak bin and two on
either side, the window's main lobe): ``tonality`` >= 0.85. A voice never gets there on a
20 ms frame (its energy is spread over harmonics and formants), white noise is far below, and
a recorded greeting's music bed rarely holds one note that cleanly. A tonal frame also needs a
level a line can carry (RMS >= 300 of 32767) and its peak inside the band; consecutive tonal
frames whose peaks stay within a bin of the first make a *run*.

A run's length is counted from its frames' energy against the run's loudest frame, so a frame
the tone only partly fills (it rarely starts on a frame boundary) counts for the part it holds.
A frame less than about half filled is not tonal enough to join the run, so a tone can be
measured up to ~20 ms short: ``SLACK_SECONDS`` allows for half of that. A run of at least
``min_seconds`` is a beep, reported once the tone stops (the message must start after it).

Pure audio in, a verdict out: numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from callplane.telephony.base import FRAME_MS, SAMPLE_RATE

LOW_HZ = 300.0
HIGH_HZ = 2_500.0
MIN_SECONDS = 0.15
TONALITY = 0.85
MIN_RMS = 300.0
#: How far below ``min_seconds`` a measured run may fall (see above).
SLACK_SECONDS = 0.01
#: The main lobe of a Hann window: the peak bin and this many on either side.
LOBE_BINS = 2


@dataclass(frozen=True)
class Beep:
    #: Seconds from the first frame fed to where the tone started and stopped (frame accurate).
    started_at: float
    ended_at: float
    frequency: float
    #: The tone's length, from its frames' energy (finer than a frame).
    seconds: float


def tonal_peak(pcm: bytes, rate: int = SAMPLE_RATE) -> tuple[float, float, float]:
    """(peak frequency, tonality 0-1, RMS) of one frame of 16-bit mono PCM."""
    samples = np.frombuffer(pcm[: len(pcm) - len(pcm) % 2], dtype="<i2").astype(np.float64)
    if samples.size < 16:
        return 0.0, 0.0, 0.0
    rms = float(np.sqrt(np.mean(samples * samples)))
    spectrum = np.abs(np.fft.rfft(samples * np.hanning(samples.size))) ** 2
    spectrum[0] = 0.0  # a DC offset is no tone
    total = float(spectrum.sum())
    if total <= 0.0:
        return 0.0, 0.0, rms
    peak = int(np.argmax(spectrum))
    lobe = float(spectrum[max(0, peak - LOBE_BINS) : peak + LOBE_BINS + 1].sum())
    return peak * rate / samples.size, lobe / total, rms


@dataclass
class ToneDetector:
    """Feed it 20 ms frames; ``feed`` returns a ``Beep`` once, when a long enough tone stops."""

    low_hz: float = LOW_HZ
    high_hz: float = HIGH_HZ
    min_seconds: float = MIN_SECONDS
    tonality: float = TONALITY
    min_rms: float = MIN_RMS
    rate: int = SAMPLE_RATE
    _frames: int = field(default=0, init=False)
    _run_start: int | None = field(default=None, init=False)
    _run_hz: float = field(default=0.0, init=False)
    _run_energy: list[float] = field(default_factory=list, init=False)

    @property
    def in_tone(self) -> bool:
        """A tone is sounding now (a beep may be under way)."""
        return self._run_start is not None

    @property
    def beeping(self) -> bool:
        """The tone sounding now has already lasted long enough to be a beep."""
        return self._run_start is not None and self._run_seconds() + SLACK_SECONDS >= (
            self.min_seconds
        )

    def _run_seconds(self) -> float:
        loudest = max(self._run_energy, default=0.0)
        if loudest <= 0.0:
            return 0.0
        return sum(min(1.0, e / loudest) for e in self._run_energy) * FRAME_MS / 1000

    def feed(self, pcm: bytes) -> Beep | None:
        index = self._frames
        self._frames += 1
        hz, tonality, rms = tonal_peak(pcm, self.rate)
        bin_hz = self.rate / max(1, len(pcm) // 2)
        tonal = (
            tonality >= self.tonality and rms >= self.min_rms and self.low_hz <= hz <= self.high_hz
        )
        if tonal and self._run_start is not None and abs(hz - self._run_hz) <= bin_hz:
            self._run_energy.append(rms * rms)
            return None
        beep = self._end_run(index)
        if tonal:
            self._run_start, self._run_hz, self._run_energy = index, hz, [rms * rms]
        return beep

    def _end_run(self, index: int) -> Beep | None:
        start, seconds = self._run_start, self._run_seconds()
        self._run_start, self._run_energy = None, []
        if start is None:
            return None
        if seconds + SLACK_SECONDS < self.min_seconds:
            return None
        return Beep(start * FRAME_MS / 1000, index * FRAME_MS / 1000, self._run_hz, seconds)
