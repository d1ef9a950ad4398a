"""Questions told from statements: whether a message asks, and whether it asks where its earlier
text did not (`engine/mood.py`), and the `question` guard that verification gives such a pair."""

import pytest

from stream_dedup.config import VerifySettings
from stream_dedup.engine.mood import (
    _FINAL_PARTICLES,
    ASKS,
    NONE,
    STATES,
    asked_anew,
    asks,
    ending,
    kept_ending,
    turned,
)
from stream_dedup.engine.normalize import Normalizer
from stream_dedup.engine.verify import verify

pytestmark = pytest.mark.unit
NORM = Normalizer()


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("一日呀?", True),
        ("一日呀？", True),
        ("真的吗?! ", True),  # an exclamation mark and a space after it
        ("「有货吗？」", True),  # inside quotes
        ("一日.", False),
        ("一日", False),
        ("?好的", False),  # a mark that does not end the text
        ("", False),
        ("!!", False),
    ],
)
def test_a_message_asks_when_its_text_ends_with_a_question_mark(raw: str, expected: bool) -> None:
    assert asks(raw) is expected


@pytest.mark.parametrize(
    ("earlier", "later", "expected"),
    [
        ("一日", "一日呀", True),  # a particle added: an echo question
        ("明天到了", "明天到呢", True),  # put in the place of the earlier text's
        ("明天到了", "明天到了", False),  # the same particle
        ("明天到", "明天到", False),  # no particle: the mark alone is punctuation
        ("好唔好玩", "好唔好玩啊", False),  # the earlier text asks by an A-not-A form
        ("什么时候到", "什么时候到呢", False),  # ... or by a question word
        ("有货吗", "有货呢", False),  # ... or by a question particle
    ],
)
def test_asked_anew_needs_a_particle_of_its_own_and_an_earlier_text_that_does_not_ask(
        earlier: str, later: str, expected: bool) -> None:
    assert asked_anew(earlier, later) is expected


@pytest.mark.parametrize(
    ("earlier", "later"),
    [
        ("一日。", "一日呀?"),  # very short
        ("这款耳机音质非常好。", "这款耳机音质非常好呀？"),
    ],
)
def test_a_question_asked_of_a_statement_is_related_and_can_be_switched_off(
        earlier: str, later: str) -> None:
    a, b = NORM.normalize(earlier), NORM.normalize(later)
    check = verify(a, b, VerifySettings(), asks=asks(later))
    assert not check.duplicate and check.guard == "question"
    assert verify(a, b, VerifySettings(related_question=False), asks=asks(later)).duplicate
    assert verify(a, b, VerifySettings(), asks=False).duplicate


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("係呀?", ASKS),
        ("真的吗?!", ASKS),
        ("係呀.", STATES),
        ("好吧！", STATES),
        ("哩個\"\".", STATES),  # a full stop after closing quotes
        ("「好的。」", STATES),
        ("係呀", NONE),  # no mark: a line cut short, a repost without its marks
        ("好吧...", NONE),  # an ellipsis trails off
        ("好吧…", NONE),
        ("", NONE),
    ],
)
def test_a_message_ends_asking_stating_or_neither(raw: str, expected: str) -> None:
    assert ending(raw) == expected


@pytest.mark.parametrize(
    ("text", "earlier", "later", "expected"),
    [
        ("系呀", ASKS, STATES, True),  # really? / yes.
        ("八月底㖞", STATES, ASKS, True),  # end of August, mind / end of August?
        ("系呀", ASKS, ASKS, False),  # the same question
        ("系呀", STATES, NONE, False),  # a mark lost is no act of its own
        ("至少40人受伤", STATES, ASKS, False),  # no particle: the mark alone is punctuation
        ("有货吗", STATES, ASKS, False),  # asks by its words either way
        ("好不好呀", STATES, ASKS, False),  # an A-not-A form
        ("", STATES, ASKS, False),
    ],
)
def test_the_same_words_are_turned_by_a_mark_only_after_a_final_particle(
        text: str, earlier: str, later: str, expected: bool) -> None:
    assert turned(text, earlier, later) is expected


def test_only_an_ending_after_a_final_particle_is_kept() -> None:
    assert kept_ending("系呀", "係呀?") == ASKS and kept_ending("系呀", "係呀.") == STATES
    assert kept_ending("至少40人受伤", "至少40人受伤?") == NONE  # no rule reads it
    assert kept_ending("", "?") == NONE


def test_every_final_particle_is_listed_as_normalization_leaves_it() -> None:
    assert {NORM.normalize(p) for p in _FINAL_PARTICLES} <= _FINAL_PARTICLES
