"""Three-way merge of configs per JSON path, against their nearest common ancestor (§15).

A path changed on one side only takes that side's value; changed on both to the same value, that
value; changed on both to different values, a conflict naming the path. Pure functions: the
service finds the ancestor and writes the commit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from callplane.agents.diff import flatten, unflatten

_ABSENT: Any = object()


class MergeConflict(Exception):
    def __init__(self, paths: list[str]) -> None:
        super().__init__(", ".join(paths))
        self.paths = paths


def merge_configs(
    base: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any]
) -> dict[str, Any]:
    """``ours`` is the branch merged into, ``theirs`` the branch merged; MergeConflict lists
    every path both changed differently."""
    b, o, t = flatten(base), flatten(ours), flatten(theirs)
    merged: dict[str, Any] = {}
    conflicts = []
    for path in sorted(b.keys() | o.keys() | t.keys()):
        was, mine, other = b.get(path, _ABSENT), o.get(path, _ABSENT), t.get(path, _ABSENT)
        if mine == was or (mine is _ABSENT and was is _ABSENT):
            value = other
        elif other == was or (other is _ABSENT and was is _ABSENT) or mine == other:
            value = mine
        elif path == "/tools":  # only the order differs or tools were added: union, ours first
            value = list(mine if mine is not _ABSENT else [])
            value += [n for n in (other if other is not _ABSENT else []) if n not in value]
        else:
            conflicts.append(path)
            continue
        if value is not _ABSENT:
            merged[path] = value
    if conflicts:
        raise MergeConflict(conflicts)
    return unflatten(merged)


def ancestors(head: str, parents: Mapping[str, Iterable[str]]) -> dict[str, int]:
    """Every commit reachable from ``head`` (itself included) with its distance from it."""
    distance = {head: 0}
    frontier = [head]
    while frontier:
        following = []
        for commit in frontier:
            for parent in parents.get(commit, ()):
                if parent not in distance:
                    distance[parent] = distance[commit] + 1
                    following.append(parent)
        frontier = following
    return distance


def nearest_common_ancestor(a: str, b: str, parents: Mapping[str, Iterable[str]]) -> str | None:
    """The common ancestor closest to both heads (smallest summed distance; ties by id)."""
    from_a, from_b = ancestors(a, parents), ancestors(b, parents)
    common = from_a.keys() & from_b.keys()
    if not common:
        return None
    return min(common, key=lambda c: (from_a[c] + from_b[c], c))
