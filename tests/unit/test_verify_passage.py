"""The passage rule (`verify.related_passage`): a later text that puts a passage of its own inside
an earlier one is not a copy of it, while reprints (edges, typos, cuts, moves) still are, and a
fuller earlier text can still be the one it copies."""

from dataclasses import replace

import pytest

from stream_dedup.config import Settings, VerifySettings
from stream_dedup.config_file import settings_from_dict
from stream_dedup.engine.batch import Engine
from stream_dedup.engine.normalize import Normalizer
from stream_dedup.engine.stored import TABLES
from stream_dedup.engine.verify import Check, similarity, verify
from stream_dedup.errors import ConfigError
from stream_dedup.records import Decision, Message
from stream_dedup.state import MemoryStore

pytestmark = pytest.mark.unit
NORM = Normalizer()
BASE = "市政府今天召开常务会议，研究部署春节期间的安全生产工作，要求各部门加强值班和应急准备。"
INSERTED = BASE.replace("安全生产", "安全生产和森林防火")  # five characters of its own inside


def check(first: str, second: str, settings: VerifySettings | None = None) -> Check:
    a, b = NORM.normalize(first), NORM.normalize(second)
    return verify(a, b, settings or VerifySettings())


@pytest.mark.parametrize(
    "later",
    [
        INSERTED,  # a phrase inserted
        BASE.replace("安全生产", "交通运输保障"),  # a phrase rewritten
    ],
)
def test_a_passage_of_its_own_inside_keeps_the_pair_apart(later: str) -> None:
    outcome = check(BASE, later)
    assert not outcome.duplicate
    assert outcome.apart == "passage"
    assert outcome.guard is None  # not settled: a fuller earlier text may still match


@pytest.mark.parametrize(
    "later",
    [
        "据市政府网站消息，" + BASE,  # a lead-in at the start
        BASE + "转发一下，大家注意",  # a comment at the end
        BASE.replace("部署", "布署"),  # a typo
        BASE.replace("研究部署", "研究并部署"),  # one character inserted inside
        "市政府今天召开常务会议，要求各部门加强值班和应急准备。",  # a clause cut
        "市政府今天召开常务会议，要求各部门加强值班和应急准备，研究部署春节期间的安全生产工作。",
    ],
)
def test_reprints_are_still_duplicates(later: str) -> None:
    outcome = check(BASE, later)
    assert outcome.duplicate and outcome.apart is None


def test_a_number_written_another_way_is_no_passage() -> None:
    earlier = BASE.replace("春节", "168个")
    assert check(earlier, earlier.replace("168", "一百六十八")).duplicate


def test_the_rule_can_be_switched_off_and_its_size_set() -> None:
    assert check(BASE, INSERTED, VerifySettings(related_passage=False)).duplicate
    assert check(BASE, INSERTED, VerifySettings(min_passage_chars=6)).duplicate
    assert not check(BASE, INSERTED, VerifySettings(min_passage_chars=5)).duplicate


def test_a_passage_no_longer_than_a_typo_is_refused_in_config() -> None:
    with pytest.raises(ConfigError) as err:
        settings_from_dict({"verify": {"min_passage_chars": 2}}, environ={})
    assert err.value.key == "verify.min_passage_chars"


def test_the_only_earlier_text_leaves_the_message_unique() -> None:
    verdicts = Engine(Settings(), MemoryStore(TABLES)).process(
        [Message("first", BASE, 0), Message("second", INSERTED, 1000)])
    assert not verdicts[1].is_duplicate


def test_a_fuller_earlier_text_still_matches() -> None:
    # The cut copy is wholly inside the later text (the higher score) and lacks the clause the
    # later text has: it must not settle the message. The full original is the closer text on
    # the one scale candidates are ranked by (Jaccard), so it is tried first and is the source,
    # whether or not the passage rule is on.
    orig = BASE.replace("。", "，确保群众过一个平安祥和的节日。")
    cut = orig.replace("研究部署春节期间的安全生产工作，", "")
    later = "据市政府网站今天发布的消息，" + orig
    o, c, x = (NORM.normalize(t) for t in (orig, cut, later))
    vs = VerifySettings()
    assert similarity(c, x, vs)[0] > similarity(o, x, vs)[0]
    assert similarity(o, x, vs)[2] > similarity(c, x, vs)[2]
    assert check(cut, later).apart == "passage"
    settings = Settings()
    for passage, source in ((True, "orig"), (False, "orig")):
        engine = Engine(replace(settings, verify=replace(settings.verify,
                                                         related_passage=passage)), MemoryStore(TABLES))
        verdicts = engine.process([Message("orig", orig, 0), Message("cut", cut, 1000),
                                   Message("later", later, 2000)])
        assert verdicts[2].is_duplicate and verdicts[2].matched_id == source


def test_a_message_only_set_apart_is_named_related_passage() -> None:
    engine = Engine(Settings(), MemoryStore(TABLES))
    first, later = engine.process([Message("base", BASE, 0), Message("inserted", INSERTED, 1000)])
    assert first.decision is Decision.UNIQUE
    assert later.decision is Decision.UNIQUE
    assert later.reason == "related: passage"
    assert later.matched_id == "base" and later.guard == "passage"
