"""Whether a message asks, and whether it asks where its earlier text did not.

Normalization removes the question mark, and with it what tells a question from a statement when
the words are the same: 一日 (one day) and 一日呀? (one day?) are two speech acts, an answer and
an echo question that checks it. A question mark alone is punctuation (至少40人受伤 /
至少40人受伤?: the same news, and the same normalized text); what makes the later text a question
of its own is the final particle that carries the question with it, added to the earlier text or
put in the place of its own (最迟嘅Form two喇 / 最迟都Form two呀?). When the earlier text asks by
its words already (a question word or particle, an A-not-A form: 好唔好玩 / 好唔好玩啊?), both
are the same question.

Two messages with the same words are two speech acts when those words end with a final particle
and one message asks while the other states: the mark tells how the particle is read (係呀?
"really?" / 係呀. "yes."; 八月底喎. "end of August, mind" / 八月底喎? "end of August?"). Each
message's ending is stored with its exact record, so this is told apart however far apart the
two are. A near match's earlier text keeps only its words, so a repeated question that had only
its mark (有货? / 有货呢?) is taken for a question asked anew.
"""

from __future__ import annotations

import re

# Marks a question ends with, and what may follow them: closing quotes and brackets, an
# exclamation mark (真的吗?!), spaces.
_QUESTION_MARKS = "?？"
_CLOSERS = " \t\r\n\"'”’」』)）]】》"
_AFTER = _CLOSERS + "!！"
# A message's ending (`ending`): it asks, it states (a full stop or an exclamation mark), or
# neither (no mark, an ellipsis that trails off: a line cut short, a repost without its marks).
ASKS, STATES, NONE = "?", ".", ""
_STATEMENT_MARKS = "。.!！"
# Sentence-final particles, a closed class (simplified forms, as normalization leaves them,
# Cantonese ones among them: 喎 is 㖞 once simplified): the particle a question carries at its
# end.
_FINAL_PARTICLES = frozenset("了呢吧啊呀啦嘛哦喔噢哈哒咯哟哇吗么咩喇嚹啰囖嘞吖喎㖞𡃉㗎嘅噃啫咋𠸏唧")
# What makes a text a question by its words: question words and particles (Mandarin, and
# Cantonese: 咩, 乜 "what", 点 "how", 边 "which", 几 "how many"), and an A-not-A form (好不好,
# 去唔去, 有没有).
_QUESTION_WORDS = re.compile(r"吗|么|咩|乜|谁|哪|几|怎|点|边|多少|是否|难道|为何|(.)[不唔没冇]\1")


def asks(raw: str) -> bool:
    """Whether a message's raw text ends with a question mark."""
    end = raw.rstrip(_AFTER)[-1:]
    return bool(end) and end in _QUESTION_MARKS


def ending(raw: str) -> str:
    """How a message's raw text ends: ASKS (a question mark, 真的吗?! too), STATES (a full stop or
    an exclamation mark) or NONE."""
    if asks(raw):
        return ASKS
    tail = raw.rstrip(_CLOSERS)
    if tail.endswith(("...", "…", "。。")):
        return NONE
    return STATES if tail[-1:] and tail[-1] in _STATEMENT_MARKS else NONE


def kept_ending(text: str, raw: str) -> str:
    """The `ending` of a message with normalized `text` and raw text `raw` as the rules read it:
    NONE unless the text ends with a final particle (no rule reads the mark of another text),
    so most messages skip the look at their marks."""
    return ending(raw) if text and text[-1] in _FINAL_PARTICLES else NONE


def turned(text: str, earlier: str, later: str) -> bool:
    """Whether two messages with the same normalized `text`, ending `earlier` and `later`
    (`ending`), are a question and a statement: one asks and the other states, the text ends
    with a final particle, which the mark reads one way or the other, and has no question word
    or form of its own (then both ask). A mark alone, after no particle, is punctuation
    (至少40人受伤 / 至少40人受伤?)."""
    return ({earlier, later} == {ASKS, STATES} and bool(text) and text[-1] in _FINAL_PARTICLES
            and not _QUESTION_WORDS.search(text))


def asked_anew(a: str, b: str) -> bool:
    """Whether normalized text `b`, of a message that `asks`, is a question its earlier text `a`
    is not: b ends with a final particle that a does not end with, and a has no question word
    or form of its own."""
    return (bool(b) and b[-1] in _FINAL_PARTICLES and not a.endswith(b[-1])
            and not _QUESTION_WORDS.search(a))
