"""Spans that are text moved elsewhere (the first step of `meaning.classify`): a clause moved is
a `reorder`, two words that trade places a `swap`. Where the later text's clauses end
(`normalize.Normalizer.with_clauses`) tells a clause from words."""

from __future__ import annotations

from collections import Counter
from itertools import pairwise

# difflib's SequenceMatcher compiled (same algorithm, same opcodes), 2-4x faster on our pairs.
from cydifflib import SequenceMatcher

from .lexicon import Lexicon
from .normalize import Clauses

_SWAP_MAX = 6  # characters: moved spans up to this long are words trading places, longer clauses


def moved_spans(a: str, b: str, spans: list[tuple[str, int, int, int, int]],
           lex: Lexicon, clauses: Clauses = ()) -> dict[int, str]:
    """Indexes of spans that are text moved elsewhere: 'swap' when two words trade places,
    'reorder' when one unit (a clause: whole clauses of b by its `clauses`) moved."""
    kinds: dict[int, str] = {}
    if len(spans) < 2:
        return kinds
    taken = [a[i1:i2] for _, i1, i2, _, _ in spans]
    put = [b[j1:j2] for _, _, _, j1, j2 in spans]
    # Text moved is taken out by one span and put in by another: none is when no text is both.
    both = set(taken).intersection(put)
    both.discard("")
    if not both:
        return kinds
    for x, (_, xi1, xi2, xj1, xj2) in enumerate(spans):
        for y in range(x + 1, len(spans)):
            _, yi1, yi2, yj1, yj2 = spans[y]
            out_x, in_x, out_y, in_y = taken[x], put[x], taken[y], put[y]
            if (out_x or in_x) and out_x == in_y and in_x == out_y:
                moved = [t for t in (out_x, in_x) if t]
                word = all(len(t) <= _SWAP_MAX and (lex.is_word(t) or lex.tags.get(t))
                           for t in moved)
                # Two words traded places: crossed replacements, or one word moved past
                # another word (a clause moves past more than a word).
                jumped = yi1 - xi2 if yi1 >= xi2 else xi1 - yi2
                crossed = bool(out_x and in_x) or jumped <= _SWAP_MAX - 2
                whole = _whole_clauses(b, ((xj1, xj2), (yj1, yj2)), clauses)
                kinds[x] = kinds[y] = "swap" if crossed and word and not whole else "reorder"
    return kinds


def _whole_clauses(b: str, parts: tuple[tuple[int, int], ...], clauses: Clauses) -> bool:
    """Whether every non-empty b[j1:j2] of `parts` begins and ends where a clause of b does
    (an edge of b, or one of its `clauses` ends): moved text that is whole clauses."""
    if not clauses:
        return False
    bounds = {0, len(b), *clauses}
    return all(j1 in bounds and j2 in bounds for j1, j2 in parts if j2 > j1)


def _clauses_rearranged(a: str, b: str, clauses: Clauses) -> bool:
    """Whether `a` is b's clauses (b cut at its `clauses` ends) put together in another order:
    clauses moved, which says the same. Each step takes the longest clause left that `a`
    continues with (clauses that are prefixes of one another are rare and short)."""
    if not clauses:
        return False
    bounds = (0, *clauses, len(b))
    left = sorted((b[s:e] for s, e in pairwise(bounds)), key=len, reverse=True)
    at = 0
    while left:
        piece = next((p for p in left if a.startswith(p, at)), None)
        if piece is None:
            return False
        left.remove(piece)
        at += len(piece)
    return at == len(a)


def _clause_shuffled(a: str, b: str, clauses: Clauses) -> tuple[str, str] | None:
    """The first clause of b (by its `clauses` ends) that `a` does not hold as it stands, with
    the stretch of `a` that has its characters in another order (where the clause stands in b,
    else the first such): words that traded places inside one clause, which may itself have
    moved. None when there is no such clause."""
    if not clauses:
        return None
    for start, end in pairwise((0, *clauses, len(b))):
        piece = b[start:end]
        if piece in a:
            continue
        need, size = Counter(piece), end - start
        if Counter(a[start:end]) == need:
            return a[start:end], piece
        window = Counter(a[:size])
        for k in range(len(a) - size + 1):
            if k:
                window[a[k - 1]] -= 1
                window[a[k + size - 1]] += 1
            if window == need:
                return a[k : k + size], piece
        return None
    return None


def reordered(a: str, b: str, spans: list[tuple[str, int, int, int, int]],
               lex: Lexicon, clauses: Clauses = ()) -> str | None:
    """When b has exactly a's characters in another order: "reorder" if b's clauses (by its
    `clauses` ends) are a's text rearranged; else "swap" if words trade places (a word replaced
    by another in the word alignment), "reorder" if a run of words (a clause) moved as a whole
    (only taken out in one place and put in at another)."""
    if len(a) != len(b):
        return None
    # Outside its differing `spans` b is a: it has a's characters exactly when the spans put in
    # what they take out (sorting only those is cheaper on long texts).
    taken = sorted("".join(a[i1:i2] for _, i1, i2, _, _ in spans))
    if taken != sorted("".join(b[j1:j2] for _, _, _, j1, j2 in spans)):
        return None
    if _clauses_rearranged(a, b, clauses):
        return "reorder"  # before segmenting: words do not cross a clause end
    a, b = _clause_shuffled(a, b, clauses) or (a, b)  # judged alone, wherever the clause went
    words_a, words_b = lex.segment(a), lex.segment(b)
    ops = [op for op in SequenceMatcher(None, words_a, words_b, autojunk=False).get_opcodes()
           if op[0] != "equal"]
    if any(tag == "replace" and i2 - i1 == j2 - j1 == 1 for tag, i1, i2, j1, j2 in ops):
        return "swap"  # one word where another stood, and that one elsewhere
    if len(ops) == 2 and all(max(i2 - i1, j2 - j1) <= 2 for _, i1, i2, j1, j2 in ops):
        (_, i1, i2, _, _), (_, k1, k2, _, _) = ops
        if max(k1 - i2, i1 - k2) <= 2:  # a word moved past a word or two: they traded places
            return "swap"
    return "reorder"
