"""Record names: the ID (the header up to its first white space) and the description, the same
from dnaio and from both compiled FASTA parsers; empty names (the record's number, in TSV and
SAM alike); repeated names (kept, refused or renamed, in the API and on the command line)."""

from __future__ import annotations

import gzip
import warnings
from pathlib import Path

import numpy as np
import pytest

import gpualign
from gpualign import config, io
from gpualign.cli import main
from gpualign.formats import NAME_HASH_FACTOR, NAME_HASH_SEED, name_hashes
from gpualign.formats import _cpu as formats_cpu
from gpualign.sequences import SequenceSet, read_sets

# Headers with spaces, tabs, several blanks, leading blanks, a carriage return and nothing.
HEADERS = ["a desc  with  blanks ", "b\tx\ty", "c", "  d lead", "e \t ", "f x\r", "", "\tg",
           "h \t\r", "i  \t  j k\t"]
WANT = [("a", "desc  with  blanks"), ("b", "x\ty"), ("c", ""), ("d", "lead"), ("e", ""),
        ("f", "x"), ("6", ""), ("g", ""), ("h", ""), ("i", "j k")]


def _fasta(headers: list[str]) -> bytes:
    return "".join(f">{header}\nAC\nGT\n" for header in headers).encode()


def _fastq(headers: list[str]) -> bytes:
    return "".join(f"@{header}\nACGT\n+\nIIII\n" for header in headers).encode()


def _write(path: Path, content: bytes) -> Path:
    path.write_bytes(gzip.compress(content) if path.suffix == ".gz" else content)
    return path


@pytest.mark.parametrize("name", ["x.fa", "x.fa.gz", "x.fq", "x.fq.gz"])
def test_id_and_description_as_samtools(tmp_path, name, backend, monkeypatch):
    # Chunks of 8 bytes: the CPU parser reads every record on a thread of its own.
    monkeypatch.setattr(formats_cpu, "CHUNK", 8)
    content = (_fastq if ".fq" in name else _fasta)(HEADERS)
    path = _write(tmp_path / name, content)
    assert [(n, d) for n, d, _ in io.read_records(path, descriptions=True)] == WANT
    assert [n for n, _ in io.read_records(path)] == [n for n, _ in WANT]
    got = SequenceSet.from_file(path, parser=backend)
    assert list(zip(got.names, got.descriptions, strict=True)) == WANT
    assert got[0] == "ACGT"
    batches = list(io.read_packed(path, 4, backend, descriptions=True))
    assert len(batches) == len(WANT)
    assert [(n, d) for names, notes, _, _ in batches
            for n, d in zip(names, notes, strict=True)] == WANT
    if ".fa" in name:  # the compiled parser read all of it, not dnaio
        parsed: list[int] = []
        list(io._fasta_blocks(path, parsed, backend))
        assert sum(parsed) == len(WANT)


@pytest.mark.parametrize(("header", "want"), [
    ("b\x0bc d", [("b", "c d", "ACGT")]),  # white space to str.split, not to dnaio's id
    ("b c\rA", [("b", "c", "AACGT")]),  # dnaio ends a FASTA line at a carriage return
    ("b\r\r", [("b", "", "ACGT")]),
])
def test_parser_hands_unusual_headers_to_dnaio(tmp_path, backend, header, want):
    path = _write(tmp_path / "x.fa", _fasta(["a x", header]))
    want = [("a", "x", "ACGT"), *want]
    assert list(io.read_records(path, descriptions=True)) == want
    got = SequenceSet.from_file(path, parser=backend)
    assert list(zip(got.names, got.descriptions, map(got.__getitem__, range(2)),
                    strict=True)) == want
    parsed: list[int] = []
    list(io._fasta_blocks(path, parsed, backend))
    assert parsed == [1]  # the first record only: dnaio reads the other


def test_descriptions_follow_the_records():
    s = SequenceSet.from_sequences(["AC", "GT", "TT"], names=["a", "b", "c"])
    assert s.descriptions == ["", "", ""]  # the constructor takes no descriptions: ""
    s = SequenceSet(s.codes, s.offsets, s.names, "dna", ["x", "", "z"])
    assert s.take([2, 0]).descriptions == ["z", "x"]
    assert s.view(1, 3).descriptions == ["", "z"]
    with pytest.raises(ValueError, match="2 descriptions for 3 names"):
        SequenceSet(s.codes, s.offsets, s.names, "dna", ["x", "y"])


# --- duplicates in the API -------------------------------------------------------------------


DUPLICATED = [">a one\nAC\n", ">b\nGG\n", ">a two\nTT\n", ">a.2\nCC\n", ">a\nAA\n", ">\nA\n",
              ">5\nG\n"]


@pytest.fixture
def duplicated(tmp_path: Path) -> Path:
    return _write(tmp_path / "dup.fa", "".join(DUPLICATED).encode())


def test_api_keeps_duplicates_by_default(duplicated, backend):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = SequenceSet.from_file(duplicated, parser=backend)
    assert s.names == ["a", "b", "a", "a.2", "a", "5", "5"]
    assert s.descriptions == ["one", "", "two", "", "", "", ""]


@pytest.mark.parametrize("batch_residues", [1, 1 << 20])
def test_api_refuses_duplicates(duplicated, batch_residues):
    message = (f"{duplicated}: records #0 and #2 have the same name 'a'; names must be unique "
               "(use duplicates='rename')")
    with pytest.raises(io.DuplicateNameError, match=f"^{message}$".replace("(", r"\(")
                       .replace(")", r"\)")):
        list(read_sets(duplicated, batch_residues=batch_residues, duplicates="error"))
    with pytest.raises(gpualign.io.SequenceFileError, match="records #0 and #2"):
        list(io.read_records(duplicated, duplicates="error"))


@pytest.mark.parametrize("batch_residues", [1, 3, 1 << 20])
def test_api_renames_duplicates_uniquely(duplicated, batch_residues, backend):
    # The later 'a' become a.2 and a.3, so the file's own a.2 (read after a.2 was given) gets
    # a.2.2; the empty name is '5', so the record named 5 becomes 5.2. However the file is cut.
    want = ["a", "b", "a.2", "a.2.2", "a.3", "5", "5.2"]
    with pytest.warns(io.DuplicateNameWarning) as caught:
        names = [name for _, s in read_sets(duplicated, batch_residues=batch_residues,
                                            parser=backend, duplicates="rename")
                 for name in s.names]
    assert names == want
    assert len(caught) == 1
    assert str(caught[0].message) == (
        f"{duplicated}: records #0 and #2 have the same name 'a': #2 renamed 'a.2'; later "
        "repeats of any name are renamed likewise (NAME.N)")
    with pytest.warns(io.DuplicateNameWarning):
        assert [n for n, _ in io.read_records(duplicated, duplicates="rename")] == want


def test_config_sets_the_default_and_bad_values_are_refused(duplicated):
    with config.override(DUPLICATE_NAMES="error"), pytest.raises(io.DuplicateNameError):
        SequenceSet.from_file(duplicated)
    with config.override(DUPLICATE_NAMES="error"):  # an explicit argument wins
        assert len(SequenceSet.from_file(duplicated, duplicates="keep")) == 7
    with pytest.raises(ValueError, match="duplicates='drop': expected one of 'keep', 'error'"):
        SequenceSet.from_file(duplicated, duplicates="drop")


def test_many_repeats_of_one_name(tmp_path):
    path = _write(tmp_path / "r.fa", b"".join(b">r\nA\n" for _ in range(1000)))
    with pytest.warns(io.DuplicateNameWarning):
        s = SequenceSet.from_file(path, duplicates="rename")
    assert s.names[:3] == ["r", "r.2", "r.3"] and s.names[-1] == "r.1000"
    assert len(set(s.names)) == 1000


def _hash_of(name: bytes) -> int:
    """The name hash of :mod:`gpualign.formats`, a byte at a time (the reference)."""
    value = NAME_HASH_SEED
    for byte in name:
        value = (value * NAME_HASH_FACTOR + byte) % (1 << 64)
    return value


def test_name_hashes_are_the_loop_they_document():
    names = [b"read1", b"", b"x" * 300, "caf\u00e9".encode(), b"read2", b"a"]
    data = np.frombuffer(b"".join(names), dtype=np.uint8)
    offsets = np.cumsum([0, *map(len, names)])
    assert name_hashes(data, offsets).tolist() == [_hash_of(name) for name in names]


def _parser(backend: str):
    if backend == "cuda":
        from gpualign.formats import _cuda

        return _cuda
    return formats_cpu


def test_parsers_hash_names_as_numpy(backend, monkeypatch):
    monkeypatch.setattr(formats_cpu, "CHUNK", 64)  # several chunks on parallel threads
    names = [f"r{k}" for k in range(300)] + ["x" * 200, "a.b|c", "r1"]
    raw = "".join(f">{name} d\nACGT\n" for name in names).encode()
    parsed, _, _, _, _, unusual, hashes = _parser(backend).parse_block(raw, True, True)
    assert parsed == names and not unusual
    assert hashes.tolist() == sorted(_hash_of(name.encode()) for name in names)
    assert _parser(backend).parse_block(raw, True)[-1] is None  # not asked for: not sorted


@pytest.mark.parametrize("duplicates", ["error", "rename"])
def test_equal_hashes_are_compared_by_name(duplicates):
    # Every name gets the same hash: only the names themselves tell a repeat.
    same = np.zeros(3, dtype=np.uint64)
    settled = io._Names("x.fa", duplicates)
    assert settled.batch(["a", "b", "c"], np.arange(3, dtype=np.uint64)) == ["a", "b", "c"]
    assert settled.seen is None  # distinct hashes: no name compared
    assert settled.batch(["d", "e", "f"], same) == ["d", "e", "f"]
    if duplicates == "error":
        with pytest.raises(io.DuplicateNameError, match="records #1 and #7 have the same "
                                                        "name 'b'"):
            settled.batch(["g", "b", "h"], same)
    else:
        with pytest.warns(io.DuplicateNameWarning, match="#7 renamed 'b.2'"):
            assert settled.batch(["g", "b", "h"], same) == ["g", "b.2", "h"]


@pytest.mark.parametrize("duplicates", ["error", "rename"])
@pytest.mark.parametrize("name", ["many.fa", "many.fq"])
def test_repeats_found_across_many_blocks(tmp_path, backend, monkeypatch, duplicates, name):
    # FASTA in blocks of 4 KiB (the compiled parsers hash the names), FASTQ in dnaio's chunks
    # of 4096 records (NumPy hashes them): many batches, their hashes merged into runs; the
    # repeat of record #17 comes last.
    monkeypatch.setattr(io, "_BLOCK", 1 << 12)
    names = [f"read{k}" for k in range(5000)] + ["read17", "read4999", "last"]
    path = _write(tmp_path / name, (_fastq if name.endswith(".fq") else _fasta)(names))
    if duplicates == "error":
        with pytest.raises(io.DuplicateNameError, match="records #17 and #5000 have the same"):
            SequenceSet.from_file(path, parser=backend, duplicates="error")
        return
    with pytest.warns(io.DuplicateNameWarning):
        got = SequenceSet.from_file(path, parser=backend, duplicates="rename").names
    with pytest.warns(io.DuplicateNameWarning):
        assert got == [name for name, _ in io.read_records(path, duplicates="rename")]
    assert got[-3:] == ["read17.2", "read4999.2", "last"]


def test_runs_stay_few_and_sorted():
    settled = io._Names("x.fa", "error")
    for first in range(0, 10_000, 100):
        block = [f"n{k}" for k in range(first, first + 100)]
        assert settled.batch(block) == block
    assert settled.seen is None and len(settled.runs) <= 8
    assert all(np.all(run[1:] > run[:-1]) for run in settled.runs)
    hashes = np.concatenate(settled.runs).tolist()
    assert sorted(hashes) == sorted(_hash_of(f"n{k}".encode()) for k in range(10_000))
    with pytest.raises(io.DuplicateNameError, match="records #123 and #10001"):
        settled.batch(["m", "n123"])


# --- duplicates in memory --------------------------------------------------------------------


def test_names_given_in_memory_are_settled_as_a_files():
    sequences = ["AC", "GT", "TT", "CC"]
    kept = SequenceSet.from_sequences(sequences, names=["a", "b", "a", ""])
    assert kept.names == ["a", "b", "a", ""]  # "keep", the default: as given
    with pytest.raises(io.DuplicateNameError,
                       match=r"^names: records #0 and #2 have the same name 'a'; names must "
                             r"be unique \(use duplicates='rename'\)$"):
        SequenceSet.from_sequences(sequences, names=["a", "b", "a", ""], duplicates="error")
    with pytest.warns(io.DuplicateNameWarning, match="^names: records #0 and #2 .* #2 renamed "
                                                     "'a.2'"):
        renamed = SequenceSet.from_sequences(sequences, names=["a", "b", "a", "3"],
                                             duplicates="rename")
    assert renamed.names == ["a", "b", "a.2", "3"]
    with config.override(DUPLICATE_NAMES="error"), pytest.raises(io.DuplicateNameError):
        SequenceSet.from_sequences(sequences, names=["a", "b", "c", "b"])


@pytest.mark.parametrize("form", [list, iter])
def test_named_subjects_in_memory_follow_the_setting(backend, form):
    # (name, sequence) pairs streamed in batches of one: repeats found across batches.
    pairs = [("a", "ACGT"), ("b", "AC"), ("a", "ACGA")]
    with config.override(DUPLICATE_NAMES="keep", LCS_CPU_BATCH_RESIDUES=1,
                         LCS_GPU_BATCH_RESIDUES=1, LCS_GPU_FIRST_BATCH_RESIDUES=1):
        top = gpualign.lcs_top("ACGT", form(pairs), 3, backend=backend)
        assert top.name == ["a", "a", "b"]
    with config.override(DUPLICATE_NAMES="error", LCS_CPU_BATCH_RESIDUES=1,
                         LCS_GPU_BATCH_RESIDUES=1, LCS_GPU_FIRST_BATCH_RESIDUES=1):
        with pytest.raises(io.DuplicateNameError, match="^subjects: records #0 and #2 have "
                                                        "the same name 'a'"):
            gpualign.lcs_top("ACGT", form(pairs), 3, backend=backend)
    with config.override(DUPLICATE_NAMES="rename"), pytest.warns(io.DuplicateNameWarning):
        top = gpualign.lcs_top("ACGT", form(pairs), 3, backend=backend)
    assert top.name == ["a", "a.2", "b"]


# --- empty names: TSV and SAM ----------------------------------------------------------------


def test_empty_names_are_numbers_in_tsv_and_sam(tmp_path, capsys):
    queries = _write(tmp_path / "q.fa", b">\nACGT\n>q1\nACGA\n")
    targets = _write(tmp_path / "t.fa", b">t0\nACGT\n> \nACGA\n")
    assert main(["align", str(queries), str(targets), "--task", "path", "-q", "--backend",
                 "cpu"]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()[1:]]
    assert [row[:2] for row in rows] == [["0", "t0"], ["q1", "1"]]
    assert main(["align", str(queries), str(targets), "--format", "sam", "-q", "--backend",
                 "cpu"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if line.startswith("@SQ")] == ["@SQ\tSN:t0\tLN:4",
                                                                 "@SQ\tSN:1\tLN:4"]
    records = [line.split("\t") for line in lines if not line.startswith("@")]
    assert [(r[0], r[2]) for r in records] == [("0", "t0"), ("q1", "1")]


# --- duplicates on the command line ----------------------------------------------------------


def _commands(tmp_path: Path, dup: Path) -> dict[str, list[str]]:
    """Every command that reads records, with the file of repeated names in each role."""
    other = _write(tmp_path / "other.fa", b">x\nACGTACGTACGTACGTACGTACGT\n>y\nTTTTGGGGCCCCAAAA\n"
                                           b">z\nACGTACGTACGTACGTACGTACGT\n")
    base = ["--backend", "cpu"]
    return {
        "edit queries": ["edit", str(dup), str(other), *base],
        "edit targets": ["edit", str(other), str(dup), *base],
        "align targets": ["align", str(other), str(dup), *base],
        "allpairs": ["allpairs", str(dup), "--min-identity", "0.5", *base],
        "lcs query": ["lcs", str(dup), str(other), *base],
        "lcs subjects": ["lcs", str(other), str(dup), *base],
        "lcs --all subjects": ["lcs", str(other), str(dup), "--all", *base],
        "mems reference": ["mems", str(dup), str(other), "-l", "4", *base],
        "mems reads": ["mems", str(other), str(dup), "-l", "4", *base],
        "index": ["index", str(dup), "-o", str(tmp_path / "dup.gpuidx"), *base],
    }


COMMANDS = ["edit queries", "edit targets", "align targets", "allpairs", "lcs query",
            "lcs subjects", "lcs --all subjects", "mems reference", "mems reads", "index"]


@pytest.mark.parametrize("command", COMMANDS)
def test_cli_refuses_duplicates(tmp_path, capsys, command):
    dup = _write(tmp_path / "dup.fa", b">a\nACGTACGTAC\n>b\nGGGGTTTT\n>a desc\nACGTACGTAA\n")
    argv = _commands(tmp_path, dup)[command]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err == (f"gpualign: error: {dup}: records #0 and #2 have the same name "
                            "'a'; names must be unique (use --rename-duplicates)\n")
    assert captured.out == ""


@pytest.mark.parametrize("command", COMMANDS)
def test_cli_renames_duplicates_with_one_warning(tmp_path, capsys, command):
    dup = _write(tmp_path / "dup.fa", b">a\nACGTACGTAC\n>b\nGGGGTTTT\n>a desc\nACGTACGTAA\n")
    argv = _commands(tmp_path, dup)[command]
    assert main([*argv, "--rename-duplicates", "-q"]) == 0
    captured = capsys.readouterr()
    assert captured.err == (f"gpualign: warning: {dup}: records #0 and #2 have the same name "
                            "'a': #2 renamed 'a.2'; later repeats of any name are renamed "
                            "likewise (NAME.N)\n")
    if command.startswith(("lcs subjects", "lcs --all", "edit targets")):
        assert "\ta.2\t" in captured.out
    if command == "mems reads":
        assert "> a.2\n" in captured.out


def test_sam_never_has_duplicate_sq_lines(tmp_path, capsys):
    queries = _write(tmp_path / "q.fa", b">r\nACGTACGT\n>r\nACGAACGT\n>s\nACGT\n")
    targets = _write(tmp_path / "t.fa", b">chr\nACGTACGT\n>chr\nACGAACGT\n>chr.2\nACGT\n")
    argv = ["align", str(queries), str(targets), "--format", "sam", "-q", "--backend", "cpu"]
    assert main(argv) == 2
    assert "records #0 and #1 have the same name 'r'" in capsys.readouterr().err
    assert main([*argv, "--rename-duplicates"]) == 0
    captured = capsys.readouterr()
    sq = [line for line in captured.out.splitlines() if line.startswith("@SQ")]
    assert sq == ["@SQ\tSN:chr\tLN:8", "@SQ\tSN:chr.2\tLN:8", "@SQ\tSN:chr.2.2\tLN:4"]
    names = [line.split("\t")[0] for line in captured.out.splitlines()
             if not line.startswith("@")]
    assert names == ["r", "r.2", "s"]
    assert captured.err.count("gpualign: warning:") == 2  # one line per file


def _records_of(batches):
    """``(name, sequence, quality)`` of every record of ``io.read_record_batches``' batches, as
    ``io.read_records`` gives them (quality None in FASTA)."""
    return [(name, sequences[offsets[k]:offsets[k + 1]].tobytes().decode(),
             None if qualities is None else
             qualities[offsets[k]:offsets[k + 1]].tobytes().decode())
            for names, sequences, offsets, qualities in batches
            for k, name in enumerate(names)]


@pytest.mark.parametrize("block", [23, 1000, 1 << 25])
@pytest.mark.parametrize("variant", ["plain", "plus names", "crlf", "no last newline",
                                     "tabs and spaces"])
def test_fastq_batches_of_the_compiled_parser_equal_dnaio(tmp_path, monkeypatch, block,
                                                          variant):
    # Blocks that end inside records; the records the compiled parser leaves to dnaio (a
    # name after "+", a carriage return, white space in a sequence) from the first one on.
    from gpualign.formats import _cpu as formats

    monkeypatch.setattr(io, "_BLOCK", block)
    rng = np.random.default_rng(4)
    lines = []
    for k in range(60):
        sequence = "".join(rng.choice(list("ACGTNacgtRY"), int(rng.integers(0, 40))))
        quality = "".join(chr(c) for c in rng.integers(33, 127, len(sequence)))
        plus = f"+r{k} note {k}" if variant == "plus names" and k == 37 else "+"
        if variant == "tabs and spaces" and k == 41:
            sequence, quality = sequence + " A", quality + "II"
        header = f"  r{k} note {k}" if k == 2 else f"r{k} note {k}"  # white space first
        lines.append(f"@{header}\n{sequence}\n{plus}\n{quality}\n")
    text = "".join(lines)
    if variant == "crlf":
        text = text.replace("\n", "\r\n")
    if variant == "no last newline":
        text = text[:-1]
    path = tmp_path / "reads.fq"
    path.write_bytes(text.encode())
    parsed = []
    parse = formats.parse_fastq_block
    monkeypatch.setattr(formats, "parse_fastq_block",
                        lambda *args: parsed.append(parse(*args)) or parsed[-1])
    want = list(io.read_records(path, qualities=True))
    assert _records_of(io.read_record_batches(path, 16)) == want
    compiled = sum(len(found[0]) for found in parsed)
    left = variant in ("plus names", "crlf", "tabs and spaces")
    assert compiled == ({"plus names": 37, "crlf": 0, "tabs and spaces": 41}[variant] if left
                        else 60)


@pytest.mark.parametrize("text, name", [
    ("@a\nAC\n+\nII\n@b\nAC\n+\nIII\n", "reads.fq"),  # a quality too long
    ("@a\nAC\n+\nII\n@b\n\n+\n", "reads.fq"),  # cut short after "+"
    ("@a\nAC\n+\nII\n@b\n\n+\n\n", "reads.fq"),  # an empty read: read
    ("@a\nAC\n+\nII\n@b\nAC\n+\nII\n", "reads.fa"),  # FASTQ named as FASTA: refused
    (">a\nAC\n>b\nGT\n", "reads.fq"),  # FASTA named as FASTQ: read
])
def test_record_batches_read_and_refuse_what_dnaio_does(tmp_path, text, name):
    # The compiled parser takes no record that dnaio would not (dnaio picks the format by
    # the file's name first, as read_records does): the same records, or the same error
    # naming the same record.
    path = tmp_path / name
    path.write_text(text)

    def outcome(read):
        try:
            return read()
        except io.SequenceFileError as error:
            return str(error)

    want = outcome(lambda: list(io.read_records(path, qualities=True)))
    assert outcome(lambda: _records_of(io.read_record_batches(path, 1))) == want


@pytest.mark.parametrize("size", [1, 3, 5000])
def test_record_batches_equal_the_records_one_by_one(tmp_path, monkeypatch, size):
    # The batch reader of the mapper's reads gives read_records' names (empty, tabbed and
    # non-printable headers; repeats renamed), sequences and qualities, in batches of `size`
    # over chunks of 7 records; a file that breaks off names the same last record.
    monkeypatch.setattr(io, "_CHUNK_RECORDS", 7)
    headers = ["r1 x", "", "a\tb c", "dup", "dup", "na\x07me z", "  lead", "x/1"] * 3
    fastq = tmp_path / "reads.fq.gz"
    with gzip.open(fastq, "wt") as out:
        for k, header in enumerate(headers):
            out.write(f"@{header}\n{'ACGTN'[k % 5] * (k + 1)}\n+\n{'I' * (k + 1)}\n")
    fasta = tmp_path / "reads.fa"
    fasta.write_text("".join(f">{h}\nAC\nGT\n" for h in headers))
    for path in (fastq, fasta):
        want = list(io.read_records(path, qualities=True, duplicates="rename"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", io.DuplicateNameWarning)
            got = list(io.read_record_batches(path, size, duplicates="rename"))
        assert all(len(names) == min(size, len(headers)) for names, *_ in got[:-1])
        assert _records_of(got) == want
    broken = tmp_path / "broken.fq"
    broken.write_text("@a\nAC\n+\nII\n@b\nAC\n+\nI\n")
    with pytest.raises(io.SequenceFileError) as one_by_one:
        list(io.read_records(broken))
    with pytest.raises(io.SequenceFileError) as batches:
        list(io.read_record_batches(broken, size))
    assert str(batches.value) == str(one_by_one.value) and "after record #0" in str(batches.value)
