"""jieba's part-of-speech HMM decoded with numpy.

jieba's tagger finds names outside its dictionary by running a Viterbi decoder over the joint
(position in word, part of speech) states of its HMM, in pure Python: a step between two
characters with many possible states (的, 是, or a character whose states cannot follow the
previous ones, where every one of the 256 states is tried) costs milliseconds, and the meaning
check tags thousands of short windows. `Decoder` is the same decoder on dense arrays, compiled:
the same candidate states at each step, the same sums in the same order, the same tie-break (the
greater state), hence the same path; `install` makes jieba's tagger use it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from itertools import accumulate

import numpy as np

from .jit import compiled

_MIN_FLOAT = -3.14e100  # jieba's log-probability of an emission its model never saw
_CACHED_CHARACTERS = 1 << 13  # characters whose state indices are kept
_CACHED_ROWS = 1 << 12  # characters whose emissions in every state are kept (2 KiB each)


class Decoder:
    """jieba's HMM (states, start, transition and emission log-probabilities) as arrays, states
    numbered in their sorted order so that the greatest index is the greatest state."""

    def __init__(self, char_states: Mapping[str, Sequence[tuple[str, str]]],
                 start: Mapping[tuple[str, str], float],
                 trans: Mapping[tuple[str, str], Mapping[tuple[str, str], float]],
                 emit: Mapping[tuple[str, str], Mapping[str, float]]) -> None:
        self.states = sorted(trans)
        index = {state: n for n, state in enumerate(self.states)}
        size = len(self.states)
        self._index = index
        self._char_states = char_states
        self._emitted = _by_character([emit[state] for state in self.states])
        self._start = np.array([start[state] for state in self.states])
        self._trans = np.full((size, size), -np.inf)
        for state, nexts in trans.items():
            for other, p in nexts.items():
                self._trans[index[state], index[other]] = p
        self._follows = np.isfinite(self._trans)  # which states may come next
        self._leads = self._follows.any(axis=1)  # states with any transition out
        self._all = np.arange(size)

    @lru_cache(maxsize=_CACHED_CHARACTERS)  # noqa: B019 - one decoder per process
    def _possible(self, ch: str) -> np.ndarray:
        """Indices of the states the model allows for `ch` (every state for one it lacks)."""
        states = self._char_states.get(ch)
        if states is None:
            return self._all
        return np.array(sorted(self._index[s] for s in states), dtype=np.intp)

    @lru_cache(maxsize=_CACHED_ROWS)  # noqa: B019 - one decoder per process
    def _emissions(self, ch: str) -> np.ndarray:
        """The emission log-probability of `ch` in every state."""
        codes, states, probs = self._emitted
        lo, hi = codes.searchsorted([ord(ch), ord(ch) + 1])
        row = np.full(len(self.states), _MIN_FLOAT)
        row[states[lo:hi]] = probs[lo:hi]
        return row

    def __call__(self, obs: str, *_model: object) -> tuple[float, list[tuple[str, str]]]:
        """The most likely state of each character of `obs`, as jieba's `viterbi(obs, states,
        start_p, trans_p, emit_p)` returns it (the model given at construction)."""
        possible = [self._possible(ch) for ch in obs]
        # (np.array of the rows and a Python running sum: a fraction of np.stack's and
        # np.cumsum's overhead on the few characters tagged at a time)
        bounds = np.array([0, *accumulate(len(p) for p in possible)], np.intp)
        prob, route = _decode(self._start, self._trans, self._follows, self._leads,
                              np.concatenate(possible), bounds,
                              np.array([self._emissions(ch) for ch in obs]))
        return prob, [self.states[s] for s in route.tolist()]


def _by_character(emit: Sequence[Mapping[str, float]]) -> tuple[np.ndarray, ...]:
    """Every emission of the tables `emit` (one a state): the code point of the character, the
    state (its index in `emit`) and the log-probability, ordered by code point. A character's row
    is then filled from its stretch (a few of the 256 states emit it) rather than looked up in
    every state's table; made in a hundredth of a second from ~90k entries."""
    chars: list[str] = []
    states: list[int] = []
    probs: list[float] = []
    for state, table in enumerate(emit):
        chars.extend(table)  # one character each
        states.extend([state] * len(table))
        probs.extend(table.values())
    codes = np.frombuffer("".join(chars).encode("utf-32-le"), np.uint32).astype(np.int64)
    order = np.argsort(codes, kind="stable")
    return codes[order], np.array(states, np.intp)[order], np.array(probs)[order]


@compiled
def _decode(start: np.ndarray, trans: np.ndarray, follows: np.ndarray, leads: np.ndarray,
            possible: np.ndarray, bounds: np.ndarray,
            emissions: np.ndarray) -> tuple[float, np.ndarray]:
    """(score, state of each step) of the best path: step t may take the states
    possible[bounds[t]:bounds[t + 1]] that some state of the step before may go to, else every
    state that one may go to (else every state); emissions[t] holds step t's log-probabilities."""
    size, steps = len(start), len(bounds) - 1
    current = possible[bounds[0]:bounds[1]].copy()
    scores = np.empty(len(current))
    for k in range(len(current)):
        scores[k] = start[current[k]] + emissions[0, current[k]]
    # each step's states and the best previous state of each
    taken = np.empty((steps, size), np.intp)
    came = np.empty((steps, size), np.intp)
    counts = np.zeros(steps, np.intp)
    for t in range(1, steps):
        prev = np.empty(len(current), np.intp)
        kept = np.empty(len(current))
        m = 0
        for k in range(len(current)):
            if leads[current[k]]:
                prev[m], kept[m] = current[k], scores[k]
                m += 1
        if m == 0:
            raise ValueError("attempt to get argmax of an empty sequence")
        expected = np.zeros(size, np.bool_)
        for k in range(m):
            expected |= follows[prev[k]]
        nxt = np.empty(size, np.intp)
        n = 0
        for state in possible[bounds[t]:bounds[t + 1]]:
            if expected[state]:
                nxt[n] = state
                n += 1
        if n == 0:
            anything = expected.any()
            for state in range(size):
                if expected[state] or not anything:
                    nxt[n] = state
                    n += 1
        scores = np.empty(n)
        for c in range(n):
            state = nxt[c]
            emit = emissions[t, state]
            best, best_sum = 0, (kept[0] + trans[prev[0], state]) + emit
            for k in range(1, m):
                total = (kept[k] + trans[prev[k], state]) + emit
                if total >= best_sum:  # of equal sums the greater state (later in prev)
                    best, best_sum = k, total
            scores[c] = best_sum
            taken[t, c], came[t, c] = state, prev[best]
        counts[t] = n
        current = nxt[:n]
    last = 0
    for k in range(1, len(current)):
        if scores[k] >= scores[last]:
            last = k
    route = np.empty(steps, np.intp)
    state = current[last]
    route[steps - 1] = state
    for t in range(steps - 1, 0, -1):
        state = came[t, np.searchsorted(taken[t, :counts[t]], state)]
        route[t - 1] = state
    return scores[last], route


def install() -> None:
    """Make jieba's tagger decode with a `Decoder` (same paths, a fraction of the time)."""
    import jieba.posseg as posseg

    if not isinstance(posseg.viterbi, Decoder):
        posseg.viterbi = Decoder(posseg.char_state_tab_P, posseg.start_P, posseg.trans_P,
                                 posseg.emit_P)


def warm_up() -> None:
    """Load (or compile) the decoder's kernel now rather than in the first batch that tags."""
    import jieba.posseg as posseg

    install()
    posseg.viterbi("张路", posseg.char_state_tab_P, posseg.start_P, posseg.trans_P, posseg.emit_P)
