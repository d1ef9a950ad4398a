"""The verdict of a message: every rule that turns what was found into a decision, in one place,
called by the engine and by the `decide` stage of the global scope (`scale/join.py`), so both
decide alike.

- an earlier message with the same normalized text: `exact`, unless one of the two asks and the
  other states (`repeat_verdict`); no text content left: `unique`;
- which candidates the index's answers qualify and how they are ordered for the cut to the best
  (`anchor_need`, `rank_key`);
- the verification of the qualified candidates, the closest first (`closest_verdict`): every
  candidate is ranked on one scale, the character-bigram Jaccard of the two texts, so the earlier
  text most like the message as a whole decides (a copy of the whole message before a text that
  only holds part of it, or a hard negative that holds its own part of it);
- the related and unique verdicts (`unique`).

Pure: no state, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..config import VerifySettings
from ..records import Decision, Verdict
from .mood import turned
from .normalize import Clauses
from .verify import Measured, unmatched, verify


@dataclass(slots=True)  # not frozen: a frozen init costs 4x, made per pair
class Candidate:
    """An earlier message the index proposed: what verification reads of it."""

    id: str
    text: str  # normalized
    fp: int  # its Simhash
    distance: int  # Simhash distance the index measured, or -1: found by shared anchors only
    measured: Measured  # `verify.similarity` to the message, measured by the caller


def exact_verdict(message_id: str, matched_id: str) -> Verdict:
    """The verdict of a message whose normalized text an earlier message has."""
    return Verdict(message_id, Decision.EXACT, "exact: same normalized text",
                   matched_id=matched_id, distance=0, similarity=1.0)


def repeat_verdict(message_id: str, matched_id: str, text: str, endings: tuple[str, str],
                   settings: VerifySettings) -> Verdict:
    """The verdict of a message whose normalized `text` an earlier message has: an exact
    duplicate, unless their `endings` (earlier, later) make the same words a question and a
    statement (`mood.turned`): related."""
    if settings.related_question and turned(text, *endings):
        return unique(message_id, (matched_id, "question", 0, 1.0), False)
    return exact_verdict(message_id, matched_id)


def empty_verdict(message_id: str) -> Verdict:
    """The verdict of a message with no text left once decoration is removed (and no earlier
    message with the same raw text)."""
    return Verdict(message_id, Decision.UNIQUE, "unique: no text content")


def anchor_need(families: ArrayLike, stored: int) -> np.ndarray:
    """Shared anchors of each family a candidate found by anchors alone needs, for messages with
    `families[i]` anchors of each family (`features.FAMILIES` columns) when messages are posted
    under `stored` at most (0: all): of winnowing anchors and of bigrams, a fifth of the
    message's (at least one: a short stored text may have only one; at most half of what a
    message is posted under, so long texts still find each other); of one-deletion keys, one
    (each names a whole text one edit away). A family the message lacks qualifies nothing."""
    counts = np.atleast_2d(np.asarray(families, np.int64))
    need = np.maximum(1, -(-counts // 5))
    if stored:
        need = np.minimum(need, -(-stored // 2))
    need[:, -1] = 1
    return np.where(counts > 0, need, np.iinfo(np.int64).max)


# Weight of a shared anchor by how many earlier messages the lookup saw posted under it (1 ..
# `index.anchor_postings`): an anchor that many messages carry (a stock greeting, a lead-in, a
# common bigram) says little about which of them is the source, a rare one says much. Integers,
# so the engine and the global scope sum them alike.
_WEIGHT_SCALE = 1000


def anchor_weights(postings: int) -> np.ndarray:
    """`weights[seen]`: the ranking weight of an anchor seen with `seen` earlier posters,
    1 / (1 + log2 seen), scaled to integers."""
    seen = np.arange(max(postings, 1) + 1, dtype=np.float64)
    weights = np.rint(_WEIGHT_SCALE / (1 + np.log2(np.maximum(seen, 1))))
    return weights.astype(np.int64)


def rank_key(candidate: tuple[int, int, int]) -> tuple[int, int]:
    """Order of the index's candidates (key, distance or -1, anchor score) for the cut to the
    `index.max_candidates` best, before their texts are read: the highest sum of the shared
    anchors' `anchor_weights`, then nearest."""
    _key, dist, score = candidate
    return -score, dist if dist >= 0 else 255


def closest_verdict(message_id: str, text: str, fp: int, candidates: Sequence[Candidate],
                    settings: VerifySettings, common: Sequence[bool] | None = None,
                    clauses: Clauses = (), asks: bool = False) -> Verdict:
    """Verify `candidates` against the message.

    The closest earlier text decides: candidates are tried in order of their Jaccard with the
    message (ties: the earlier of `candidates`) and the first that is a duplicate or only related
    settles it, so a reprint of a dropped-clause copy cannot hide a changed date that the full
    original shows, and a hard negative that holds part of the message cannot settle it before
    its true source is tried. `common`: which characters of the message the stream repeats;
    `clauses`: where its clauses end; `asks`: whether it ends with a question mark.
    """
    refused: tuple[str, str, int, float] | None = None
    apart: tuple[str, str, int, float] | None = None  # the first one a rule set apart
    too_short = False
    for c in sorted(candidates, key=lambda c: -c.measured[2]):
        if unmatched(c.text, text, c.measured, settings):
            continue  # `verify` would say only "not a duplicate"
        check = verify(c.text, text, settings, c.measured, common, clauses, asks)
        if check.duplicate:
            distance = _distance(c, fp)
            return Verdict(message_id, Decision.NEAR,
                           f"near: distance {distance}, similarity {check.similarity:.2f}",
                           matched_id=c.id, distance=distance,
                           similarity=round(check.similarity, 4))
        if check.guard == "short":
            too_short = True
        elif check.guard:
            refused = (c.id, check.guard, _distance(c, fp), check.similarity)
            break
        elif check.apart and apart is None:  # not that text's copy; a later one may still be
            apart = (c.id, check.apart, _distance(c, fp), check.similarity)
    return unique(message_id, refused or apart, too_short)


def _distance(candidate: Candidate, fp: int) -> int:
    """The Simhash distance of a candidate to the message: the index's, or counted."""
    if candidate.distance < 0:
        return (int(candidate.fp) ^ int(fp)).bit_count()
    return candidate.distance


def source_seq(verdict: Verdict, candidates: Sequence[Candidate],
               seqs: Iterable[int]) -> int | None:
    """Of `candidates` (at `seqs`, read only for a near verdict), the seq of the one a near
    verdict matched, else None."""
    if verdict.decision is not Decision.NEAR:
        return None
    return next(q for c, q in zip(candidates, seqs, strict=True) if c.id == verdict.matched_id)


def unique(message_id: str, related: tuple[str, str, int, float] | None,
           too_short: bool) -> Verdict:
    """The verdict of a message no candidate duplicates: related to the first candidate a
    rule refused (a meaning change, containment), or naming the rule that kept it apart."""
    if related is not None:
        related_id, guard, distance, sim = related
        return Verdict(message_id, Decision.UNIQUE, f"related: {guard.replace(',', ', ')}",
                       matched_id=related_id, distance=distance, similarity=round(sim, 4),
                       guard=guard)
    if too_short:
        return Verdict(message_id, Decision.UNIQUE, "unique: too little content for a near match")
    return Verdict(message_id, Decision.UNIQUE, "unique")


def per_message(by_row: dict[int, list[tuple[int, int, int]]], owner: np.ndarray,
                 seqs: np.ndarray, limit: int) -> list[list[tuple[int, int, int]]]:
    """Candidates of each message from those of its fingerprint rows: the message itself left
    out, each candidate once with its best (most shared anchors, then nearest) row. With one row
    per message (row i is message i) a row's candidates are that already: each once, best first."""
    if len(owner) == len(seqs):  # visit only the rows with candidates, ~a third (dev stream)
        per: list[list[tuple[int, int, int]]] = [[] for _ in range(len(seqs))]
        seq_of = seqs.tolist()
        for i, cands in by_row.items():
            per[i] = [cand for cand in cands if cand[0] != seq_of[i]]
        return per
    merged: list[dict[int, tuple[int, int, int]]] = [{} for _ in range(len(seqs))]
    for row, cands in by_row.items():
        i = int(owner[row])
        own = int(seqs[i])
        for cand in cands:
            if cand[0] == own:
                continue
            best = merged[i].get(cand[0])
            if best is None or rank_key(cand) < rank_key(best):
                merged[i][cand[0]] = cand
    return [sorted(m.values(), key=rank_key)[:limit] for m in merged]
