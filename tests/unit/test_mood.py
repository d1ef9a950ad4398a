"""Questions told from statements: whether a message asks, and whether it asks where its earlier
text did not (`engine/mood.py`), and the `question` guard that verification gives such a pair."""

import pytest

from stream_dedup.config import VerifySettings
from stream_dedup.engine.mood import asked_anew, asks
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
