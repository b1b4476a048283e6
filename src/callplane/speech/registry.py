"""Speech engines, by the program half of a Voice's ``engine`` (``"<program>:<voice>"``), like
``tools/registry.py``. A new engine is one module (a ``SpeechEngine`` and its ``Synthesizer``,
its settings read from ``Settings`` there) and one line here. Listed in this order: the better
sounding first."""

from __future__ import annotations

from callplane.speech.base import SpeechEngine
from callplane.speech.piper import PiperEngine
from callplane.speech.synthesis import EspeakEngine

ENGINES: dict[str, SpeechEngine] = {
    engine.program: engine
    for engine in (
        PiperEngine(),
        EspeakEngine(),
    )
}
