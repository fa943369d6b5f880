"""Hypothesis helpers shared by the test modules."""

from __future__ import annotations

from hypothesis import strategies as st


def mutated(draw, sequence: list, symbol: st.SearchStrategy, max_edits: int = 6) -> list:
    """A copy of ``sequence`` with up to ``max_edits`` substitutions, insertions and deletions
    drawn by Hypothesis (``symbol`` draws the new symbols): a sequence related to the original,
    so that alignments are not all near-random."""
    edited = list(sequence)
    for _ in range(draw(st.integers(0, max_edits))):
        position = draw(st.integers(0, len(edited)))
        kind = draw(st.sampled_from("SID"))
        if kind == "I" or position == len(edited):
            edited.insert(position, draw(symbol))
        elif kind == "S":
            edited[position] = draw(symbol)
        else:
            del edited[position]
    return edited
