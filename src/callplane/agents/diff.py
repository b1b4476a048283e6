"""Configs as JSON Pointer leaves, and the diff of two (docs/agents.md).

Objects are walked key by key; lists are whole values, except ``tools``, which is walked per tool
``name`` (``/tools/lookup_order/url``), so reordering tools is no change and two people editing
different tools never collide. ``unflatten`` turns leaves back into a config (the merge uses it).
"""

from __future__ import annotations

from typing import Any

Leaves = dict[str, Any]


def escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def flatten(config: dict[str, Any]) -> Leaves:
    leaves: Leaves = {}
    for key, value in config.items():
        if key == "tools" and isinstance(value, list):
            for tool in value:
                name = tool.get("name") or tool.get("type")
                _walk(f"/tools/{escape(str(name))}", tool, leaves)
            # the order of tools is kept as one leaf of its own, so it survives a merge
            leaves["/tools"] = [t.get("name") or t.get("type") for t in value]
            continue
        _walk(f"/{escape(key)}", value, leaves)
    return leaves


def _walk(path: str, value: Any, leaves: Leaves) -> None:
    if isinstance(value, dict) and value:
        for key, item in value.items():
            _walk(f"{path}/{escape(key)}", item, leaves)
    else:
        leaves[path] = value


def diff(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """``[{"path", "from", "to"}]`` ordered by path; a side where the path is absent has no key.
    The order of tools is no change; ``/tools`` itself appears only when one side has no
    ``tools`` key at all."""
    old, new = flatten(before), flatten(after)
    changes = []
    for path in sorted(old.keys() | new.keys()):
        if path == "/tools" and path in old and path in new:
            continue
        if old.get(path, _ABSENT) == new.get(path, _ABSENT) and (path in old) == (path in new):
            continue
        change: dict[str, Any] = {"path": path}
        if path in old:
            change["from"] = old[path]
        if path in new:
            change["to"] = new[path]
        changes.append(change)
    return changes


_ABSENT = object()


def unflatten(leaves: Leaves) -> dict[str, Any]:
    """The config whose ``flatten`` is ``leaves``; tools in the order of the ``/tools`` leaf
    (names it does not list follow, in name order)."""
    tree: dict[str, Any] = {}
    tools: dict[str, dict[str, Any]] = {}
    for path, value in leaves.items():
        if path == "/tools":
            continue
        tokens = [unescape(t) for t in path.split("/")[1:]]
        if tokens[0] == "tools" and len(tokens) >= 2:
            target = tools.setdefault(tokens[1], {})
            _place(target, tokens[2:], value)
        else:
            _place(tree, tokens, value)
    if tools or "/tools" in leaves:
        order = [n for n in leaves.get("/tools") or [] if n in tools]
        order += sorted(n for n in tools if n not in order)
        tree["tools"] = [tools[n] for n in order]
    return tree


def _place(tree: dict[str, Any], tokens: list[str], value: Any) -> None:
    if not tokens:
        return
    node = tree
    for token in tokens[:-1]:
        child = node.get(token)
        if not isinstance(child, dict):
            child = node[token] = {}
        node = child
    node[tokens[-1]] = value
