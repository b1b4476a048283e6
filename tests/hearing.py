"""What a test may ask of words recognised from a synthetic voice on a busy machine.

Whisper hears espeak-ng's flat voice well enough to follow a conversation, but under load (two
suites side by side, audio paced by the wall clock) it mishears some words of a line ("mesa"
as "meta", "a cleaning on Monday" as "clean it beyond my name"). A test that checks what was
heard asks for a good part of the line's words, never one particular word.
"""

from __future__ import annotations

import re


def words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def heard_enough_of(said: str, heard: str) -> bool:
    """Whether ``heard`` holds at least a third of the words of ``said`` longer than two
    letters (seen: two of five heard right in "i will like her clean it beyond my name")."""
    expected = {word for word in words(said) if len(word) > 2}
    return len(expected & words(heard)) * 3 >= len(expected)
