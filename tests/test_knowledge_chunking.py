"""Splitting and reading documents, without a database (``knowledge.chunking``,
``knowledge.extraction``): hostile shapes stay bounded and nothing a reader sees is lost."""

from __future__ import annotations

from callplane.knowledge import extraction
from callplane.knowledge.chunking import LIMIT, Section, chunk_sections


def _texts(text: str) -> list[str]:
    return [c.text for c in chunk_sections("Doc", [Section((), text)])]


def test_a_line_without_spaces_or_full_stops_is_cut_at_the_limit_and_kept_whole():
    line = "é" * (3 * 1024 * 1024 + 7)  # 6 MB of UTF-8 in one word
    texts = _texts(line)
    assert all(len(t) <= LIMIT for t in texts)
    assert "".join(texts) == line


def test_a_long_line_of_words_is_cut_between_words_and_loses_none():
    words = " ".join(f"word{n}" for n in range(200_000))
    texts = _texts(words)
    assert all(len(t) <= LIMIT for t in texts)
    assert " ".join(texts) == words


def test_characters_a_database_refuses_become_spaces():
    [text] = _texts("null\x00byte, bell\x07 and a lone \ud800 surrogate.")
    assert text == "null byte, bell and a lone surrogate."


def test_html_shows_no_script_style_comment_or_attribute_and_keeps_the_text():
    page = (
        "<html><head><title>Prices</title><script>steal()</script></head><body>"
        "<!-- internal note --><h1 onclick='evil()'>Dental</h1>"
        "<noscript>enable javascript</noscript><template><p>hidden</p></template>"
        "<style>p { color: red }</style><p>A check-up costs 45 euros.</p>"
        "<svg><text>drawing</text></svg><iframe src='x'>frame</iframe>"
        "<p>After the frame.</p><SCRIPT type='text/javascript'>more()</SCRIPT>"
        "<p>Last words.</p><script>never closed"
    )
    read = extraction.html(page)
    shown = " ".join(s.text for s in read.sections)
    assert read.title == "Prices"
    for hidden in ("steal", "internal", "evil", "enable", "hidden", "color", "drawing", "more"):
        assert hidden not in shown
    assert "never closed" not in shown
    for kept in ("check-up costs 45 euros", "After the frame.", "Last words."):
        assert kept in shown
    assert [s.headings for s in read.sections] == [("Dental",)]


def test_markdown_headings_inside_code_fences_are_text():
    read = extraction.markdown("# Setup\n```\n# not a heading\n```\nDone.\n## Next\nMore.")
    assert [s.headings for s in read.sections] == [("Setup",), ("Setup", "Next")]
    assert "# not a heading" in read.sections[0].text
