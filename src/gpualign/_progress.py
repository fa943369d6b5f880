"""The progress bar of long runs (stderr; shown only once a run outlasts a second), and the
counters that alignment and edit distance move as their work finishes."""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np
from tqdm import tqdm

#: What :func:`gpualign.align` and :func:`gpualign.edit_distance` take as ``progress``: a bar
#: on stderr (True) or none (False), or a function called as ``progress(done, total)`` each
#: time work finishes (``done`` never decreases and ends at ``total``; ``total`` is None where
#: it is not known in advance).
ProgressArg = bool | Callable[[int, int], object]


def progress_bar(total: int | None, enabled: bool, what: str, unit: str = "pair") -> tqdm:
    """A bar over ``total`` items (None: a counter) that stays silent for short runs and when not
    ``enabled``."""
    return tqdm(total=total, disable=not enabled, unit=unit, desc=what, leave=False,
                delay=1.0, file=sys.stderr)


class Progress:
    """Work done out of ``total`` units (None: unknown; ``unit``: ``"pair"`` or ``"cell"``, DP
    cells), shown
    as a bar (``progress=True``), passed to a function, or not shown at all.

    Backends report finished pairs with :meth:`pairs_done` (their cells: one unit a pair when
    counting pairs) and the parts of a long pair with :meth:`cells_done` (ignored when counting
    pairs, which a long pair's last part then reports). Use it as a context manager: the bar
    closes on exit.

    Examples
    --------
    >>> seen = []
    >>> with Progress(10, lambda done, total: seen.append((done, total)), "align",
    ...               "cell") as progress:
    ...     progress.pairs_done(np.array([4]))
    ...     progress.cells_done(6)
    >>> seen
    [(4, 10), (10, 10)]
    """

    def __init__(self, total: int | None, progress: ProgressArg, what: str, unit: str):
        self.total, self.unit, self.done = total, unit, 0
        self._callback = progress if callable(progress) else None
        # No bar at all when none is shown: a silent tqdm still costs about 0.1 ms a call.
        self._bar = (progress_bar(self.total, True, what, unit)
                     if progress and self._callback is None else None)

    @classmethod
    def silent(cls) -> Progress:
        """A counter that shows nothing (internal calls without a progress of their own)."""
        return cls(None, _nothing, "", "pair")

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.close()

    def _advance(self, amount: int) -> None:
        amount = int(amount)
        if self.total is not None:
            amount = min(amount, self.total - self.done)  # a bar that ends at its total
        if amount <= 0:
            return
        self.done += amount
        if self._bar is not None:
            self._bar.update(amount)
        elif self._callback is not None:
            self._callback(self.done, self.total)

    def pairs_done(self, cells: np.ndarray) -> None:
        """Pairs of ``cells`` DP cells each (their share of it) are done."""
        self._advance(len(cells) if self.unit == "pair" else int(np.sum(cells, dtype=np.int64)))

    def cells_done(self, cells: int) -> None:
        """``cells`` more DP cells of long pairs are done (counted only in cells)."""
        if self.unit == "cell":
            self._advance(cells)


def pass_credits(q_len: np.ndarray, t_len: np.ndarray, two_passes: bool,
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The cells that a progress in cells counts for each pair of ``q_len`` x ``t_len`` symbols
    when its first pass ends (distance, score) and when its second does (the CIGAR): half and
    half with ``two_passes``, else all of them, then none.

    Examples
    --------
    >>> [c.tolist() for c in pass_credits(np.array([3]), np.array([5]), True)]
    [[8], [7]]
    """
    cells = np.asarray(q_len, dtype=np.int64) * np.asarray(t_len, dtype=np.int64)
    second = cells // 2 if two_passes else np.zeros_like(cells)
    return cells - second, second


def _nothing(done: int, total: int | None) -> None:
    """The function of :meth:`Progress.silent`."""


class Portion:
    """Moves ``progress`` by ``share`` units over ``work`` units of computation, in
    proportion, never beyond ``share`` (a driver whose work is only estimated: Myers-Miller
    computes about twice its pairs' cells), the rest on :meth:`finish`.

    Examples
    --------
    >>> moves = []
    >>> portion = Portion(moves.append, share=10, work=40)
    >>> portion.advance(20); portion.advance(30); portion.finish()
    >>> moves
    [5, 5]
    """

    def __init__(self, progress: Callable[[int], object] | None, share: int, work: int):
        self._progress, self._share, self._work = progress, int(share), max(1, int(work))
        self._computed = self._reported = 0

    def advance(self, computed: int) -> None:
        """``computed`` more units of computation are done."""
        if self._progress is None:
            return
        self._computed += int(computed)
        self._move(min(self._share, self._computed * self._share // self._work))

    def finish(self) -> None:
        """The computation is done: the rest of the share."""
        if self._progress is not None:
            self._move(self._share)

    def _move(self, target: int) -> None:
        if target > self._reported:
            self._progress(target - self._reported)
            self._reported = target
