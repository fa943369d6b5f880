"""Subjects in batches (gpualign.streaming): views of sets, files and iterables read ahead on a
background thread, errors handed over, and early stops that leave no thread behind."""

from __future__ import annotations

import gzip
import re
import threading
import time

import numpy as np
import pytest

import gpualign
from gpualign import streaming
from gpualign.sequences import SequenceSet
from gpualign.streaming import Batch, iter_batches

READER = "gpualign-reader"


# --- helpers ---------------------------------------------------------------------------------


def readers() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == READER}


def wait_until_gone(threads, timeout=3.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(t.is_alive() for t in threads):
            return True
        time.sleep(0.01)
    return False


def contents(batches: list[Batch]):
    """Names and texts of every subject, in order, checking that starts are consecutive."""
    names, texts, start = [], [], 0
    for batch in batches:
        assert isinstance(batch, Batch) and isinstance(batch.sequences, SequenceSet)
        assert batch.start == start and len(batch) == len(batch.sequences) >= 1
        start += len(batch)
        names += batch.sequences.names
        texts += [batch.sequences[i] for i in range(len(batch))]
    return names, texts


def random_set(rng, count, max_length=30, names=None):
    seqs = ["".join("ACGTN"[c] for c in rng.integers(0, 5, int(rng.integers(0, max_length))))
            for _ in range(count)]
    return seqs, SequenceSet.from_sequences(seqs, names=names)


class Counting:
    """An iterable of sequences that counts how many were taken and can fail at one of them."""

    def __init__(self, seqs, fail_at=None):
        self.seqs, self.fail_at, self.taken = seqs, fail_at, 0
        self.finished = threading.Event()

    def __iter__(self):
        for i, seq in enumerate(self.seqs):
            if i == self.fail_at:
                self.finished.set()
                raise RuntimeError(f"source failed at #{i}")
            self.taken += 1
            yield seq
        self.finished.set()


# --- sets in memory: views, first batches doubling -------------------------------------------


def test_docstring_example():
    batches = list(iter_batches(["ACGT", "GG", "TTTT"], batch_residues=5))
    assert [(b.start, len(b)) for b in batches] == [(0, 2), (2, 1)]


@pytest.mark.parametrize("first", [None, 1, 3, 10, 64, 1000])
@pytest.mark.parametrize("batch_residues", [1, 7, 40, 100, 10_000])
def test_set_batches_are_views_with_doubling_first_batches(first, batch_residues):
    rng = np.random.default_rng(batch_residues)
    seqs, subjects = random_set(rng, 120, names=[f"r{i}" for i in range(120)])
    batches = list(iter_batches(subjects, batch_residues=batch_residues, first_residues=first))
    assert contents(batches) == (subjects.names, seqs)
    size = max(1, min(first or batch_residues, batch_residues))
    for k, batch in enumerate(batches):
        codes = batch.sequences.codes
        assert codes.size == 0 or np.shares_memory(codes, subjects.codes)  # a view, no copy
        assert batch.sequences.alphabet is subjects.alphabet
        residues = int(batch.sequences.lengths.sum())
        assert residues <= size or len(batch) == 1, (k, residues, size)
        if k + 1 < len(batches):
            # The batch is as full as the size allows: the next subject would not fit.
            assert residues + subjects.lengths[batch.start + len(batch)] > size, (k, size)
        size = min(batch_residues, 2 * size)


def test_set_batches_subjects_longer_than_a_batch():
    subjects = SequenceSet.from_sequences(["A" * 50, "", "C" * 3, "G" * 70, "T"])
    batches = list(iter_batches(subjects, batch_residues=10))
    # Each long subject fills a batch alone; the empty one joins the next batch.
    assert [(b.start, len(b)) for b in batches] == [(0, 1), (1, 2), (3, 1), (4, 1)]
    assert contents(batches)[1] == ["A" * 50, "", "C" * 3, "G" * 70, "T"]


def test_set_batches_empty_and_all_empty_sequences():
    assert list(iter_batches(SequenceSet.from_sequences([]), batch_residues=4)) == []
    batches = list(iter_batches(SequenceSet.from_sequences(["", "", ""]), batch_residues=4))
    assert [(b.start, len(b)) for b in batches] == [(0, 3)]


def test_set_of_another_alphabet_is_refused_with_its_role():
    proteins = SequenceSet.from_sequences(["MKV"], "protein")
    with pytest.raises(ValueError, match="subjects are encoded as protein, not dna"):
        iter_batches(proteins, "dna")
    assert contents(list(iter_batches(proteins)))[1] == ["MKV"]  # "auto": the set's own
    with pytest.raises(ValueError, match="targets are encoded as protein, not bytes"):
        iter_batches(proteins, "bytes", role="targets")
    assert contents(list(iter_batches(proteins, "protein")))[1] == ["MKV"]


@pytest.mark.parametrize("bad", ["ACGT", b"ACGT"])
def test_plain_str_is_refused(bad):
    with pytest.raises(TypeError, match="subjects: pass a list"):
        iter_batches(bad)
    with pytest.raises(TypeError, match="queries: pass a list"):
        iter_batches(bad, role="queries")


@pytest.mark.parametrize("bad", [42, 1.5, None, object()])
def test_non_iterables_are_refused(bad):
    with pytest.raises(TypeError, match="subjects: expected a SequenceSet"):
        iter_batches(bad)


def test_unknown_alphabet():
    with pytest.raises(ValueError, match="unknown alphabet"):
        iter_batches(["ACGT"], "rna")


# --- files and iterables ---------------------------------------------------------------------


FASTA = "".join(f">s{i} description {i}\n{'ACGTN'[i % 5] * (i % 13)}\nACG\n" for i in range(40))
SEQS = [f"{'ACGTN'[i % 5] * (i % 13)}ACG" for i in range(40)]
NAMES = [f"s{i}" for i in range(40)]


def check_record_batches(batches, batch_residues, names=NAMES, seqs=SEQS):
    assert contents(batches) == (names, seqs)
    for batch in batches[:-1]:
        lengths = batch.sequences.lengths
        # A batch closes as soon as it reaches the limit, so it exceeds it by < one record.
        assert lengths.sum() >= batch_residues and lengths[:-1].sum() < batch_residues


@pytest.mark.parametrize("kind", ["fa", "fa.gz", "fastq", "fq.gz"])
@pytest.mark.parametrize("batch_residues", [1, 10, 50, 1 << 26])
def test_file_batches(tmp_path, kind, batch_residues):
    if kind in ("fa", "fa.gz"):
        text = FASTA
    else:
        text = "".join(f"@{n} x\n{s}\n+\n{'#' * len(s)}\n" for n, s in zip(NAMES, SEQS,
                                                                         strict=True))
    path = tmp_path / f"subjects.{kind}"
    path.write_bytes(gzip.compress(text.encode()) if kind.endswith("gz") else text.encode())
    batches = list(iter_batches(path, batch_residues=batch_residues, first_residues=3))
    check_record_batches(batches, batch_residues)
    if batch_residues == 1 << 26:
        assert len(batches) == 1


@pytest.mark.parametrize("form", ["list", "tuple", "generator", "pairs", "pair generator",
                                  "arrays", "bytes"])
@pytest.mark.parametrize("batch_residues", [1, 10, 50])
def test_iterable_batches(form, batch_residues):
    names = [str(i) for i in range(40)]
    make = {
        "list": lambda: list(SEQS), "tuple": lambda: tuple(SEQS),
        "generator": lambda: (s for s in SEQS),
        "pairs": lambda: list(zip(NAMES, SEQS, strict=True)),
        "pair generator": lambda: ((n, s) for n, s in zip(NAMES, SEQS, strict=True)),
        "arrays": lambda: [np.frombuffer(s.encode(), dtype=np.uint8) for s in SEQS],
        "bytes": lambda: [s.lower().encode() for s in SEQS],
    }[form]
    batches = list(iter_batches(make(), batch_residues=batch_residues))
    check_record_batches(batches, batch_residues, NAMES if "pair" in form else names)


def test_lists_are_read_without_a_thread_and_iterators_with_one():
    before = readers()
    batches = iter_batches(list(SEQS), batch_residues=10)
    next(batches)
    assert readers() == before
    batches.close()
    batches = iter_batches(iter(SEQS), batch_residues=10)
    next(batches)
    started = readers() - before
    assert len(started) == 1 and all(t.daemon for t in started)
    assert len(list(batches)) > 1
    assert wait_until_gone(started)


def test_invalid_symbols_name_the_record_and_wildcards(tmp_path):
    path = tmp_path / "bad.fa"
    # (R was U until issue 20 made DNA read U as T.)
    path.write_text(">ok\nACGT\n>broken read\nACGR\n")
    with pytest.raises(gpualign.InvalidSymbolError, match=r"'broken' \(#1\).*'R' at position 3"):
        list(iter_batches(path))
    assert contents(list(iter_batches(path, invalid="wildcard")))[1] == ["ACGT", "ACGN"]
    with pytest.raises(gpualign.InvalidSymbolError, match=r"'7' \(#7\).*'-' at position 1"):
        list(iter_batches(iter(SEQS[:7] + ["A-"]), batch_residues=5))
    with pytest.raises(gpualign.InvalidSymbolError, match=r"'x' \(#1\)"):
        list(iter_batches([("w", "A"), ("x", "J")], "dna", batch_residues=5))
    batches = list(iter_batches(["MKVJ"], "protein", invalid="wildcard"))
    assert contents(batches)[1] == ["MKVX"]


# --- the read-ahead thread -------------------------------------------------------------------


def test_errors_of_the_source_reach_the_consumer_after_the_batches_before():
    source = Counting(SEQS, fail_at=25)
    received = []
    with pytest.raises(RuntimeError, match="source failed at #25"):
        for batch in iter_batches(source, "dna", batch_residues=10):
            received.append(batch)
    names, _ = contents(received)
    assert names == [str(i) for i in range(len(names))] and 0 < len(names) <= 25


def test_truncated_gzip_raises_sequence_file_error(tmp_path):
    data = gzip.compress("".join(f">r{i}\n{'ACGT' * 30}\n" for i in range(2000)).encode())
    path = tmp_path / "cut.fa.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(gpualign.SequenceFileError, match=re.escape(str(path))):
        list(iter_batches(path, batch_residues=1000))


def test_corrupt_gzip_raises_sequence_file_error(tmp_path):
    # Corrupt deflate data: isal/zlib-ng (dnaio's decompressors) raise their own error types.
    data = gzip.compress("".join(f">r{i}\n{'ACGT' * 50}\n" for i in range(2000)).encode())
    path = tmp_path / "corrupt.fa.gz"
    path.write_bytes(data[:20] + bytes(range(256)) * 4 + data[1044:])
    with pytest.raises(gpualign.SequenceFileError, match=re.escape(str(path)) + ": cannot read"):
        list(iter_batches(path, batch_residues=1000))
    with pytest.raises(gpualign.SequenceFileError, match="cannot read"):
        gpualign.lcs_top("ACGT", path, backend="cpu")


def test_missing_file_raises_sequence_file_error(tmp_path):
    with pytest.raises(gpualign.SequenceFileError, match="no such file"):
        list(iter_batches(tmp_path / "absent.fa"))


def test_read_ahead_is_bounded():
    source = Counting([("A" * 10) for _ in range(1000)])
    # "dna" named: "auto" would read the first records at once to infer it.
    batches = iter_batches(source, "dna", batch_residues=10)  # one record per batch
    next(batches)
    time.sleep(0.3)
    # The first batch, the ones waiting in the queue and the one the reader holds.
    assert source.taken <= 2 + streaming._READ_AHEAD + 1
    batches.close()


@pytest.mark.parametrize("records,fail_at", [
    (10_000, None),  # the reader is still reading when the consumer stops
    (3, None),  # the reader has read everything and waits to hand over the end
    (4, 3),  # the reader failed and waits to hand over the error
])
def test_stopping_early_ends_the_reader(records, fail_at):
    before = readers()
    source = Counting(["ACGT"] * records, fail_at=fail_at)
    batches = iter_batches(source, "dna", batch_residues=4)  # one record per batch
    assert next(batches).sequences[0] == "ACGT"
    started = readers() - before
    assert len(started) == 1
    if records < 10_000:
        assert source.finished.wait(2.0)
        time.sleep(0.2)  # let the reader block on the full queue
    batches.close()
    assert wait_until_gone(started), "the reader thread is still running"


def test_abandoned_iterator_ends_the_reader():
    before = readers()
    batches = iter_batches(Counting(["ACGT"] * 10_000), batch_residues=4)
    next(batches)
    started = readers() - before
    del batches  # garbage-collected: the generator is closed
    assert wait_until_gone(started)


def test_stopping_early_inside_the_lcs_api(tmp_path):
    # An error while the consumer works (a bad query symbol in a later batch is not possible,
    # so a bad subject) stops the stream: no reader is left behind.
    before = readers()
    seqs = ["ACGT"] * 50 + ["AC-T"] + ["ACGT"] * 5000
    with pytest.raises(gpualign.InvalidSymbolError, match=r"#50\)"):
        gpualign.lcs_top("ACGT", iter(seqs), backend="cpu")
    assert wait_until_gone(readers() - before)


# --- SequenceSet.iter_file reads files as iter_batches does ----------------------------------


def test_iter_file_matches_iter_batches(tmp_path):
    path = tmp_path / "subjects.fa.gz"
    path.write_bytes(gzip.compress(FASTA.encode()))
    for batch_residues in (1, 10, 50, 1 << 26):
        sets = list(SequenceSet.iter_file(path, batch_residues=batch_residues))
        assert all(isinstance(s, SequenceSet) for s in sets)
        batches = list(iter_batches(path, batch_residues=batch_residues))
        assert [s.names for s in sets] == [b.sequences.names for b in batches]
        assert [s.codes.tolist() for s in sets] == [b.sequences.codes.tolist() for b in batches]
        starts = np.cumsum([0] + [len(s) for s in sets[:-1]])
        check_record_batches([Batch(int(start), s) for start, s in zip(starts, sets,
                                                                        strict=True)],
                             batch_residues)


def test_iter_file_protein_and_wildcards(tmp_path):
    path = tmp_path / "p.fa"
    path.write_text(">p1\nMKV*\n>p2\nMK1V\n")
    sets = list(SequenceSet.iter_file(path, "protein", batch_residues=3, invalid="wildcard"))
    assert [s.names for s in sets] == [["p1"], ["p2"]]
    assert [s[0] for s in sets] == ["MKV*", "MKXV"]
    with pytest.raises(gpualign.InvalidSymbolError, match=r"'p2' \(#1\).*'1' at position 2"):
        list(SequenceSet.iter_file(path, "protein"))
