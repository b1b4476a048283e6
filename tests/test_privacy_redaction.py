"""What an agent's redaction replaces, and what it leaves alone (``privacy/``): pure functions,
no database."""

from __future__ import annotations

import io
import math
import wave

import pytest

from callplane.brain.history import ChatHistory, Said, ToolAnswered, ToolCalled
from callplane.engine.recording_redaction import redacted_stretches
from callplane.privacy.detectors import luhn, mod97
from callplane.privacy.redaction import ENTITIES, Redactor, find
from callplane.privacy.spoken import normalise
from callplane.privacy.tone import tone_wav
from callplane.telephony.base import Recording

ALL = frozenset(ENTITIES)


def redacted(text: str, *entities: str) -> str:
    return Redactor(frozenset(entities) or ALL).text(text)


@pytest.mark.parametrize(
    ("number", "valid"),
    [
        ("4111111111111111", True),
        ("5555555555554444", True),
        ("378282246310005", True),
        ("4111111111111112", False),
        ("1234567890123456", False),
    ],
)
def test_luhn(number: str, valid: bool) -> None:
    assert luhn(number) is valid


@pytest.mark.parametrize(
    "said",
    [
        "my card is 4111 1111 1111 1111 thanks",
        "my card is 4111-1111-1111-1111 thanks",
        "my card is 4111111111111111 thanks",
        "my card is four one one one one one one one one one one one one one one one thanks",
        "my card is four one one one, one one one one, one one one one, one one one one thanks",
        "my card is four double one one, one one one one, triple one one, one one one one thanks",
        "my card is 4111 one one one one 1111 1111 thanks",
    ],
    ids=["groups", "hyphens", "solid", "spoken", "spoken-groups", "double-triple", "mixed"],
)
def test_a_card_number_is_replaced_however_it_is_said(said: str) -> None:
    assert redacted(said) == "my card is [credit_card] thanks"


@pytest.mark.parametrize(
    "said",
    [
        "order 1234 5678 9012 3456 please",
        "order one two three four five six seven eight nine zero one two three four five six",
        "tracking 4111 1111 1111 1112",
    ],
    ids=["written", "spoken", "one-digit-off"],
)
def test_order_ids_that_fail_luhn_survive(said: str) -> None:
    assert redacted(said, "credit_card") == said


def test_a_card_said_with_its_expiry_loses_only_the_card() -> None:
    said = "it is 4111 1111 1111 1111 12 27"
    assert redacted(said, "credit_card") == "it is [credit_card] 12 27"


def test_two_cards_in_a_row_are_both_replaced() -> None:
    said = "4111 1111 1111 1111 5555 5555 5555 4444"
    assert redacted(said, "credit_card") == "[credit_card] [credit_card]"


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("my ssn is 123-45-6789", "my ssn is [ssn]"),
        ("it's one two three four five six seven eight nine", "it's [ssn]"),
        ("social security number 123456789", "social security number [ssn]"),
        ("order 123456789 shipped", "order 123456789 shipped"),
        ("666-45-6789 is not one", "666-45-6789 is not one"),
    ],
    ids=["written", "spoken", "context", "bare-nine-digits", "invalid-area"],
)
def test_social_security_numbers(said: str, expected: str) -> None:
    assert redacted(said, "ssn") == expected


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("write to jane.doe+calls@example.co.uk today", "write to [email] today"),
        ("it's jane dot doe at example dot com", "it's [email]"),
        ("I'm at home", "I'm at home"),
        ("a@b is no address", "a@b is no address"),
    ],
    ids=["written", "spoken", "at-home", "no-domain"],
)
def test_emails(said: str, expected: str) -> None:
    assert redacted(said, "email") == expected


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("call me on 415 555 0123", "call me on [phone_number]"),
        ("or +44 20 7946 0958 in London", "or [phone_number] in London"),
        ("four one five, five five five, oh one two three", "[phone_number]"),
        ("room 12, floor 3", "room 12, floor 3"),
    ],
    ids=["us", "international", "spoken", "short-numbers"],
)
def test_phone_numbers(said: str, expected: str) -> None:
    assert redacted(said, "phone_number") == expected


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("born 03/14/1985", "born [date_of_birth]"),
        ("born 1985-03-14", "born [date_of_birth]"),
        ("born March 14th, 1985", "born [date_of_birth]"),
        ("born 14 March 1985", "born [date_of_birth]"),
        ("born march fourteenth nineteen eighty five", "born [date_of_birth]"),
        ("see you December 3", "see you December 3"),
        ("the contract ends 03/14/2999", "the contract ends 03/14/2999"),
    ],
    ids=["us", "iso", "words", "day-first", "spoken", "no-year", "future"],
)
def test_dates_of_birth(said: str, expected: str) -> None:
    assert redacted(said, "date_of_birth") == expected


def test_iban_is_checked_mod_97() -> None:
    assert mod97("DE89370400440532013000") and not mod97("DE89370400440532013001")
    said = "pay DE89 3704 0044 0532 0130 00 or GB82WEST12345698765432, not DE89370400440532013001"
    assert redacted(said, "iban") == "pay [iban] or [iban], not DE89370400440532013001"


def test_only_the_entities_named_are_replaced() -> None:
    said = "card 4111 1111 1111 1111, mail jane@example.com"
    assert redacted(said, "email") == "card 4111 1111 1111 1111, mail [email]"


def test_the_replacement_covers_the_spoken_words() -> None:
    said = "it's double five five five, five five five five, double five double five, 4444, ok"
    [found] = find(said, ALL)
    assert found.entity == "credit_card"
    assert said[found.start : found.end] == (
        "double five five five, five five five five, double five double five, 4444"
    )


def test_spoken_numbers_map_back_to_their_words() -> None:
    text = "nineteen eighty-five, triple oh"
    normalised = normalise(text)
    assert normalised.text == "1985, 000"
    assert text[slice(*normalised.origin(0, 4))] == "nineteen eighty-five"
    assert text[slice(*normalised.origin(6, 9))] == "triple oh"


@pytest.mark.parametrize(
    "line",
    [
        "4111 1111 1111 1111 " * 2_000,
        "1 " * 20_000,
        "four one " * 4_445,
        "a@" * 20_000,
        "DE89 " * 8_000,
        "x" * 39_999 + "@",
        "0" * 40_000,
        "March 14, " * 4_000,
    ],
    ids=["cards", "digits", "spoken", "ats", "iban-heads", "long-local", "one-number", "dates"],
)
def test_a_40000_character_line_is_redacted(line: str) -> None:
    line = line[:40_000]
    out = Redactor(ALL).text(line)
    assert "4111 1111 1111 1111" not in out
    assert len(out) <= len(line) + 40_000


def test_counts_are_per_entity_and_never_values() -> None:
    redactor = Redactor(ALL)
    redactor.text("4111 1111 1111 1111 and 5555 5555 5555 4444, jane@example.com")
    assert redactor.summary() == {"credit_card": 2, "email": 1}


def test_a_tool_call_is_redacted_in_its_arguments_and_answer() -> None:
    redactor = Redactor(ALL)
    history = ChatHistory(redactor=redactor)
    history.add(Said("user", "card 4111 1111 1111 1111"))
    history.add(ToolCalled("call_1", "pay", {"card": 4111111111111111, "note": "ok"}))
    history.add(ToolAnswered("call_1", "pay", "charged 4111 1111 1111 1111"))
    texts = [e["text"] for e in history.transcript]
    assert texts == ["card [credit_card]", "", "charged [credit_card]"]
    assert history.transcript[1]["arguments"] == {"card": "[credit_card]", "note": "ok"}
    # Without ``llm``, the brain still reads the value (a tool may need it).
    assert "4111 1111 1111 1111" in str(history.messages(None))


def test_with_llm_the_brain_reads_the_redacted_text() -> None:
    history = ChatHistory(redactor=Redactor(ALL, llm=True))
    history.add(Said("user", "card 4111 1111 1111 1111"))
    assert history.messages(None)[-1] == {"role": "user", "content": "card [credit_card]"}


def test_the_tone_covers_only_its_channel_and_stretch() -> None:
    rate = 8000
    silence = bytes(2 * 2 * rate * 3)  # three seconds, two channels
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(2)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(silence)
    toned = tone_wav(buffer.getvalue(), [(1, 0.5, 2.5)])
    with wave.open(io.BytesIO(toned)) as wav:
        frames = wav.readframes(wav.getnframes())
    samples = memoryview(frames).cast("h")
    agent, caller = samples[0::2], samples[1::2]
    assert not any(agent)
    # A 1 kHz tone at 8 kHz peaks every 8 samples.
    assert not any(caller[: int(0.5 * rate)]) and not any(caller[int(2.5 * rate) :])
    peak = max(abs(s) for s in caller[rate : rate + 8])
    assert math.isclose(peak, 0.25 * 32767, rel_tol=0.05)


def test_a_line_with_digits_is_toned_even_when_no_value_was_found() -> None:
    """A misheard card fails the Luhn check but is still in the audio."""
    redactor = Redactor(frozenset({"credit_card"}), recordings=True)
    assert redactor.numbers_in("my card number in 453, I'm 148, 0343647")
    assert redactor.numbers_in("four five three nine one four")
    assert not redactor.numbers_in("table for 4 at 7")
    assert not Redactor(frozenset({"email"})).numbers_in("order 12345678")
    # The agent's own words are exact: only what was replaced in them is covered.
    assert redactor.covers("user", "order 12345678", replaced=False)
    assert not redactor.covers("assistant", "order 12345678", replaced=False)


def test_redacted_lines_become_stretches_of_their_channel() -> None:
    redactor = Redactor(ALL, recordings=True)
    redactor.said += [("user", 1.0, 2.5), ("assistant", 3.0, None), ("user", 6.0, None)]
    transcript = [
        {"role": "assistant", "text": "a", "timestamp": 3.0},
        {"role": "assistant", "text": "", "function_name": "x", "timestamp": 4.0},
        {"role": "assistant", "text": "b", "timestamp": 5.0},
    ]
    recording = Recording("audio/wav", b"", 10.0)
    # A caller's line from its start to its end (to the recording's end when unknown), an
    # agent's until its next line; a second before and half a second after, within the
    # recording.
    assert redacted_stretches(redactor, recording, transcript) == [
        (1, 0.0, 3.0),
        (0, 2.0, 5.5),
        (1, 5.0, 10.0),
    ]
