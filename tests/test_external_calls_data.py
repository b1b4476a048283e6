"""Fixture builders shared by the external call, recording and storage tests."""

from __future__ import annotations

import base64
import struct
from typing import Any

CALL = "5d7c1b2a-0000-4000-8000-00000000c001"
LEG_1 = "5d7c1b2a-0000-4000-8000-0000000000a1"
LEG_2 = "5d7c1b2a-0000-4000-8000-0000000000a2"
LEG_3 = "5d7c1b2a-0000-4000-8000-0000000000a3"
LEG_4 = "5d7c1b2a-0000-4000-8000-0000000000a4"
LEG_5 = "5d7c1b2a-0000-4000-8000-0000000000a5"
LEG_6 = "5d7c1b2a-0000-4000-8000-0000000000a6"
SOURCE = "5d7c1b2a-0000-4000-8000-00000000500e"

TRANSCRIPT = [
    {
        "speaker": "agent",
        "text": "Hello, how can I help?",
        "start": 0.0,
        "end": 1.5,
        "confidence": 0.97,
        "channel": "left",
    }
]


def wav(seconds: float = 0.01, fill: int = 0) -> bytes:
    """A valid 8 kHz mono 8-bit WAV file."""
    frames = bytes([fill]) * int(8000 * seconds)
    header = b"RIFF" + struct.pack("<I", 36 + len(frames)) + b"WAVE"
    fmt = b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, 8000, 8000, 1, 8)
    return header + fmt + b"data" + struct.pack("<I", len(frames)) + frames


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def leg(leg_id: str, started: str, audio: bytes | None = None, **extra: Any) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": leg_id,
        "file_name": f"{leg_id[-2:]}.wav",
        "started_at": started,
        **extra,
    }
    if audio is not None:
        item["audio_base64"] = b64(audio)
    return item


def external_call(call_id: str = CALL, **extra: Any) -> dict[str, Any]:
    return {
        "id": call_id,
        "external_call_id": "ext-42",
        "title": "Support line",
        "direction": "outbound",
        "from_number": "+14155550100",
        "to_number": "+14155550199",
        "duration_seconds": 95,
        "started_at": "2025-03-01T10:00:00Z",
        "status": "transcribed",
        "source": {"id": SOURCE, "name": "Zoom import", "provider": "zoom"},
        "created_at": "2025-03-01T10:05:00Z",
        **extra,
    }
