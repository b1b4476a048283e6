"""Put the smart-turn v3.2 end-of-turn model where callplane reads it (install time only).

The model ships inside the ``pipecat-ai`` wheel. ``make install`` downloads that one wheel with
``pip download --require-hashes --no-deps -r requirements/turn-model.txt`` and this takes the
ONNX file out of it into ``<venv>/share/callplane/smart-turn/``, checking its SHA-256. pipecat is
never installed (its dozens of dependencies would only make pip complain about them) nor
imported. Run by the Makefile with the venv's Python, never at run time; nothing here reaches
the network.
"""

from __future__ import annotations

import hashlib
import sys
import zipfile
from pathlib import Path

MEMBER = "pipecat/audio/turn/smart_turn/data/smart-turn-v3.2-cpu.onnx"
SHA256 = "2bb026316b14a660486a75b1733cd3fbab8c2fd0314dc9af7be49f8cca967e4f"
#: Where ``callplane.speech.turn_model`` looks: inside the venv, never in the git tree.
TARGET = Path(sys.prefix) / "share" / "callplane" / "smart-turn" / Path(MEMBER).name


def main(wheels: Path) -> int:
    if TARGET.is_file() and hashlib.sha256(TARGET.read_bytes()).hexdigest() == SHA256:
        print(f"end-of-turn model: already in {TARGET}")
        return 0
    found = sorted(wheels.glob("pipecat_ai-*.whl"))
    if not found:
        print(f"no pipecat-ai wheel in {wheels}: see requirements/turn-model.txt", file=sys.stderr)
        return 1
    with zipfile.ZipFile(found[-1]) as wheel:
        data = wheel.read(MEMBER)
    digest = hashlib.sha256(data).hexdigest()
    if digest != SHA256:
        print(f"{MEMBER} has SHA-256 {digest}, not the pinned {SHA256}", file=sys.stderr)
        return 1
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    partial = TARGET.with_suffix(".partial")
    partial.write_bytes(data)
    partial.replace(TARGET)
    print(f"end-of-turn model: {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
