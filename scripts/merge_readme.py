"""Merge the domain fragments of docs/readme/ into README.md's tour (between the markers).

    python scripts/merge_readme.py

Each fragment is one domain's section, written against the demo data; headings are demoted one
level so they sit under "A tour of the API".
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ORDER = ("calls", "contacts", "custom_data", "external_calls")
BEGIN, END = "<!-- domain sections: begin -->", "<!-- domain sections: end -->"


def _demote_headings(markdown: str) -> str:
    lines, in_code = [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            line = "#" + line
        lines.append(line)
    return "\n".join(lines)


def main() -> None:
    readme = (ROOT / "README.md").read_text()
    parts = []
    for name in ORDER:
        text = (ROOT / "docs" / "readme" / f"{name}.md").read_text().strip()
        parts.append(_demote_headings(text))
    body = f"{BEGIN}\n\n" + "\n\n".join(parts) + f"\n\n{END}"
    if BEGIN in readme:
        readme = re.sub(
            re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: body, readme, flags=re.S
        )
    else:
        readme = readme.replace("<!-- domain sections -->", body)
    (ROOT / "README.md").write_text(readme)


if __name__ == "__main__":
    main()
