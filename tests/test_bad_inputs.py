"""Bad input files: every command stops with exit status 2 and one line naming the file, the
Python API with a ValueError subclass naming it (issue 20)."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import random
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import gpualign
from gpualign import MemIndex, Scoring, SequenceFileError, SequenceSet, build_index
from gpualign.cli import main
from gpualign.io import read_records
from gpualign.map.index import MapIndex
from gpualign.mems.index import MAX_KMER_SIZE, default_kmer_size
from gpualign.search import Database

FASTA = "".join(f">r{number}\n{'ACGTTGCAAC' * 12}\n" for number in range(300)).encode()


def _random_bytes(size: int) -> bytes:
    return random.Random(size).randbytes(size)


def _index_bytes(tmp_path: Path) -> bytes:
    path = tmp_path / "whole.gpuidx"
    build_index(["ACGTTGCA" * 40, "TTGACCA" * 30], backend="cpu").save(path)
    return path.read_bytes()


def _map_index_bytes(tmp_path: Path) -> bytes:
    path = tmp_path / "whole.gpumap"
    MapIndex.build(["ACGTTGCA" * 40, "TTGACCA" * 30], k=5, w=3).save(path)
    return path.read_bytes()


def _database_bytes(tmp_path: Path) -> bytes:
    path = tmp_path / "whole.gpudb"
    Database.from_sequences(["MKVLAAGIVGAW", "MEEPQSDPSV"]).save(path)
    return path.read_bytes()


#: Bad files: name -> (bytes of the file, made in tmp_path; a fragment of the message). The
#: name's extension is part of the case (xopen picks bzip2/xz by it).
BAD_FILES: dict[str, tuple[Callable[[Path], bytes], str]] = {
    "random.fa": (lambda tmp: _random_bytes(3000), "not FASTA/FASTQ text"),
    "random": (lambda tmp: _random_bytes(3000), "not a FASTA/FASTQ file"),
    "reads.bam": (lambda tmp: gzip.compress(b"BAM\x01" + _random_bytes(500)),
                  "BAM/CRAM is not supported: convert with samtools fasta"),
    "reads.cram": (lambda tmp: b"CRAM\x03\x00" + _random_bytes(500),
                   "BAM/CRAM is not supported: convert with samtools fasta"),
    "empty.fa.gz": (lambda tmp: b"", "empty file, not gzip data"),
    "empty.fa.xz": (lambda tmp: b"", "empty file, not xz data"),
    "cut.fa.gz": (lambda tmp: gzip.compress(FASTA)[:400], "cannot read"),
    "cut.fa.bz2": (lambda tmp: bz2.compress(FASTA)[:400], "cannot read"),
    "cut.fa.xz": (lambda tmp: lzma.compress(FASTA)[:400], "cannot read"),
    "cut.fq": (lambda tmp: b"@q1\nACGT\n+\nIIII\n@q2\nACGT\n+\n", "Premature end of file"),
    "cut.gpuidx": (lambda tmp: _index_bytes(tmp)[:1000], "gpualign MEM index"),
    "cut.gpumap": (lambda tmp: _map_index_bytes(tmp)[:1000], "map index"),
    "cut.gpudb": (lambda tmp: _database_bytes(tmp)[:100], "gpualign search database"),
}

GOOD = [("g0", "ACGTTGCAACGTAGGCTA"), ("g1", "TTGACCAGTACCATGACG")]

#: Where each command takes a sequence file: the arguments, with BAD and GOOD to fill in.
COMMANDS = [
    ["edit", "BAD", "GOOD", "--all-vs-all"],
    ["edit", "GOOD", "BAD", "--all-vs-all"],
    ["align", "BAD", "GOOD", "--all-vs-all"],
    ["align", "GOOD", "BAD", "--all-vs-all"],
    ["allpairs", "BAD"],
    ["allpairs", "GOOD", "BAD"],
    ["lcs", "BAD", "GOOD"],
    ["lcs", "GOOD", "BAD"],
    ["lcs", "GOOD", "BAD", "--all"],
    ["mems", "BAD", "GOOD"],
    ["mems", "GOOD", "BAD"],
    ["index", "BAD", "-o", "OUT"],
    ["index", "BAD", "-o", "OUT", "--kind", "map"],
    ["map", "BAD", "GOOD"],
    ["map", "GOOD", "BAD"],
    ["map", "GOOD", "GOOD", "BAD"],
    ["search", "BAD", "GOOD"],
    ["search", "GOOD", "BAD"],
    ["makedb", "BAD", "-o", "OUT"],
]


def _bad_file(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    path.write_bytes(BAD_FILES[name][0](tmp_path))
    return path


def _good_file(tmp_path: Path) -> Path:
    path = tmp_path / "good.fa"
    path.write_text("".join(f">{name}\n{sequence}\n" for name, sequence in GOOD))
    return path


def _error_line(capsys: pytest.CaptureFixture, argv: list[str]) -> str:
    """The one line a failed command writes on standard error (exit status 2)."""
    assert main([*argv, "-q", "--backend", "cpu"]) == 2, argv
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert err.startswith("gpualign: error: "), err
    return err


@pytest.mark.parametrize("command", COMMANDS, ids=lambda argv: "-".join(argv).lower())
@pytest.mark.parametrize("name", BAD_FILES)
def test_every_command_reports_a_bad_file_in_one_line(tmp_path, capsys, name, command):
    bad, good = _bad_file(tmp_path, name), _good_file(tmp_path)
    paths = {"BAD": str(bad), "GOOD": str(good), "OUT": str(tmp_path / "out.gpuidx")}
    err = _error_line(capsys, [paths.get(arg, arg) for arg in command])
    assert f"{bad}: " in err and BAD_FILES[name][1] in err, err


@pytest.mark.parametrize("command", COMMANDS, ids=lambda argv: "-".join(argv).lower())
def test_every_command_reports_an_unreadable_path(tmp_path, capsys, command):
    good, folder = _good_file(tmp_path), tmp_path / "folder.fa"
    folder.mkdir()
    paths = {"BAD": str(folder), "GOOD": str(good), "OUT": str(tmp_path / "out.gpuidx")}
    err = _error_line(capsys, [paths.get(arg, arg) for arg in command])
    assert f"{folder}: is a directory" in err
    if hasattr(os, "geteuid") and os.geteuid() != 0:  # root reads any file
        locked = tmp_path / "locked.fa"
        locked.write_bytes(good.read_bytes())
        locked.chmod(0)
        paths["BAD"] = str(locked)
        err = _error_line(capsys, [paths.get(arg, arg) for arg in command])
        assert f"{locked}: cannot open: Permission denied" in err


@pytest.mark.parametrize("command", [["align", "GOOD", "GOOD"], ["allpairs", "GOOD"]])
@pytest.mark.parametrize("content", [_random_bytes(300), b"\x91 A C\nA 1 0\nC 0 1\n",
                                     b"  A  C\nA 1 0\n"], ids=["binary", "cp1252", "rows"])
def test_a_bad_matrix_file_is_named(tmp_path, capsys, command, content):
    matrix = tmp_path / "MYMATRIX"
    matrix.write_bytes(content)
    good = str(_good_file(tmp_path))
    err = _error_line(capsys, [good if arg == "GOOD" else arg for arg in command]
                      + ["--matrix", str(matrix)])
    assert f"{matrix}: not an NCBI substitution matrix (" in err, err


# --- the Python API ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", BAD_FILES)
def test_sequence_files_raise_sequence_file_error(tmp_path, name):
    bad = _bad_file(tmp_path, name)
    message = rf"^{re.escape(str(bad))}: .*{re.escape(BAD_FILES[name][1])}"
    for read in (SequenceSet.from_file, lambda path: list(SequenceSet.iter_file(path)),
                 lambda path: list(read_records(path))):
        with pytest.raises(SequenceFileError, match=message):
            read(bad)
    assert issubclass(SequenceFileError, ValueError)


def test_a_directory_is_not_a_sequence_file(tmp_path):
    with pytest.raises(SequenceFileError, match=f"^{re.escape(str(tmp_path))}: is a directory"):
        SequenceSet.from_file(tmp_path)


def test_valid_compressed_empty_files_still_hold_no_records(tmp_path):
    """Only an empty file named as compressed is an error: compressed nothing is no records."""
    for name, compress in (("a.fa.gz", gzip.compress), ("a.fa.bz2", bz2.compress),
                           ("a.fa.xz", lzma.compress)):
        path = tmp_path / name
        path.write_bytes(compress(b""))
        assert len(SequenceSet.from_file(path)) == 0


def test_mem_index_load_errors(tmp_path):
    whole = _index_bytes(tmp_path)
    cut = tmp_path / "cut.gpuidx"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ValueError, match=rf"^{re.escape(str(cut))}: damaged gpualign MEM index"):
        MemIndex.load(cut)
    fasta = tmp_path / "ref.fa"
    fasta.write_text(">r\nACGT\n")
    with pytest.raises(ValueError, match=rf"^{re.escape(str(fasta))}: not a gpualign MEM index"):
        MemIndex.load(fasta)
    with pytest.raises(FileNotFoundError):
        MemIndex.load(tmp_path / "missing.gpuidx")
    with np.load(tmp_path / "whole.gpuidx") as data:
        arrays = dict(data)
    arrays["format"] = np.array([99])
    other = tmp_path / "other.gpuidx"
    with open(other, "wb") as handle:
        np.savez(handle, **arrays)
    with pytest.raises(ValueError, match="of format 99, this version reads format 2: rebuild"):
        MemIndex.load(other)


@pytest.mark.parametrize("kmer_size", [-1, 0, MAX_KMER_SIZE + 1])
def test_build_index_kmer_size_bounds(kmer_size):
    with pytest.raises(ValueError, match=f"kmer_size must be from 1 to {MAX_KMER_SIZE} "
                                         rf"\(got {kmer_size}\)"):
        build_index(["ACGTACGT"], kmer_size=kmer_size, backend="cpu")


def test_build_index_kmer_size_values():
    with pytest.raises(TypeError, match="kmer_size must be an integer"):
        build_index(["ACGTACGT"], kmer_size=2.5, backend="cpu")
    index = build_index(["ACGTACGTTTGA"], kmer_size=3, backend="cpu")
    assert index.kmer_size == 3 and index.pages[0].kmer_rows.shape == (4 ** 3, 2)
    # None: the default for the reference's size (a small reference, a small table).
    assert build_index(["ACGT"], backend="cpu").kmer_size == default_kmer_size(4)
    mems = gpualign.find_mems(index, ["TTACGTACGTTTGAT"], min_length=5, strands="forward",
                              backend="cpu")
    assert (mems.query_pos.tolist(), mems.length.tolist()) == ([1, 2], [5, 12])


def test_matrix_file_errors_name_the_file(tmp_path):
    binary = tmp_path / "binary.mat"
    binary.write_bytes(b"\x91\x00" + _random_bytes(100))
    with pytest.raises(ValueError, match=rf"^{re.escape(str(binary))}: not an NCBI substitution "
                                         r"matrix \(byte 0x91 at offset 0 is not UTF-8 text\)"):
        Scoring.from_file(binary)
    huge = tmp_path / "huge.mat"
    huge.write_text("  A  C\nA 1 0\nC 0 99999999999\n")
    with pytest.raises(ValueError, match="score beyond int32"):
        Scoring.from_file(huge)


@pytest.mark.parametrize("option,value,message", [
    ("--top", "-1", "argument --top: must be >= 1, got -1"),
    ("--top", "0", "argument --top: must be >= 1, got 0"),
])
def test_option_messages_state_the_true_bound(tmp_path, capsys, option, value, message):
    good = str(_good_file(tmp_path))
    assert main(["lcs", good, good, option, value]) == 2
    assert message in capsys.readouterr().err


#: Every command that writes a file, with IN standing for the input that -o names too (a FASTA
#: file, or a substitution matrix after --matrix).
OUTPUT_IS_INPUT = [
    ["edit", "IN", "GOOD"],
    ["edit", "GOOD", "IN"],
    ["align", "IN", "GOOD"],
    ["align", "GOOD", "IN"],
    ["align", "GOOD", "GOOD", "--matrix", "IN"],
    ["allpairs", "IN"],
    ["allpairs", "GOOD", "IN"],
    ["allpairs", "GOOD", "--matrix", "IN"],
    ["lcs", "IN", "GOOD"],
    ["lcs", "GOOD", "IN"],
    ["mems", "IN", "GOOD"],
    ["mems", "GOOD", "IN"],
    ["index", "IN"],
    ["index", "IN", "--kind", "map"],
    ["map", "IN", "GOOD"],
    ["map", "GOOD", "IN"],
    ["map", "GOOD", "GOOD", "IN"],
    ["search", "IN", "GOOD"],
    ["search", "GOOD", "IN"],
    ["search", "GOOD", "GOOD", "--matrix", "IN"],
    ["makedb", "IN"],
]


@pytest.mark.parametrize("link", [False, True], ids=["file", "link"])
@pytest.mark.parametrize("command", OUTPUT_IS_INPUT, ids=lambda argv: "-".join(argv).lower())
def test_every_command_refuses_an_output_that_is_an_input(tmp_path, capsys, command, link):
    """-o naming an input (or a link to it) would empty that file before it is read, or
    replace it after."""
    good = _good_file(tmp_path)
    given = tmp_path / ("in.mat" if "--matrix" in command else "in.fa")
    given.write_text("   A  C  G  T\nA  1 -1 -1 -1\nC -1  1 -1 -1\nG -1 -1  1 -1\n"
                     "T -1 -1 -1  1\n" if "--matrix" in command else good.read_text())
    before = given.read_bytes()
    output = tmp_path / "link" if link else given
    if link:
        output.symlink_to(given)
    paths = {"IN": str(given), "GOOD": str(good)}
    err = _error_line(capsys, [*(paths.get(arg, arg) for arg in command), "-o", str(output)])
    assert f"{output}: the output file is the input {given}; " in err, err
    assert given.read_bytes() == before and good.read_text().count(">") == len(GOOD)


@pytest.mark.parametrize("previous", [None, "@HD\tVN:1.6\nearlier run\n"], ids=["new", "kept"])
@pytest.mark.parametrize("command", [["map", "GOOD", "BAD"], ["map", "GOOD", "GOOD", "BAD"]],
                         ids=["reads", "mates"])
def test_map_leaves_no_output_when_an_input_is_bad(tmp_path, capsys, command, previous):
    """The SAM header is written before READS and MATES are read: a bad one must leave no
    header-only file, nor damage the previous one."""
    paths = {"BAD": str(_bad_file(tmp_path, "cut.fa.gz")), "GOOD": str(_good_file(tmp_path))}
    output = tmp_path / "out.sam"
    if previous is not None:
        output.write_text(previous)
    _error_line(capsys, [*(paths.get(arg, arg) for arg in command), "-o", str(output)])
    assert (output.read_text() if output.exists() else None) == previous
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(
        ["cut.fa.gz", "good.fa", *(["out.sam"] if previous else [])])


def test_map_replaces_the_file_that_a_link_names(tmp_path, capsys):
    good = _good_file(tmp_path)
    (tmp_path / "old.sam").write_text("earlier run\n")
    (tmp_path / "old.sam").chmod(0o640)
    (tmp_path / "link.sam").symlink_to(tmp_path / "old.sam")
    assert main(["map", str(good), str(good), "-o", str(tmp_path / "link.sam"), "-q",
                 "--backend", "cpu"]) == 0
    assert (tmp_path / "link.sam").is_symlink()
    assert (tmp_path / "old.sam").read_text().startswith("@HD")
    assert (tmp_path / "old.sam").stat().st_mode & 0o777 == 0o640
    assert sorted(path.name for path in tmp_path.iterdir()) == ["good.fa", "link.sam", "old.sam"]
