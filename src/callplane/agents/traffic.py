"""Traffic splits: which branch a call that names neither branch nor commit runs.

The choice is a stable hash of the agent and the other party's number, so one caller always
meets the same branch (a canary never flips a caller between versions mid-relationship), and
the shares follow the weights over many callers. A split branch deleted since falls back to
main (deleting one is refused while a split uses it; this covers splits older than that rule).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from typing import Any


def pick_branch(
    splits: Sequence[dict[str, Any]] | None, agent_uuid: uuid.UUID, other_party: str | None
) -> str | None:
    """The split's branch for this caller; None when the agent has no split or the call has no
    other party's number (a browser call)."""
    if not splits or not other_party:
        return None
    digest = hashlib.sha256(f"{agent_uuid}:{other_party}".encode()).digest()
    point = int.from_bytes(digest[:8], "big") % 100
    reached = 0
    for split in splits:
        reached += int(split["weight"])
        if point < reached:
            return str(split["branch"])
    return str(splits[-1]["branch"])
