"""How long a caller's silence must last before their turn is over (docs/voices.md#end-of-turn).

``silence``: always 500 ms. ``smart``: the recognised text at the first pause decides. A
finished sentence ("I'd like to book a cleaning.") waits CALLPLANE_END_OF_TURN_MS_COMPLETE
(200 ms); one ending in a digit ("my number is 415") waits …_NUMBER (600 ms: people read numbers
in groups); anything else — a trailing "to", "and", "um", a comma, an ellipsis, no final
punctuation, no text at all — waits …_INCOMPLETE (800 ms).

Whisper punctuates nearly everything it hears, fragments included ("I'd like to."), so a final
period alone does not make a sentence complete: a last word that cannot end an English sentence
(an article, a preposition, a conjunction, a filler; or their Spanish, French, Portuguese,
Italian and German counterparts) makes it incomplete whatever follows it. Words are read in any
alphabet, and a sentence ends at the punctuation of any script Whisper writes.

``model`` (the default): the end-of-turn model (``speech/turn_model.py``) hears the pause's
audio while the recogniser reads it, and the two decide together. The text alone rules when it
says the turn goes on (a last word that cannot end a sentence, a trailing comma or ellipsis, no
words): …_INCOMPLETE, whatever the voice. Otherwise:

- a finished sentence, and the voice sounds finished: …_COMPLETE;
- a finished sentence, and the voice sounds unfinished: …_UNSURE (400 ms);
- words whose last one can end a sentence, without final punctuation, and the voice sounds
  finished: …_UNSURE; sounding unfinished: …_INCOMPLETE;
- a number: …_COMPLETE if the voice sounds finished, else …_NUMBER.

When the two disagree neither is trusted alone: the model often hears a synthetic or flat voice
as unfinished at a sentence's end, and Whisper sometimes drops a question's mark. …_UNSURE is
longer than the pause at a comma (160-280 ms in bench/endpointing.py's corpus) and shorter than
a pause to think mid-sentence (580-700 ms there); it is never shorter than …_COMPLETE nor longer
than …_INCOMPLETE. Without the model (not installed), ``model`` decides as ``smart`` does.

Pure: text (and the model's probability) in, milliseconds out. The listener
(``engine.conversation.listening``) asks at each pause.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from callplane.speech.turn_model import COMPLETE

if TYPE_CHECKING:
    from callplane.settings import Settings

Mode = Literal["model", "smart", "silence"]
#: ``unpunctuated``: words whose last one can end a sentence, without the punctuation that ends
#: one ("can you send me a reminder"): smart waits on it as on ``incomplete``, model asks the
#: voice.
Kind = Literal["complete", "incomplete", "number", "unpunctuated"]

#: ``silence`` mode's fixed wait, and when it starts recognising a pause's guess.
SILENCE_MS = 500
SILENCE_PAUSE_MS = 240

#: Words after which an English sentence goes on. Words that often end one ("you", "it",
#: "no", "in", "on") are left out: a wrongly long wait costs 600 ms, not a cut.
_CONTINUATIONS = """
    a an the my your our their every
    to of for at with from into onto between through than
    and or but because if when while whether
    is are was were be been would could should will can shall must
    i i'd i'm i'll we we'd we're they he she also very like um uh er erm
"""
_NUMBER_WORDS = """
    zero oh one two three four five six seven eight nine ten eleven twelve thirteen fourteen
    fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty
    ninety hundred thousand
"""
#: The same for Spanish, French, Portuguese, Italian and German: articles, prepositions and
#: conjunctions that no sentence ends on. Left out: words that end sentences in English ("die",
#: "son", "sin"), pronouns that can ("nous", "ich", "eine", "meu"), German's verb particles
#: ("zu", "ein", "über") and its tag "oder?", and accented words that end questions ("qué").
_OTHER_CONTINUATIONS = """
    el los las unos unas mis tus sus nuestro nuestra del al para por hasta desde hacia pero
    porque cuando mientras
    les des mon mes ton tes ses notre votre du au aux à pour avec dans chez et mais parce quand
    je euh
    os da dos das sem em na ou
    gli della nel
    der dem des von für und aber weil wenn dass ob äh ähm
"""
CONTINUATIONS = frozenset(_CONTINUATIONS.split()) | frozenset(_OTHER_CONTINUATIONS.split())
NUMBER_WORDS = frozenset(_NUMBER_WORDS.split())
_TRAILING = re.compile(r"[\s\"')\]»]+$")
#: A word in any alphabet ("réserver", "für"), apostrophes inside it ("I'd", "j'ai").
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
#: What ends a sentence, in the scripts Whisper writes (Latin, CJK, Arabic, Devanagari).
_SENTENCE_ENDS = ".!?。？！؟।"


def classify(text: str) -> Kind:
    """What the turn's text so far sounds like: a finished sentence, a number, words that could
    end one but are not punctuated as its end, or unfinished."""
    text = _TRAILING.sub("", text)
    if not text or text.endswith(("...", "…", ",", "-", "—", ":", ";")):
        return "incomplete"
    words = _WORD.findall(text)
    if not words:
        return "incomplete"
    last = words[-1].lower()
    if last[-1].isdigit() or last in NUMBER_WORDS:
        return "number"
    if last in CONTINUATIONS:
        return "incomplete"
    return "complete" if text[-1] in _SENTENCE_ENDS else "unpunctuated"


@dataclass(frozen=True)
class Endpointing:
    mode: Mode = "smart"
    complete_ms: int = 200
    incomplete_ms: int = 800
    number_ms: int = 600
    #: ``model`` mode, when the voice and the words disagree (module docstring).
    unsure_ms: int = 400
    #: Smart mode's guess starts this early, before even the shortest wait is over: the turn
    #: cannot end before its text is known, so recognising from 120 ms rather than 200 ms of
    #: silence brings a finished sentence's reply 80 ms sooner. A pause of 120-200 ms inside a
    #: sentence costs a recognition thrown away (the caller goes on), never a cut turn.
    guess_ms: int = 120

    @property
    def pause_ms(self) -> int:
        """Silence after which the turn so far is recognised (the guess the decision reads)."""
        if self.mode == "silence":
            return SILENCE_PAUSE_MS
        return min(self.guess_ms, self.complete_ms, self.incomplete_ms, self.number_ms)

    @property
    def longest_ms(self) -> int:
        """The wait before the guess is known: the turn ends then even without one."""
        if self.mode == "silence":
            return SILENCE_MS
        return max(self.complete_ms, self.incomplete_ms, self.number_ms)

    def wait_ms(self, text: str, complete_probability: float | None = None) -> int:
        """The silence the turn needs, from the pause's text and, in ``model`` mode, the
        model's probability that the voice has finished (None: the model could not say)."""
        if self.mode == "silence":
            return SILENCE_MS
        kind = classify(text)
        if self.mode == "model" and complete_probability is not None:
            finished = complete_probability >= COMPLETE
            if kind == "complete":
                return self.complete_ms if finished else self.disagreeing_ms
            if kind == "unpunctuated" and finished:
                return self.disagreeing_ms
            if kind == "number":
                return self.complete_ms if finished else self.number_ms
            return self.incomplete_ms
        if kind == "complete":
            return self.complete_ms
        return self.number_ms if kind == "number" else self.incomplete_ms

    @property
    def disagreeing_ms(self) -> int:
        """The wait when the voice and the words disagree: …_UNSURE, kept between the waits of
        a turn both say is over and of one both say goes on (settings may move those)."""
        return min(max(self.unsure_ms, self.complete_ms), self.incomplete_ms)

    @classmethod
    def from_settings(cls, settings: Settings) -> Endpointing:
        """From CALLPLANE_ENDPOINTING and CALLPLANE_END_OF_TURN_MS_*."""
        return cls(
            mode=settings.endpointing,
            complete_ms=settings.end_of_turn_ms_complete,
            incomplete_ms=settings.end_of_turn_ms_incomplete,
            number_ms=settings.end_of_turn_ms_number,
            unsure_ms=settings.end_of_turn_ms_unsure,
        )
