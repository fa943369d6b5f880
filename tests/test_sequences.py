"""Alphabets, encoding, SequenceSet construction and FASTA/FASTQ reading."""

from __future__ import annotations

import bz2
import doctest
import gzip
import lzma
import re

import numpy as np
import pytest

import gpualign
from gpualign.formats import _cpu as formats_cpu
from gpualign.sequences import (
    ALPHABETS,
    SequenceSet,
    as_sequence_set,
    encode,
    get_alphabet,
    read_sets,
)


def test_docstring_examples_run():
    import gpualign.backend
    import gpualign.sequences

    for module in (gpualign.sequences, gpualign.backend):
        outcome = doctest.testmod(module)
        assert outcome.attempted > 0 and outcome.failed == 0, module.__name__


# --- alphabets -------------------------------------------------------------------------------


def test_alphabet_sizes_and_match_codes():
    dna, protein, raw = (get_alphabet(name) for name in ("dna", "protein", "bytes"))
    assert (dna.size, dna.match_codes, dna.wildcard) == (5, 4, 4)
    assert dna.symbols == b"ACGTN"
    assert (protein.size, protein.match_codes) == (24, 24)
    assert chr(protein.symbols[protein.wildcard]) == "X"
    assert (raw.size, raw.match_codes, raw.wildcard) == (256, 256, None)


def test_get_alphabet_is_case_insensitive_and_passes_alphabets_through():
    assert get_alphabet("DNA") is ALPHABETS["dna"]
    assert get_alphabet("Protein") is ALPHABETS["protein"]
    assert get_alphabet(ALPHABETS["bytes"]) is ALPHABETS["bytes"]
    assert gpualign.get_alphabet("dna") is ALPHABETS["dna"]


@pytest.mark.parametrize("name", ["rna", "", None, 3])
def test_get_alphabet_rejects_unknown(name):
    with pytest.raises(ValueError, match="unknown alphabet"):
        get_alphabet(name)


def test_decode_gives_canonical_symbols():
    dna = get_alphabet("dna")
    assert dna.decode(np.array([0, 1, 2, 3, 4], dtype=np.uint8)) == "ACGTN"
    assert dna.decode(np.zeros(0, dtype=np.uint8)) == ""


# --- encoding --------------------------------------------------------------------------------


def test_encode_dna_codes_and_lowercase():
    assert encode("ACGTN").tolist() == [0, 1, 2, 3, 4]
    assert encode("acgtn").tolist() == [0, 1, 2, 3, 4]
    assert encode("aCgTn").dtype == np.uint8
    assert encode("").tolist() == []


def test_encode_accepts_bytes_and_uint8_arrays():
    expected = [2, 0, 3, 3, 1]
    assert encode(b"GATTC").tolist() == expected
    assert encode(bytearray(b"gattc")).tolist() == expected
    assert encode(memoryview(b"GATTC")).tolist() == expected
    assert encode(np.frombuffer(b"GATTC", dtype=np.uint8)).tolist() == expected
    assert encode(np.array(b"GATTC")).tolist() == expected  # 0-d bytes array


@pytest.mark.parametrize("bad", [np.array([65, 67], dtype=np.int64),
                                 np.zeros((2, 2), dtype=np.uint8), 5, 1.5, None])
def test_encode_rejects_other_types(bad):
    with pytest.raises(TypeError):
        encode(bad)


def test_encode_protein_and_bytes():
    protein = get_alphabet("protein")
    assert encode("ARNDcq*", "protein").tolist() == [0, 1, 2, 3, 4, 5, 23]
    assert protein.decode(encode("mkv", "protein")) == "MKV"
    assert encode(bytes([0, 65, 97, 255]), "bytes").tolist() == [0, 65, 97, 255]
    # Bytes are taken as they are: no case folding.
    assert encode("aA", "bytes").tolist() == [97, 65]


def test_invalid_symbol_names_record_and_position():
    with pytest.raises(gpualign.InvalidSymbolError) as info:
        encode("ACGTXACZ", "dna", name="read7", index=3)
    message = str(info.value)
    assert "'read7'" in message
    assert "#3" in message
    assert "'X'" in message
    assert "position 4" in message
    assert "2 invalid symbol(s)" in message
    assert isinstance(info.value, ValueError)


def test_invalid_symbol_position_counts_characters_not_utf8_bytes():
    # "é" is one latin-1 character; "€" is not latin-1 and becomes '?': both are one position.
    with pytest.raises(gpualign.InvalidSymbolError, match="position 2"):
        encode("AC€GT", "dna")
    with pytest.raises(gpualign.InvalidSymbolError, match="position 3"):
        encode("ACGé", "dna")


def test_invalid_symbol_in_sequence_set_names_the_record():
    with pytest.raises(gpualign.InvalidSymbolError, match=r"'second' \(#1\).*position 2"):
        SequenceSet.from_sequences(["ACGT", "AC-T"], "dna", names=["first", "second"])
    with pytest.raises(gpualign.InvalidSymbolError, match=r"#2.*position 0"):
        SequenceSet.from_sequences(["A", "C", "ZZ"], "dna")


def test_invalid_wildcard_maps_to_n_and_x():
    assert encode("ACGT-RY", invalid="wildcard").tolist() == [0, 1, 2, 3, 4, 4, 4]
    protein = get_alphabet("protein")
    assert protein.decode(encode("MK1V", "protein", invalid="wildcard")) == "MKXV"
    s = SequenceSet.from_sequences(["AC.T"], invalid="wildcard")
    assert s[0] == "ACNT"


def test_invalid_option_is_checked():
    with pytest.raises(ValueError, match="invalid="):
        encode("ACXT", invalid="skip")


def test_invalid_option_is_checked_even_when_every_symbol_is_valid():
    # A misspelt option must not pass silently just because this input happens to be clean.
    with pytest.raises(ValueError, match="invalid="):
        encode("ACGT", invalid="wildcards")


def test_bytes_alphabet_does_not_confuse_unencodable_characters_with_question_marks():
    # A str character beyond latin-1 has no single byte. Turning it into '?' silently would make
    # "€" equal to "?" (a silent wrong answer); refusing it or encoding it distinctly is fine.
    try:
        euro = encode("A€", "bytes")
    except (ValueError, TypeError):
        return
    assert euro.tolist() != encode("A?", "bytes").tolist()


def test_bytes_alphabet_has_no_invalid_symbols():
    raw = bytes(range(256))
    assert encode(raw, "bytes", invalid="error").tolist() == list(range(256))
    assert encode(raw, "bytes", invalid="wildcard").tolist() == list(range(256))


# --- SequenceSet -----------------------------------------------------------------------------


def test_sequence_set_from_sequences_mixed_inputs():
    s = SequenceSet.from_sequences(
        ["acgt", b"GGN", np.frombuffer(b"T", dtype=np.uint8), ""], names=["a", "b", "c", "d"])
    assert len(s) == 4
    assert s.names == ["a", "b", "c", "d"]
    assert s.lengths.tolist() == [4, 3, 1, 0]
    assert s.offsets.tolist() == [0, 4, 7, 8, 8]
    assert s.codes.tolist() == [0, 1, 2, 3, 2, 2, 4, 3]
    assert s.codes.dtype == np.uint8 and s.offsets.dtype == np.int64
    assert [s[i] for i in range(4)] == ["ACGT", "GGN", "T", ""]
    assert s[-1] == "" and s[-4] == "ACGT"
    assert s.codes_of(1).tolist() == [2, 2, 4]
    assert "4 sequences" in repr(s) and "'dna'" in repr(s)


def test_sequence_set_default_names_and_index_errors():
    s = SequenceSet.from_sequences(["A", "C"])
    assert s.names == ["0", "1"]
    with pytest.raises(IndexError):
        s[2]
    with pytest.raises(IndexError):
        s[-3]


def test_sequence_set_more_names_than_sequences():
    with pytest.raises(ValueError, match="3 names for 2 sequences"):
        SequenceSet.from_sequences(["A", "C"], names=["x", "y", "z"])


def test_sequence_set_fewer_names_than_sequences():
    # The same clear error, not an IndexError from looking up the missing name.
    with pytest.raises(ValueError, match="2 names for 3 sequences"):
        SequenceSet.from_sequences(["A", "C", "G"], names=["x", "y"])


def test_sequence_set_empty():
    s = SequenceSet.from_sequences([])
    assert len(s) == 0
    assert s.codes.tolist() == [] and s.offsets.tolist() == [0]
    assert s.lengths.tolist() == []


def test_sequence_set_constructor_validates_offsets():
    codes = np.zeros(4, dtype=np.uint8)
    with pytest.raises(ValueError, match="one entry more"):
        SequenceSet(codes, np.array([0, 4]), ["a", "b"])
    with pytest.raises(ValueError, match="start at 0"):
        SequenceSet(codes, np.array([1, 4]), ["a"])
    with pytest.raises(ValueError, match="start at 0"):
        SequenceSet(codes, np.array([0, 3]), ["a"])
    with pytest.raises(ValueError, match="non-decreasing"):
        SequenceSet(codes, np.array([0, 3, 2, 4]), ["a", "b", "c"])


def test_take_reorders_repeats_and_empties():
    s = SequenceSet.from_sequences(["ACGT", "", "GG", "TTTAN"], names=["a", "b", "c", "d"])
    t = s.take([3, 0, 3, 1, 2])
    assert t.names == ["d", "a", "d", "b", "c"]
    assert [t[i] for i in range(len(t))] == ["TTTAN", "ACGT", "TTTAN", "", "GG"]
    assert t.lengths.tolist() == [5, 4, 5, 0, 2]
    assert t.alphabet is s.alphabet
    empty = s.take(np.zeros(0, dtype=np.int64))
    assert len(empty) == 0 and empty.codes.tolist() == []


def test_take_random_matches_python_slicing():
    rng = np.random.default_rng(5)
    seqs = ["".join(rng.choice(list("ACGTN"), size=int(n))) for n in rng.integers(0, 40, 50)]
    s = SequenceSet.from_sequences(seqs)
    indices = rng.integers(0, len(seqs), 200)
    t = s.take(indices)
    assert [t[i] for i in range(len(t))] == [seqs[i] for i in indices]


# --- files -----------------------------------------------------------------------------------

FASTA = ">r1 first read\nACGT\nNNac\n>r2\nGGGG\n>r3\n\n>r4\tx\nT\n"
FASTA_EXPECTED = (["r1", "r2", "r3", "r4"], ["ACGTNNAC", "GGGG", "", "T"])
FASTQ = "@q1 desc\nACGTN\n+\nIIIII\n@q2\nac\n+q2\nII\n"


def _contents(s: SequenceSet) -> tuple[list[str], list[str]]:
    return s.names, [s[i] for i in range(len(s))]


@pytest.mark.parametrize("opener,suffix", [(open, ".fa"), (gzip.open, ".fa.gz"),
                                           (bz2.open, ".fa.bz2"), (lzma.open, ".fa.xz")])
def test_from_file_fasta(tmp_path, opener, suffix):
    path = tmp_path / f"reads{suffix}"
    with opener(path, "wt") as out:
        out.write(FASTA)
    assert _contents(SequenceSet.from_file(path)) == FASTA_EXPECTED
    assert _contents(SequenceSet.from_file(str(path))) == FASTA_EXPECTED
    # as_sequence_set reads a Path.
    assert _contents(as_sequence_set(path)) == FASTA_EXPECTED


def test_from_file_fastq(tmp_path):
    path = tmp_path / "reads.fastq"
    path.write_text(FASTQ)
    assert _contents(SequenceSet.from_file(path)) == (["q1", "q2"], ["ACGTN", "AC"])
    gz = tmp_path / "reads.fq.gz"
    gz.write_bytes(gzip.compress(FASTQ.encode()))
    assert _contents(SequenceSet.from_file(gz)) == (["q1", "q2"], ["ACGTN", "AC"])


def test_from_file_protein(tmp_path):
    path = tmp_path / "prot.fa"
    path.write_text(">p\nMKV*\n")
    s = SequenceSet.from_file(path, "protein")
    assert s.alphabet.name == "protein" and s[0] == "MKV*"


@pytest.mark.parametrize("content", [b"", gzip.compress(b"")])
def test_empty_file_gives_empty_set(tmp_path, content):
    path = tmp_path / "empty.fa"
    path.write_bytes(content)
    s = SequenceSet.from_file(path)
    assert len(s) == 0 and s.codes.size == 0
    assert list(SequenceSet.iter_file(path)) == []


def test_truncated_gzip_raises_sequence_file_error(tmp_path):
    data = gzip.compress(("".join(f">r{i}\n{'ACGT' * 30}\n" for i in range(500))).encode())
    path = tmp_path / "cut.fa.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(gpualign.SequenceFileError, match=re.escape(str(path))):
        SequenceSet.from_file(path)


@pytest.mark.parametrize("content", [
    b"hello world\nthis is not a FASTA file\n",
    b"@q1\nACGT\n+\nIII\n",  # FASTQ qualities shorter than the sequence
    bytes(range(256)) * 4,  # binary junk
])
def test_garbage_raises_sequence_file_error(tmp_path, content):
    path = tmp_path / "garbage.fa"
    path.write_bytes(content)
    with pytest.raises(gpualign.SequenceFileError):
        SequenceSet.from_file(path)
    assert issubclass(gpualign.SequenceFileError, ValueError)


def test_missing_file_raises_sequence_file_error(tmp_path):
    with pytest.raises(gpualign.SequenceFileError, match="no such file"):
        SequenceSet.from_file(tmp_path / "absent.fa")


def test_invalid_symbol_in_file_names_the_record(tmp_path):
    path = tmp_path / "bad.fa"
    # (R was U until issue 20 made DNA read U as T.)
    path.write_text(">ok\nACGT\n>broken read\nACGR\n")
    with pytest.raises(gpualign.InvalidSymbolError, match=r"'broken' \(#1\).*'R' at position 3"):
        SequenceSet.from_file(path)
    assert SequenceSet.from_file(path, invalid="wildcard")[1] == "ACGN"


def test_iter_file_batches(tmp_path):
    path = tmp_path / "many.fa"
    seqs = ["ACGTACGTAC"[: 1 + i % 10] for i in range(23)]
    path.write_text("".join(f">s{i}\n{seq}\n" for i, seq in enumerate(seqs)))
    batches = list(SequenceSet.iter_file(path, batch_residues=12))
    assert len(batches) > 3
    names = [name for batch in batches for name in batch.names]
    texts = [batch[i] for batch in batches for i in range(len(batch))]
    assert names == [f"s{i}" for i in range(23)]
    assert texts == seqs
    for batch in batches[:-1]:
        # A batch closes as soon as it reaches the limit, so it exceeds it by < one record.
        assert batch.lengths.sum() >= 12
        assert batch.lengths[:-1].sum() < 12
    whole = list(SequenceSet.iter_file(path))
    assert len(whole) == 1 and whole[0].names == names


def test_read_sets_gives_first_record_index(tmp_path):
    path = tmp_path / "many.fa"
    path.write_text("".join(f">s{i}\n{'ACGT' * (1 + i % 3)}\nAC\n" for i in range(10)))
    sets = list(read_sets(path, batch_residues=15))
    assert [start for start, _ in sets] == np.cumsum([0] + [len(s) for _, s in sets[:-1]]).tolist()
    assert [s.names for _, s in sets] == [s.names for s in SequenceSet.iter_file(path,
                                                                                 batch_residues=15)]
    path.write_text(">a\nACGT\n>b\nACGT\n>c\nAXGT\n")
    with pytest.raises(gpualign.InvalidSymbolError, match=r"'c' \(#2\).*'X' at position 1"):
        list(read_sets(path, batch_residues=4))


def test_unknown_parser_is_refused(tmp_path):
    path = tmp_path / "reads.fa"
    path.write_text(">a\nACGT\n")
    with pytest.raises(ValueError, match="unknown file-format backend 'auto': expected 'cpu' or"
                                         " 'cuda'"):
        SequenceSet.from_file(path, parser="auto")


def test_as_sequence_set_refuses_plain_str_and_bytes(tmp_path):
    with pytest.raises(TypeError, match="queries: pass a list"):
        as_sequence_set("ACGT", role="queries")
    with pytest.raises(TypeError, match="not a single bytes"):
        as_sequence_set(b"ACGT")


def test_as_sequence_set_passes_sets_through_and_encodes_lists():
    s = SequenceSet.from_sequences(["ACGT"])
    assert as_sequence_set(s) is s
    t = as_sequence_set(("ac", b"GT"), "dna")
    assert _contents(t) == (["0", "1"], ["AC", "GT"])
    assert as_sequence_set(iter(["A", "C"])).lengths.tolist() == [1, 1]
    assert as_sequence_set([], "protein").alphabet.name == "protein"


# --- the compiled FASTA reader ---------------------------------------------------------------

_QUIRKS = [
    # (file content, whether the compiled parser reads all of it)
    (b">a x\r\nAC \r\n\r\nGT\n>b\n\n>\nAC>GT\n>c\ty\nacgtn\n", True),
    (b"\n\n>a\nAC\n>b desc\nGGG", True),
    (b">a\nACGT\n>b\nA\tC\n>c\nGG\n", False),  # tab inside a sequence: dnaio from b on
    (b">a\nAC\n>b\xc3\xa9\nGG\n", False),  # not ASCII: dnaio, which refuses it
    (b"@r1 x\nACGT\n+\nIIII\n@r2\nAC\n+\nII\n", False),  # FASTQ
    (b"", True),
]


@pytest.mark.parametrize(("content", "fast"), _QUIRKS)
@pytest.mark.parametrize(("block", "chunk"), [(3, 1 << 20), (1 << 20, 1 << 20), (1 << 20, 4)])
def test_compiled_fasta_reader_equals_dnaio(tmp_path, monkeypatch, content, fast, block, chunk,
                                            backend):
    # Blocks of 3 bytes put every record across block borders; chunks of 4 bytes parse every
    # record of a block on its own thread (CPU parser).
    from gpualign import io

    monkeypatch.setattr(io, "_BLOCK", block)
    monkeypatch.setattr(formats_cpu, "CHUNK", chunk)
    suffix = ".fq" if content.startswith(b"@") else ".fa"
    for path in (tmp_path / f"x{suffix}", tmp_path / f"x{suffix}.gz"):
        path.write_bytes(gzip.compress(content) if path.suffix == ".gz" else content)
        try:
            want = list(io.read_records(path))
        except io.SequenceFileError as exc:
            with pytest.raises(io.SequenceFileError, match=re.escape(str(exc)[-30:])):
                list(io.read_packed(path, 5, backend))
            continue
        got = []
        for names, sequences, offsets in io.read_packed(path, 5, backend):
            got += [(name, sequences[offsets[k]:offsets[k + 1]].decode("latin-1"))
                    for k, name in enumerate(names)]
        assert got == want
        parsed: list[int] = []
        list(io._fasta_blocks(path, parsed, backend))
        assert (sum(parsed) == len(want)) == fast or not want


def test_long_records_are_left_to_dnaio(tmp_path):
    from gpualign import io

    path = tmp_path / "genome.fa"
    path.write_text(">chr1 x\n" + "ACGTN" * 30000 + "\n>chr2\nAC\n")
    parsed: list[int] = []
    assert list(io._fasta_blocks(path, parsed)) == [] and parsed == []
    (names, sequences, offsets), = io.read_packed(path, 1 << 20)
    assert names == ["chr1", "chr2"] and offsets.tolist() == [0, 150000, 150002]
    assert sequences == ("ACGTN" * 30000 + "AC").encode()


def test_compiled_fasta_reader_on_many_reads(tmp_path, monkeypatch, backend):
    # 3,000 random reads, multi-line, in blocks of 1 KiB and chunks of 100 bytes: the same as
    # dnaio, batch by batch.
    from gpualign import io
    from gpualign.streaming import iter_batches

    monkeypatch.setattr(io, "_BLOCK", 1024)
    monkeypatch.setattr(formats_cpu, "CHUNK", 100)
    rng = np.random.default_rng(5)
    records = [(f"read{k}", "".join(rng.choice(list("ACGTN"), int(rng.integers(0, 200)))))
               for k in range(3000)]
    path = tmp_path / "reads.fa"
    path.write_text("".join(f">{name} sample\n{seq[:60]}\n{seq[60:]}\n" for name, seq in records))
    batches = [batch.sequences
               for batch in iter_batches(path, "dna", batch_residues=5000, parser=backend)]
    assert [name for batch in batches for name in batch.names] == [n for n, _ in records]
    assert [batch[k] for batch in batches for k in range(len(batch))] == [s for _, s in records]
    assert all(batch.lengths[:-1].sum() < 5000 <= batch.lengths.sum() for batch in batches[:-1])
