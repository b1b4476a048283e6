"""The call's ``summary``: written by the brain when one is configured, else extractive.

The extractive summary keeps the transcript's most telling sentences (scored by how often their
content words recur in the call, after Luhn), in spoken order, each labelled with its speaker —
honest about being a selection rather than pretending to paraphrase.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from callplane.brain.base import Brain, BrainError
from callplane.brain.prompts import Entry, summary_messages

MAX_SENTENCES = 3
_WORD = re.compile(r"[a-z0-9']+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_STOPWORD_TEXT = """a an and are as at be but by can could did do does for from had has have hello
hi how i i'm im in is it it's its just me my no not of oh ok okay on or so that the their them then
there they this to too uh um us was we what when where which who will with would yes you your"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


@dataclass(frozen=True)
class Summary:
    text: str | None
    #: Why the brain's summary was not used (the extractive one was), for the call's events.
    error: str | None = None


async def summarize(
    brain: Brain | None, transcript: Sequence[Entry], instructions: str | None = None
) -> Summary:
    """``instructions``: the agent's ``summary_prompt`` (docs/agents.md), besides the fixed ones."""
    spoken = [e for e in transcript if e.get("text") and not e.get("function_name")]
    if not spoken:
        return Summary(None)
    if brain is None:
        return Summary(extractive_summary(spoken))
    try:
        text = (await brain.complete(summary_messages(transcript, instructions))).strip()
    except BrainError as exc:
        return Summary(extractive_summary(spoken), error=str(exc))
    if not text:
        return Summary(extractive_summary(spoken), error="the brain's summary was empty")
    return Summary(text)


def extractive_summary(transcript: Sequence[Entry], limit: int = MAX_SENTENCES) -> str:
    sentences: list[tuple[str, str]] = []
    for entry in transcript:
        speaker = "Agent" if entry.get("role") == "assistant" else "Caller"
        for sentence in _SENTENCE_END.split(str(entry.get("text") or "").strip()):
            if sentence:
                sentences.append((speaker, sentence))
    frequency = Counter(w for _, s in sentences for w in _content_words(s))

    def score(item: tuple[int, tuple[str, str]]) -> float:
        words = _content_words(item[1][1])
        return sum(frequency[w] for w in words) / (len(words) or 1) + len(set(words)) * 0.1

    chosen = sorted(sorted(enumerate(sentences), key=score, reverse=True)[:limit])
    return " ".join(f"{speaker}: {sentence}" for _, (speaker, sentence) in chosen)


def _content_words(sentence: str) -> list[str]:
    return [w for w in _WORD.findall(sentence.lower()) if w not in _STOPWORDS]
