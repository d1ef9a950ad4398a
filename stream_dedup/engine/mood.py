"""Whether a message asks, and whether it asks where its earlier text did not.

Normalization removes the question mark, and with it what tells a question from a statement when
the words are the same: 一日 (one day) and 一日呀? (one day?) are two speech acts, an answer and
an echo question that checks it. A question mark alone is punctuation (至少40人受伤 /
至少40人受伤?: the same news, and the same normalized text); what makes the later text a question
of its own is the final particle that carries the question with it, added to the earlier text or
put in the place of its own (最迟嘅Form two喇 / 最迟都Form two呀?). When the earlier text asks by
its words already (a question word or particle, an A-not-A form: 好唔好玩 / 好唔好玩啊?), both
are the same question.

The earlier text's own question mark is not kept with it, so a repeated question that had only
its mark (有货? / 有货呢?) is taken for a question asked anew.
"""

from __future__ import annotations

import re

# Marks a question ends with, and what may follow them: closing quotes and brackets, an
# exclamation mark (真的吗?!), spaces.
_QUESTION_MARKS = "?？"
_AFTER = " \t\r\n\"'”’」』)）]】》!！"
# Sentence-final particles, a closed class (simplified forms, as normalization leaves them,
# Cantonese ones among them): the particle a question carries at its end.
_FINAL_PARTICLES = frozenset("了呢吧啊呀啦嘛哦喔噢哈哒咯哟哇吗么咩喇嚹啰囖嘞吖喎𡃉㗎嘅噃啫咋𠸏唧")
# What makes a text a question by its words: question words and particles (Mandarin, and
# Cantonese: 咩, 乜 "what", 点 "how", 边 "which", 几 "how many"), and an A-not-A form (好不好,
# 去唔去, 有没有).
_QUESTION_WORDS = re.compile(r"吗|么|咩|乜|谁|哪|几|怎|点|边|多少|是否|难道|为何|(.)[不唔没冇]\1")


def asks(raw: str) -> bool:
    """Whether a message's raw text ends with a question mark."""
    end = raw.rstrip(_AFTER)[-1:]
    return bool(end) and end in _QUESTION_MARKS


def asked_anew(a: str, b: str) -> bool:
    """Whether normalized text `b`, of a message that `asks`, is a question its earlier text `a`
    is not: b ends with a final particle that a does not end with, and a has no question word
    or form of its own."""
    return (bool(b) and b[-1] in _FINAL_PARTICLES and not a.endswith(b[-1])
            and not _QUESTION_WORDS.search(a))
