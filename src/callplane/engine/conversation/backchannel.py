"""Backchannels: the "uh-huh", "yeah" and "okay" a listener says while the other one talks.

They mean "go on", not "stop": the agent's line must not be cut by one. Two things tell one from
a real interruption. Its length: a backchannel is a word or two, under ``BACKCHANNEL_MS`` of
voice, so a caller still speaking after that is interrupting (the listener says so at once,
``CallerKeptSpeaking``). And its words, once the recogniser has them: "Wait." is as short as
"okay." but means stop.

Pure: text in, a verdict out. The turn loop (``turn_loop.py``) holds the agent's line at the
caller's first sound and resumes or cuts it from these.
"""

from __future__ import annotations

import re

#: Voice longer than this is not a backchannel. "Uh-huh", "yeah" and "okay" take 350-500 ms
#: of voice; a drawn-out "mm-hmm" more (espeak-ng's: 620-700 ms, so 600 cut it). The agent's
#: audio is held from the first sound whatever this is: it only sets when a caller who has not
#: paused yet is taken to be interrupting.
BACKCHANNEL_MS = 700

#: Words a backchannel is made of (English, then the other languages a call can be in), in the
#: spellings Whisper writes them ("Uh-huh.", "Mhm.",
#: "Mm-hmm.", "Yeah, yeah."). Whisper often hears "uh-huh" as "Uh-uh." or "Uh...", so those
#: count too (a caller who means "no" says more, or says it again). Words that start a
#: sentence ("um", "so", "well", "wait") are not among them: the caller is taking the turn.
_WORDS = """
    uh-huh uhhuh uh-hum uh-hmm uh-uh uh mm-hmm mmhmm mhm mm-hm mm hmm hm-hmm
    yeah yep yup yes ya yeh
    okay ok o.k. kay alright
    right sure
    aha ah-ha oh ah
    sí si vale claro ajá aja exacto
    oui ouais d'accord voilà exactement
    ja jo genau stimmt klar
    sim tá uhum certo
    certo esatto
"""
WORDS = frozenset(_WORDS.split())
#: Two-word backchannels.
PHRASES = frozenset(
    {"all right", "i see", "got it", "uh huh", "mm hmm", "oh okay", "okay sure"}
    | {"de acuerdo", "ya veo", "je vois", "bien sûr", "tout à fait", "ach so", "va bene"}
    | {"ho capito", "está bem", "tá bom", "entendo"}
)
_WORD = re.compile(r"[^\W_]+(?:[-'.][^\W_]+)*\.?")
#: A hum however Whisper spells it: "Mmm.", "Hmm.", "Mm-mm.".
_HUM = re.compile(r"^[mh]+(?:-[mh]+)*$")


def words(text: str) -> list[str]:
    """The text's words, lowercase, without the punctuation around them."""
    return [w.rstrip(".") if w.count(".") == 1 else w for w in _WORD.findall(text.lower())]


def is_backchannel(text: str) -> bool:
    """``text`` (what the recogniser heard) says "go on" and nothing else: one to three
    backchannel words ("Yeah.", "Okay, okay.", "Uh huh."). Empty text is none: it is no
    words at all (a cough, a noise), which the turn loop does not count as speech."""
    said = words(text.replace("\u2019", "'"))
    if not said or len(said) > 3:
        return False
    if " ".join(said) in PHRASES:
        return True
    return all(word in WORDS or _HUM.match(word) for word in said)
