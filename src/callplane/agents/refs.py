"""Branch names and refs (a branch name or a commit id) of docs/agents.md."""

from __future__ import annotations

import re
import uuid

BRANCH_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")
MAIN = "main"


def branch_name_problem(name: object) -> str | None:
    """Why a branch name is refused, or None. Beyond §15's pattern: no ``..`` and no name that
    reads as a commit id, so a ref is never ambiguous."""
    if not isinstance(name, str) or not BRANCH_NAME.fullmatch(name):
        return "must match ^[a-z0-9][a-z0-9._-]{0,62}$"
    if ".." in name or name.endswith((".", ".lock")):
        return "must not contain '..' or end with '.' or '.lock'"
    if as_commit_id(name) is not None:
        return "must not be a commit id"
    return None


def as_commit_id(ref: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(ref) if len(ref) in (32, 36) else None
    except ValueError:
        return None
