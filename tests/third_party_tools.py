"""Where the third-party tools the tests use live (installed by ``make install``), and what a test
does when one is missing: skip with the reason, or fail under CI, where they must be there."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SPECTRAL = ROOT / "node_modules" / ".bin" / "spectral"
GENERATOR_VENV = ROOT / ".tools" / "openapi-python-client"
GENERATOR = GENERATOR_VENV / "bin" / "openapi-python-client"
GENERATOR_PYTHON = GENERATOR_VENV / "bin" / "python"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require(tool: Path, what: str) -> Path:
    if tool.exists():
        return tool
    message = f"{what} is not installed at {tool.relative_to(ROOT)} (run `make install`)"
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)
