"""The verdict of one message from its candidates: the verification step, shared by the engine and
the `decide` stage of the global scope (`scale/decide_stage.py`), so both decide alike.

Pure: no state, no I/O. The caller finds the candidates (the engine in its index, the global scope
in the answers of the index shards) and ranks them best first; this module verifies them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .config import VerifySettings
from .records import Decision, Verdict
from .verify import verify


@dataclass(slots=True)  # not frozen: a frozen init costs 4x, made per pair
class Candidate:
    """An earlier message the index proposed: what verification reads of it."""

    id: str
    text: str  # normalized
    fp: int  # its Simhash
    distance: int  # Simhash distance the index measured, or -1: found by shared anchors only
    measured: tuple[float, str]  # `verify.similarity` to the message, measured by the caller


def rank_key(candidate: tuple[int, int, int]) -> tuple[int, int]:
    """Order of candidates (key, distance or -1, shared anchors), best first: most shared
    anchors, then nearest."""
    _key, dist, shared = candidate
    return -shared, dist if dist >= 0 else 255


def closest_verdict(message_id: str, text: str, fp: int, candidates: Sequence[Candidate],
                    settings: VerifySettings) -> Verdict:
    """Verify `candidates` (ranked best first) against the message.

    The closest earlier text decides: candidates are tried in order of similarity and the first
    that is a duplicate or only related settles it, so a reprint of a dropped-clause copy cannot
    hide a changed date that the full original shows.
    """
    refused: tuple[str, str, int, float] | None = None
    apart: tuple[str, str, int, float] | None = None  # the first one a rule set apart
    too_short = False
    for c in sorted(candidates, key=lambda c: -c.measured[0]):
        check = verify(c.text, text, settings, c.measured)
        distance = (int(c.fp) ^ int(fp)).bit_count() if c.distance < 0 else c.distance
        if check.duplicate:
            return Verdict(message_id, Decision.NEAR,
                           f"near: distance {distance}, similarity {check.similarity:.2f}",
                           matched_id=c.id, distance=distance,
                           similarity=round(check.similarity, 4))
        if check.guard == "short":
            too_short = True
        elif check.guard:
            refused = (c.id, check.guard, distance, check.similarity)
            break
        elif check.apart and apart is None:  # not that text's copy; a later one may still be
            apart = (c.id, check.apart, distance, check.similarity)
    return unique(message_id, refused or apart, too_short)


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
