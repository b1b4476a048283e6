"""The runnable examples of the README and of docs/api.md (the API route by route), read from
their markup.

A fenced block whose info string is ``sh tour`` is part of the tour: its commands run, in the
order of the document, in one shell against a live server. A command followed by a line
``# => EXPECTED`` must print EXPECTED, where ``...`` stands for any text (one line of JSON, as
``curl -s`` prints it). Any section may opt in (an agents tour, say) by fencing its examples the
same way; blocks fenced plainly ``sh`` are shown, never run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FENCE = re.compile(r"^```sh tour\n(.*?)^```", re.MULTILINE | re.DOTALL)
EXPECT = "# => "


@dataclass
class Step:
    command: str
    expected: str | None
    line: int
    #: The document it is written in.
    source: str = "README.md"


def steps(markdown: str, source: str = "README.md") -> list[Step]:
    """The tour's commands, each with what it must print (if documented)."""
    found: list[Step] = []
    for block in FENCE.finditer(markdown):
        first_line = markdown.count("\n", 0, block.start(1)) + 1
        pending: list[str] = []
        for offset, line in enumerate(block.group(1).splitlines()):
            if line.startswith(EXPECT):
                assert found, f"{source} line {first_line + offset}: an expectation with no command"
                found[-1].expected = line[len(EXPECT) :]
                continue
            if not pending and (not line.strip() or line.lstrip().startswith("#")):
                continue
            pending.append(line)
            if line.endswith("\\"):
                continue
            found.append(Step("\n".join(pending), None, first_line + offset, source))
            pending = []
    return found


def matches(expected: str, output: str) -> bool:
    pattern = ".*?".join(re.escape(part) for part in expected.split("..."))
    return re.fullmatch(pattern, output.strip(), re.DOTALL) is not None


def script(tour: list[Step], marker: str) -> str:
    """One shell script running every step, each one's output after a marker line."""
    lines = ["set -u"]
    for number, step in enumerate(tour):
        lines.append(f"echo; echo '{marker} {number}'")
        lines.append(step.command)
    lines.append(f"echo; echo '{marker} end'")
    return "\n".join(lines) + "\n"


def outputs(stdout: str, marker: str, count: int) -> list[str]:
    parts = re.split(rf"^{re.escape(marker)} (\d+|end)$", stdout, flags=re.MULTILINE)
    found = {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}
    return [found.get(str(n), "<not reached>") for n in range(count)]
