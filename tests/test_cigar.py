"""Unit tests of gpualign.cigar, cross-checked with the column-by-column oracle in naive.py."""

from __future__ import annotations

import doctest

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from naive import apply_cigar, dp_matrix, rescore_cigar

import gpualign
import gpualign.cigar
from gpualign._cigar_text import decode_cigars, pack_runs, path_runs, path_texts, write_runs
from gpualign.cigar import (
    PackedCigars,
    cigar_edit_cost,
    cigar_lengths,
    cigar_runs,
    count_ops,
    op_counts,
    parse_cigar,
)
from gpualign.map.sam import sam_cigars
from gpualign.map.segments import clip_ends


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


#: CIGARs as the packed form holds them: None (no alignment), empty ones (two empty sequences),
#: runs of every operation and lengths of several digits.
CIGAR_LISTS = st.lists(st.one_of(
    st.none(),
    st.lists(st.tuples(st.integers(1, 10**7), st.sampled_from("=XID")), max_size=8).map(
        lambda runs: "".join(f"{length}{op}" for length, op in runs))), max_size=25)


@settings(max_examples=80, deadline=None)
@given(CIGAR_LISTS)
def test_packed_cigars_round_trip_with_strings(cigars):
    packed = PackedCigars.from_strings(cigars)
    assert len(packed) == len(cigars)
    assert packed.tolist() == packed.to_text() == list(packed) == cigars
    assert [packed[p] for p in range(len(cigars))] == cigars
    assert packed == cigars and packed == tuple(cigars) and not packed != cigars
    assert packed.present.tolist() == [c is not None for c in cigars]
    columns, runs = op_counts(packed)
    want_columns, want_runs = op_counts(["" if c is None else c for c in cigars])
    assert np.array_equal(columns, want_columns) and np.array_equal(runs, want_runs)
    owner, length, op = cigar_runs(packed)
    want = cigar_runs(["" if c is None else c for c in cigars])
    assert all(np.array_equal(a, b) and a.dtype == b.dtype
               for a, b in zip((owner, length, op), want, strict=True))


@settings(max_examples=40, deadline=None)
@given(CIGAR_LISTS, st.data())
def test_packed_cigars_take_concatenate_and_replace(cigars, data):
    packed = PackedCigars.from_strings(cigars)
    picks = data.draw(st.lists(st.integers(0, max(len(cigars) - 1, 0)), max_size=10)
                      if cigars else st.just([]))
    assert packed.take(picks).tolist() == [cigars[p] for p in picks]
    assert packed.take(np.array(picks, dtype=np.int64)) == [cigars[p] for p in picks]
    mask = np.array([c is None for c in cigars], dtype=bool)
    assert packed.take(mask) == [None] * int(mask.sum())
    assert packed[1:] == cigars[1:] and packed[::-1] == cigars[::-1]
    assert PackedCigars.concatenate([packed, packed[:2]]) == cigars + cigars[:2]
    positions = sorted(set(picks))
    other = [f"{p + 1}X" for p in range(len(positions))]
    replaced = list(cigars)
    for position, text in zip(positions, other, strict=True):
        replaced[position] = text
    assert packed.replaced(positions, PackedCigars.from_strings(other)) == replaced
    shuffled = data.draw(st.permutations(positions))
    texts = [other[positions.index(p)] for p in shuffled]
    assert packed.replaced(shuffled, PackedCigars.from_strings(texts)) == replaced
    assert packed.replaced(positions, PackedCigars.nones(len(positions))) == [
        None if p in positions else c for p, c in enumerate(cigars)]
    if positions:
        with pytest.raises(ValueError, match="twice"):
            packed.replaced(positions * 2, PackedCigars.nones(2 * len(positions)))


def test_packed_cigars_empty_pairs_none_entries_and_indexing():
    packed = PackedCigars.from_strings(["", None, "150=", "1X1I1D"])
    assert packed.offsets.tolist() == [0, 0, 0, 1, 4]
    assert packed.ops.dtype == np.uint8 and packed.lengths.dtype == np.int64
    assert (packed[0], packed[1], packed[-1], packed[np.int64(2)]) == ("", None, "1X1I1D", "150=")
    for bad in (4, -5):
        with pytest.raises(IndexError):
            packed[bad]
    assert None in packed and packed.index("150=") == 2 and packed.count(None) == 1
    assert packed == PackedCigars.from_strings(["", None, "150=", "1X1I1D"])
    assert packed != PackedCigars.from_strings(["", "", "150=", "1X1I1D"])  # None is not ""
    assert packed != ["", None, "150="] and packed != "150="
    assert PackedCigars.nones(0).tolist() == [] and PackedCigars.nones(0) == []
    assert PackedCigars.concatenate([]) == []
    assert repr(packed) == "PackedCigars(4 pairs, 4 runs)"
    with pytest.raises(TypeError):
        hash(packed)
    assert gpualign.PackedCigars is PackedCigars


def test_packed_cigars_text_of_long_runs():
    lengths = [1, 9, 10, 99, 100, 12345, 10**9, 2**40]
    packed = PackedCigars(np.arange(len(lengths)) % 4, lengths, [0, 3, len(lengths)])
    text = "".join(f"{length}{'=XID'[k % 4]}" for k, length in enumerate(lengths))
    assert packed.tolist() == [text[:text.index("99")], text[text.index("99"):]]


@pytest.mark.parametrize("arguments", [
    ([0], [1], [0, 2]),  # offsets past the runs
    ([0, 1], [1], [0, 2]),  # ops and lengths differ in size
    ([4], [1], [0, 1]),  # no such operation
    ([0], [0], [0, 1]),  # a run of length 0
    ([0, 1], [1, 1], [0, 2, 1, 2]),  # decreasing offsets
    ([0], [1], [0, 1], [False]),  # a pair without an alignment has runs
    ([0], [1], [0, 1], [True, True]),  # a flag too many
])
def test_packed_cigars_rejects_inconsistent_arrays(arguments):
    with pytest.raises(ValueError):
        PackedCigars(*arguments)


def test_packed_cigars_from_strings_rejects_malformed():
    for bad in (["3=0X"], ["3M"], ["=3"]):
        with pytest.raises(ValueError):
            PackedCigars.from_strings(bad)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 3), max_size=30), max_size=12))
def test_packed_cigars_from_ops_is_the_run_length_code(streams):
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in streams])]).astype(np.int64)
    ops = np.array([op for stream in streams for op in stream], dtype=np.uint8)
    want = []
    for stream in streams:
        text, p = "", 0
        while p < len(stream):
            q = p
            while q < len(stream) and stream[q] == stream[p]:
                q += 1
            text += f"{q - p}{'=XID'[stream[p]]}"
            p = q
        want.append(text)
    assert PackedCigars.from_ops(ops, offsets).tolist() == want
    # The compiled writer of the CPU tracebacks gives the same runs from the reversed stream.
    rooms = [len(stream) for stream in streams]
    room = np.concatenate([[0], np.cumsum(rooms)]).astype(np.int64)
    run_ops = np.zeros(max(int(room[-1]), 1), dtype=np.uint8)
    run_lengths = np.zeros(max(int(room[-1]), 1), dtype=np.int64)
    counts = [write_runs(np.array(stream[::-1], dtype=np.uint8), len(stream),
                         run_ops[room[p]:room[p + 1]], run_lengths[room[p]:room[p + 1]])
              for p, stream in enumerate(streams)]
    assert pack_runs(run_ops, run_lengths, room[:-1], np.array(counts)).tolist() == want
    # The CPU alignment's paths: each stream reversed (a traceback's order) in one buffer with
    # room to spare, as text and as runs.
    buffer = np.full(int(room[-1]) + 3 * len(streams), 9, dtype=np.uint8)
    start = room[:-1] + 3 * np.arange(len(streams))
    for p, stream in enumerate(streams):
        buffer[start[p]:start[p] + len(stream)] = stream[::-1]
    lengths = np.array([len(stream) for stream in streams], dtype=np.int64)
    for serial in (0, len(streams) + 1):  # the loop over all cores, and a path at a time
        with gpualign.config.override(HOST_SERIAL_PATHS=serial):
            assert path_texts(buffer, start, lengths) == want
    runs = path_runs(buffer, start, lengths)
    assert runs == want and runs == PackedCigars.from_ops(ops, offsets)


def test_write_runs_reports_runs_that_do_not_fit():
    run_ops = np.zeros(2, dtype=np.uint8)
    run_lengths = np.zeros(2, dtype=np.int64)
    ops = np.array([0, 1, 0], dtype=np.uint8)  # three runs
    assert write_runs(ops, 3, run_ops, run_lengths) == -1
    assert write_runs(ops, 2, run_ops, run_lengths) == 2
    assert run_ops.tolist() == [1, 0] and run_lengths.tolist() == [1, 1]


def test_packed_replaced_counts_negative_positions_before_checking_twice():
    # -1 and 2 name the same pair of three: replacing it twice is an error, as [2, 2] is.
    packed = PackedCigars.from_strings(["1=", "2X", "3I"])
    with pytest.raises(ValueError, match="replaced twice"):
        packed.replaced([-1, 0, 2], PackedCigars.from_strings(["", "4D", "5="]))
    assert packed.replaced([-1, 0], PackedCigars.from_strings(["7D", "4D"])).tolist() == \
        ["4D", "2X", "7D"]


@settings(max_examples=40, deadline=None)
@given(CIGAR_LISTS, CIGAR_LISTS, st.data())
def test_packed_cigars_cut_and_joined(cigars, more, data):
    packed = PackedCigars.from_strings(cigars)
    runs = np.diff(packed.offsets)
    first = np.array([data.draw(st.integers(0, int(r))) for r in runs], dtype=np.int64)
    end = np.array([data.draw(st.integers(int(f), int(r)))
                    for f, r in zip(first, runs, strict=True)], dtype=np.int64)
    cut = packed.cut(packed.offsets[:-1] + first, packed.offsets[:-1] + end)
    want = [None if c is None else "".join(f"{n}{op}" for n, op in parse_cigar(c)[f:e])
            for c, f, e in zip(cigars, first.tolist(), end.tolist(), strict=True)]
    assert cut == want
    if cigars:
        with pytest.raises(ValueError, match="within its runs"):
            packed.cut(packed.offsets[:-1], packed.offsets[1:] + 1)
    more = (more * (len(cigars) // max(len(more), 1) + 1))[:len(cigars)] if more else \
        [None] * len(cigars)
    joined = PackedCigars.joined([packed, PackedCigars.from_strings(more), packed])
    assert joined == [None if a is None and b is None else (a or "") + (b or "") + (a or "")
                      for a, b in zip(cigars, more, strict=True)]
    with pytest.raises(ValueError, match="as many pairs"):
        PackedCigars.joined([packed, PackedCigars.nones(len(cigars) + 1)])


def test_packed_cigars_of_other_letters_keep_their_class():
    class Letters(PackedCigars):
        letters = "MIDNSHP=X"

    cigars = Letters.from_strings(["5S10M2I3M", None, "", "4H1=1X"])
    assert cigars.ops.tolist() == [4, 0, 1, 0, 5, 7, 8]
    assert cigars.tolist() == ["5S10M2I3M", None, "", "4H1=1X"] and cigars[3] == "4H1=1X"
    for derived in (cigars.take([3, 0]), cigars[1:], Letters.concatenate([cigars, cigars]),
                    cigars.replaced([1], Letters.from_strings(["1M"])),
                    Letters.joined([cigars, cigars]), Letters.nones(2)):
        assert type(derived) is Letters
    assert cigars.take([3, 0]) == ["4H1=1X", "5S10M2I3M"]
    # The same arrays with other letters are other CIGARs.
    assert cigars != PackedCigars(cigars.ops % 4, cigars.lengths, cigars.offsets,
                                  cigars.present)
    with pytest.raises(ValueError, match="cigar_runs reads CIGARs of '=XID'"):
        cigar_runs(cigars)
    # Runs of other letters are not mixed with these, nor read as extended CIGARs.
    with pytest.raises(ValueError, match="Letters.concatenate"):
        Letters.concatenate([PackedCigars.from_strings(["1="])])
    with pytest.raises(ValueError, match="PackedCigars.joined"):
        PackedCigars.joined([cigars])
    with pytest.raises(ValueError, match="Letters.replaced"):
        cigars.replaced([1], PackedCigars.from_strings(["1="]))
    with pytest.raises(ValueError, match="clip_ends"):
        clip_ends(cigars)
    with pytest.raises(ValueError, match="sam_cigars"):
        sam_cigars(cigars, np.zeros(4, dtype=np.int64), np.zeros(4, dtype=np.int64))
    with pytest.raises(ValueError, match="'MIDNSHP=X'"):
        Letters.from_strings(["5Q"])
    with pytest.raises(ValueError, match="Letters runs"):
        Letters([9], [1], [0, 1])


def test_packed_cigars_keep_their_producers_counts():
    # Counts given with the runs (the GPU walk's) are what op_counts returns, unread from the
    # runs; take and concatenate keep them, pairs and all; a wrong shape is refused.
    texts = ["3=1X2I", "", "4D1="]
    packed = PackedCigars.from_strings(texts)
    # Counts that are not the runs' (made up): what comes back is what was given.
    columns = np.arange(12, dtype=np.int64).reshape(3, 4) + 100
    runs = np.arange(12, dtype=np.int64).reshape(3, 4) + 200
    assert op_counts(packed)[0].tolist() != columns.tolist()
    given = PackedCigars(packed.ops, packed.lengths, packed.offsets, counts=(columns, runs))
    assert [a.tolist() for a in op_counts(given)] == [columns.tolist(), runs.tolist()]
    taken = given.take([2, 0])
    assert taken.counts is not None and taken.tolist() == ["4D1=", "3=1X2I"]
    assert [a.tolist() for a in op_counts(taken)] == [a[[2, 0]].tolist() for a in (columns, runs)]
    joined = PackedCigars.concatenate([given, taken])
    assert [a.tolist() for a in op_counts(joined)] == [a[[0, 1, 2, 2, 0]].tolist()
                                                     for a in (columns, runs)]
    assert PackedCigars.concatenate([given, packed]).counts is None  # counted from the runs
    with pytest.raises(ValueError, match="counts"):
        PackedCigars(packed.ops, packed.lengths, packed.offsets, counts=(columns, runs[:2]))


def test_packed_cigars_from_words_unpack_and_check_the_gpu_words():
    words = np.array([3 << 2 | 0, 12 << 2 | 1, 1 << 2 | 3], dtype=np.uint32)
    cigars = PackedCigars.from_words(words, np.array([1, 0, 2]))
    assert cigars == PackedCigars.from_strings(["3=", "", "12X1D"])
    assert cigars.ops.dtype == np.uint8 and cigars.lengths.dtype == np.int64
    with pytest.raises(ValueError, match="length 0"):
        PackedCigars.from_words(np.array([0 << 2 | 1], dtype=np.uint32), np.array([1]))
    with pytest.raises(ValueError, match="add up"):
        PackedCigars.from_words(words, np.array([1, 1]))
    with pytest.raises(ValueError, match="counts"):
        PackedCigars.from_words(words, np.array([1, 0, 2]), counts=(np.zeros((2, 4)),) * 2)
