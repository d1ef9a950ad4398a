"""Who a span names: a personal pronoun, a name (as jieba's tagger or dictionary reads it),
a surname alone or in an address (老钱, 小戴). One person for another is another speaker or
subject (`spans`: an `entity` change)."""

from __future__ import annotations

from .lexicon import Lexicon

# Personal pronouns, a closed class (jieba tags 您 zg, the others r): one for another, or for a
# name, is another person.
PRONOUNS = frozenset(["我", "你", "您", "他", "她", "它", "咱", "我们", "你们", "他们", "她们",
                      "它们", "咱们"])
PERSON_TAGS = frozenset({"nr", "nrfg", "nrt"})


def is_person(part: str, lex: Lexicon) -> bool:
    """Whether `part` names a person: a personal pronoun, a person's name as the tagger reads
    the part on its own, a surname alone by the dictionary (彭) or in an address (小史, 老黎:
    `_address`)."""
    if part in PRONOUNS or _address(part, lex) or any(
            tag in PERSON_TAGS for _, tag in lex.tagged_words(part)):
        return True
    return len(part) == 1 and lex.tags.get(part) in PERSON_TAGS


def _address(word: str, lex: Lexicon) -> bool:
    """Whether `word` is 老 or 小 and a surname (`Lexicon.surnames`) that the dictionary does not
    make a common word of another kind with it (老师, 小心, 老马 "old horse" are words): how
    Chinese addresses a person (老钱, 小戴), a productive form the dictionary cannot list."""
    return (len(word) == 2 and word[0] in "老小" and word[1] in lex.surnames
            and (lex.tags.get(word) in PERSON_TAGS or not lex.is_common(word)))


def addressed(text: str, start: int, end: int, lex: Lexicon) -> bool:
    """Whether text[start:end] is the one character after 老 or 小 of a person's address, in no
    longer word (小王子 is a title)."""
    return (end - start == 1 and start > 0 and _address(text[start - 1 : end], lex)
            and len(lex.word_at(text, start - 1, end)) <= 2)


def maybe_person(part: str, lex: Lexicon) -> bool:
    """A cheap test before the tagger: a pronoun, or a character the dictionary tags as a name."""
    return part in PRONOUNS or lex.tagged(part, PERSON_TAGS)


def person_at(text: str, start: int, end: int, lex: Lexicon) -> bool:
    """Whether text[start:end] names a person (`_person`), or the tagger reads a person's name
    over it in its sentence (a surname in a full name: 曹劲松)."""
    return is_person(text[start:end], lex) or bool(lex.tokens_at(text, start, end, PERSON_TAGS))
