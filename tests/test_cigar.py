"""Unit tests of gpualign.cigar, cross-checked with the column-by-column oracle in naive.py."""

from __future__ import annotations

import doctest

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from naive import apply_cigar, dp_matrix, rescore_cigar

import gpualign.cigar
from gpualign._cigar_text import decode_cigars
from gpualign.cigar import (
    cigar_edit_cost,
    cigar_lengths,
    cigar_runs,
    count_ops,
    op_counts,
    parse_cigar,
)


def test_docstring_examples_run():
    outcome = doctest.testmod(gpualign.cigar)
    assert outcome.attempted >= 9 and outcome.failed == 0


@pytest.mark.parametrize("text,runs", [
    ("", []),
    ("1=", [(1, "=")]),
    ("3=1X2I10D", [(3, "="), (1, "X"), (2, "I"), (10, "D")]),
    ("12345=", [(12345, "=")]),
    ("1D1I1D", [(1, "D"), (1, "I"), (1, "D")]),
    ("007X", [(7, "X")]),
])
def test_parse_cigar(text, runs):
    assert parse_cigar(text) == runs


@pytest.mark.parametrize("text", [
    "=", "3", "3M", "3=X", "3 =", " 3=", "3=\n", "-1=", "0=", "3=0X", "1.5=", "3=4", "x3=", "3S",
    "3=1x", "=3",
])
def test_parse_cigar_rejects_malformed(text):
    with pytest.raises(ValueError, match="CIGAR"):
        parse_cigar(text)


@pytest.mark.parametrize("bad", [None, 3, b"3="])
def test_parse_cigar_rejects_non_str(bad):
    with pytest.raises(TypeError):
        parse_cigar(bad)


@pytest.mark.parametrize("text,ops,count", [
    ("", "=XID", 0),
    ("3=1X2I10D", "=", 3),
    ("3=1X2I10D", "XID", 13),
    ("3=1X2I10D", "DIX", 13),
    ("3=1X2I10D", "=XID", 16),
    ("12345=6=", "=", 12351),
    ("007X", "X", 7),
    ("1I1D", "=X", 0),
])
def test_count_ops(text, ops, count):
    assert count_ops(text, ops) == count


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(1, 10**7), st.sampled_from("=XID")),
                         max_size=12), max_size=20))
def test_op_counts_equal_count_ops_of_each_cigar(many_runs):
    cigars = ["".join(f"{length}{op}" for length, op in runs) for runs in many_runs]
    columns, runs = op_counts(cigars)
    assert columns.shape == runs.shape == (len(cigars), 4)
    for k, cigar in enumerate(cigars):
        assert columns[k].tolist() == [count_ops(cigar, op) for op in "=XID"], cigar
        assert runs[k].tolist() == [cigar.count(op) for op in "=XID"], cigar


@pytest.mark.parametrize("cigars", [["=", "10"], ["3=\n2X", "1I"], ["10"], ["3=X"], ["=3"],
                                    ["3M"], ["3=", "2 X"]])
def test_cigar_runs_rejects_malformed(cigars):
    with pytest.raises(ValueError):
        cigar_runs(cigars)


def test_count_ops_counts_every_column_by_default():
    assert count_ops("3=1X2I10D") == 16


@pytest.mark.parametrize("ops", ["", "M", "=S", "]", "=X-", None, 3])
def test_count_ops_rejects_unknown_ops(ops):
    with pytest.raises(ValueError, match="ops="):
        count_ops("1=", ops)


@pytest.mark.parametrize("text,lengths", [
    ("", (0, 0)),
    ("4=", (4, 4)),
    ("3=1X2I10D", (6, 14)),
    ("5I", (5, 0)),
    ("5D", (0, 5)),
    ("1=1I1=1D1X", (4, 4)),
])
def test_cigar_lengths(text, lengths):
    assert cigar_lengths(text) == lengths
    assert cigar_lengths(parse_cigar(text)) == lengths


def test_cigar_lengths_rejects_malformed():
    with pytest.raises(ValueError):
        cigar_lengths("4M")
    with pytest.raises(ValueError):
        cigar_lengths([(0, "=")])
    with pytest.raises(ValueError):
        cigar_lengths([(2, "M")])


def test_edit_cost_counts_x_i_d():
    assert cigar_edit_cost([0, 1, 2, 3], [0, 2, 3], "1=1I2=") == 1
    assert cigar_edit_cost([0, 1, 2, 3], [0, 1, 1, 3], "2=1X1=") == 1
    assert cigar_edit_cost([0, 1], [2, 0, 1, 3], "1D2=1D") == 2
    assert cigar_edit_cost([0, 1, 2], [], "3I") == 3
    assert cigar_edit_cost([], [0, 1, 2], "3D") == 3
    assert cigar_edit_cost([], [], "") == 0
    assert cigar_edit_cost([1, 1], [2, 2], "2X") == 2
    assert cigar_edit_cost([1, 1], [2, 2], "2I2D") == 4  # not optimal, but a valid alignment


def test_edit_cost_accepts_arrays_strings_bytes_and_runs():
    q = np.array([0, 1, 2, 3], dtype=np.uint8)
    t = np.array([0, 2, 3], dtype=np.uint8)
    assert cigar_edit_cost(q, t, "1=1I2=") == 1
    assert cigar_edit_cost(q, t, [(1, "="), (1, "I"), (2, "=")]) == 1
    assert cigar_edit_cost("ACGT", "AGT", "1=1I2=") == 1
    assert cigar_edit_cost(b"ACGT", b"ACCT", "2=1X1=") == 1


def test_edit_cost_match_codes():
    # With match_codes=4 (DNA) code 4 (N) matches nothing, not even itself.
    assert cigar_edit_cost([0, 4, 1], [0, 4, 1], "1=1X1=", match_codes=4) == 1
    with pytest.raises(ValueError, match="column 1"):
        cigar_edit_cost([0, 4, 1], [0, 4, 1], "3=", match_codes=4)
    # Without match_codes equal codes always match.
    assert cigar_edit_cost([0, 4, 1], [0, 4, 1], "3=") == 0
    with pytest.raises(ValueError, match="column 1"):
        cigar_edit_cost([0, 4, 1], [0, 4, 1], "1=1X1=")


def test_edit_cost_names_the_column_of_a_false_match():
    with pytest.raises(ValueError, match=r"column 5 \(query position 4, target position 4\)"):
        # Columns: = = I = D, then the '=' of column 5 pairs q[4]=0 with t[4]=2.
        cigar_edit_cost([0, 1, 2, 3, 0], [0, 1, 3, 2, 2], "2=1I1=1D1=")


def test_edit_cost_names_the_column_of_a_false_mismatch():
    with pytest.raises(ValueError, match=r"column 2 \(query position 2, target position 2\)"):
        cigar_edit_cost([0, 1, 2], [0, 1, 2], "2=1X")


@pytest.mark.parametrize("query,target,cigar", [
    ([0, 1, 2], [0, 1, 2], "2="),  # query and target left over
    ([0, 1, 2], [0, 1], "2="),  # query left over
    ([0, 1], [0, 1, 2], "2="),  # target left over
    ([0, 1], [0, 1], "3="),  # past both ends
    ([0, 1], [0, 1], "2=1I"),  # past the query
    ([0, 1], [0, 1], "2=1D"),  # past the target
    ([], [0], ""),
])
def test_edit_cost_must_consume_both_exactly(query, target, cigar):
    with pytest.raises(ValueError, match="query|target"):
        cigar_edit_cost(query, target, cigar)


def test_edit_cost_rejects_malformed():
    with pytest.raises(ValueError, match="malformed"):
        cigar_edit_cost([0], [0], "1M")


@st.composite
def alignments(draw):
    """A random alignment as a list of ops, and the sequences it aligns (codes 0..4)."""
    ops = draw(st.lists(st.sampled_from("=XID"), max_size=60))
    query, target = [], []
    for op in ops:
        if op == "=":
            code = draw(st.integers(0, 3))
            query.append(code)
            target.append(code)
        elif op == "X":
            a = draw(st.integers(0, 4))
            b = draw(st.integers(0, 4).filter(lambda b, a=a: b != a or a == 4))
            query.append(a)
            target.append(b)
        elif op == "I":
            query.append(draw(st.integers(0, 4)))
        else:
            target.append(draw(st.integers(0, 4)))
    text = ""
    run = 0
    for position, op in enumerate(ops):
        run += 1
        if position + 1 == len(ops) or ops[position + 1] != op:
            text += f"{run}{op}"
            run = 0
    return query, target, text, ops


@settings(max_examples=300, deadline=None)
@given(alignments())
def test_edit_cost_agrees_with_oracle(alignment):
    query, target, text, ops = alignment
    cost = cigar_edit_cost(query, target, text, match_codes=4)
    assert cost == sum(op != "=" for op in ops)
    assert cost == rescore_cigar(query, target, text, match_codes=4)
    assert cigar_lengths(text) == (len(query), len(target))
    assert [op for _, _, op in apply_cigar(query, target, text)] == ops
    assert sum(length for length, _ in parse_cigar(text)) == len(ops)
    for counted in ("=", "X", "I", "D", "XID", "=XI", "=XID"):
        assert count_ops(text, counted) == sum(op in counted for op in ops)
    # No alignment is cheaper than the edit distance.
    assert cost >= dp_matrix(query, target, "global", 4)[-1][-1]


def test_decode_cigars_from_padded_and_packed_buffers():
    # Texts in rooms of 8 bytes with junk between them, one pair without a CIGAR (-1), and the
    # same texts already packed back to back: the same strings either way.
    texts = [b"3=1X", b"", b"10=2D5=", None, b"1I"]
    room = np.full(8 * len(texts), ord("#"), dtype=np.uint8)
    for p, text in enumerate(texts):
        room[8 * p:8 * p + len(text or b"")] = np.frombuffer(text or b"", dtype=np.uint8)
    lengths = np.array([-1 if t is None else len(t) for t in texts])
    want = [None if t is None else t.decode() for t in texts]
    assert decode_cigars(room, np.arange(0, 8 * len(texts), 8), lengths) == want
    packed = np.frombuffer(b"".join(t or b"" for t in texts), dtype=np.uint8)
    starts = np.concatenate([[0], np.cumsum(np.maximum(lengths, 0))[:-1]])
    assert decode_cigars(packed, starts, lengths) == want
