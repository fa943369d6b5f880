"""Maximal exact matches: against the naive oracle (naive.py) on random inputs, and against
MUMmer 3.23 (``mummer -maxmatch -n``, block by block as sorted sets) on real HIV reads."""

from __future__ import annotations

import doctest
import gzip
import io
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from naive import mems_naive

import gpualign
from gpualign.backend import cuda_status
from gpualign.cli import main
from gpualign.io import read_records
from gpualign.mems import api as mems_api
from gpualign.mems import build_index
from gpualign.mems import index as mems_index

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
DATA = Path(__file__).resolve().parent / "data"
CODES = {c: k for k, c in enumerate("ACGTN")}
COMPLEMENT = {0: 3, 1: 2, 2: 1, 3: 0, 4: 4}
MUMMER = shutil.which("mummer")
CUDA_AVAILABLE, CUDA_REASON = cuda_status()


def encode(text: str) -> list[int]:
    return [CODES.get(c, 4) for c in text.upper()]


def check_against_oracle(references, queries, min_length, backend="cpu", index=None):
    mems = gpualign.find_mems(references if index is None else index, queries,
                              min_length=min_length, strands="both", backend=backend)
    for number, query in enumerate(queries):
        for reverse in (False, True):
            codes = encode(query)
            if reverse:
                codes = [COMPLEMENT[c] for c in reversed(codes)]
            want = mems_naive([encode(r) for r in references], codes, min_length)
            chosen = (mems.query_index == number) & (mems.reverse == reverse)
            got = list(zip(mems.query_pos[chosen].tolist(), mems.reference_index[chosen].tolist(),
                           mems.reference_pos[chosen].tolist(), mems.length[chosen].tolist(),
                           strict=True))
            assert got == want, (references, query, reverse, min_length)


def test_docstring_examples_run():
    for module in (mems_api, mems_index):
        assert doctest.testmod(module, raise_on_error=True).attempted > 0


@pytest.mark.parametrize(("kmer", "page"), [(3, None), (10, None), (3, 9), (10, 16)])
def test_random_against_the_oracle(monkeypatch, kmer, page, backend):
    # k-mer table lookups (min_length >= k) and whole-array searches (min_length < k); one
    # page, or pages of 9 or 16 positions sorted 14 symbols on, so that MEMs run across them.
    monkeypatch.setattr(gpualign.config, "MEM_KMER_SIZE", kmer)
    if page:
        monkeypatch.setattr(gpualign.config, "MEM_PAGE_BASES", page)
        monkeypatch.setattr(gpualign.config, "MEM_PAGE_OVERLAP", 14)
    rng = np.random.default_rng(31)
    for _ in range(120):
        references = ["".join(rng.choice(list("ACGTN" if rng.random() < 0.3 else "ACGT"),
                                         int(rng.integers(0, 40))))
                      for _ in range(int(rng.integers(1, 4)))]
        if not any(references):
            references[0] = "ACGTT"
        queries = ["".join(rng.choice(list("ACGTN"), int(rng.integers(0, 30)),
                                      p=[0.24, 0.24, 0.24, 0.24, 0.04])) for _ in range(3)]
        start = int(rng.integers(0, max(1, len(references[0]))))
        queries[0] = queries[0][:5] + references[0][start:start + 15] + queries[0][5:]
        check_against_oracle(references, queries, int(rng.integers(1, 14)), backend)


@pytest.mark.parametrize("page", [None, 7])
def test_index_against_sorted_suffixes(monkeypatch, page, backend):
    # Suffix arrays (the CPU's libdivsufsort, the GPU's prefix doubling) against sorting the
    # suffixes in Python, and k-mer tables against counting; long repeats need many doubling
    # rounds; pages of 7 positions sorted 5 symbols on keep only their own suffixes.
    monkeypatch.setattr(gpualign.config, "MEM_KMER_SIZE", 2)
    if page:
        monkeypatch.setattr(gpualign.config, "MEM_PAGE_BASES", page)
        monkeypatch.setattr(gpualign.config, "MEM_PAGE_OVERLAP", 5)
    rng = np.random.default_rng(5)
    cases = [["A"], ["ACGT" * 40, "ACGTN" * 9], ["A" * 70], ["N" * 12, ""]]
    cases += [["".join(rng.choice(list(rng.choice(["AC", "ACGT", "ACGTN"])), int(size)))
               for size in rng.integers(0, 50, int(rng.integers(1, 4)))] for _ in range(60)]
    for references in cases:
        index = build_index(references, backend=backend)
        text = index.text.tolist()
        ordered = sorted(range(len(text)), key=lambda position: text[position:])
        assert [page.start for page in index.pages] == list(range(0, len(text), page or
                                                                  len(text)))
        for part in index.pages:
            own = [p - part.start for p in ordered if part.start <= p < part.end]
            window = min(len(text), part.end + (5 if page else 0))
            # within a page, suffixes are ordered by the symbols up to the page's window
            key = [text[part.start + p:window] for p in own]
            got = part.suffix_array.tolist()
            assert sorted(got) == sorted(own)
            assert [text[part.start + p:window] for p in got] == sorted(key), references
            want_rows = np.zeros((16, 2), dtype=np.int64)
            for row, p in enumerate(got):
                kmer = text[part.start + p:part.start + p + 2]
                if len(kmer) == 2 and max(kmer) < 4:
                    code = 4 * kmer[0] + kmer[1]
                    if want_rows[code, 1] == 0:
                        want_rows[code, 0] = row
                    want_rows[code, 1] = row + 1
            assert part.kmer_rows.tolist() == want_rows.tolist(), references


def test_repeats_records_case_and_odd_reads(backend):
    repeat = "ACGTTGCAAGGCTTAACG"
    references = [f"tt{repeat}gg{repeat}{repeat}aNNNN{repeat[:10]}", "", repeat.lower(),
                  "NNNNNNNN"]
    queries = [f"CC{repeat}CC", repeat[:9], "", "N" * 30, f"{repeat}{repeat}{repeat}",
               repeat[::-1], "ACGTTGCAAGGCNTAACG"]
    for min_length in (1, 5, 9, 10, 18, 19, 40):
        check_against_oracle(references, queries, min_length, backend)


@pytest.mark.skipif(MUMMER is None, reason="mummer is not installed (apt-get install mummer)")
@pytest.mark.parametrize("data", ["hiv", "ecoli"])
@pytest.mark.parametrize("options", [["-l", "12"], ["-l", "20", "-b"], ["-l", "50", "-b", "-c"],
                                     ["-l", "20", "-r", "-L"], ["-l", "20", "-F"]])
def test_output_equals_mummer_on_real_reads(tmp_path, capsys, data, options, backend):
    # 800 MiSeq reads vs HIV DQ234790; 2,000 Illumina reads vs the first 10 kb of E. coli
    # MG1655 (FASTQ for gpualign; MUMmer reads FASTA only).
    if data == "hiv":
        reference, reads = EXAMPLES / "hiv_reference.fa", EXAMPLES / "hiv_reads.fa"
        their_reads = reads
    else:
        reference, reads = DATA / "ecoli_10kb.fasta.gz", DATA / "ecoli_reads_2000.fastq.gz"
        their_reads = tmp_path / "reads.fa"
        their_reads.write_text("".join(f">{name}\n{sequence}\n"
                                       for name, sequence in read_records(reads)))
        plain_reference = tmp_path / "reference.fa"
        plain_reference.write_bytes(gzip.decompress(reference.read_bytes()))
    assert main(["mems", str(reference), str(reads), "-q", "--backend", backend, *options]) == 0
    ours = capsys.readouterr().out
    theirs = subprocess.run([MUMMER, "-maxmatch", "-n", *options,
                             str(reference if data == "hiv" else plain_reference),
                             str(their_reads)], capture_output=True, text=True, check=True).stdout

    def blocks(text):
        found, current = {}, None
        for line in text.splitlines():
            if line.startswith(">"):
                current = line
                found[current] = []
            else:
                found[current].append(line)
        return {header: sorted(lines) for header, lines in found.items()}

    ours_blocks, their_blocks = blocks(ours), blocks(theirs)
    assert list(ours_blocks) == list(their_blocks)  # the same headers, in the same order
    assert ours_blocks == their_blocks
    assert sum(len(lines) for lines in ours_blocks.values()) > 100


def test_index_file_round_trip(tmp_path, capsys):
    reference = EXAMPLES / "hiv_reference.fa"
    index_path = tmp_path / "hiv.gpuidx"
    assert main(["index", str(reference), "-o", str(index_path), "-q"]) == 0
    loaded = gpualign.MemIndex.load(index_path)
    built = build_index(reference)
    assert loaded.names == built.names and len(loaded.pages) == len(built.pages) == 1
    assert np.array_equal(loaded.pages[0].suffix_array, built.pages[0].suffix_array)
    reads = EXAMPLES / "hiv_reads.fa"
    assert main(["mems", str(index_path), str(reads), "-l", "30", "-b", "-q"]) == 0
    from_index = capsys.readouterr().out
    assert main(["mems", str(reference), str(reads), "-l", "30", "-b", "-q"]) == 0
    assert capsys.readouterr().out == from_index
    assert main(["mems", str(reference), str(reads), "-l", "30", "--format", "tsv", "-q"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].split("\t") == list(gpualign.cli.MEM_COLUMNS) and len(rows) > 10


def test_bad_input(tmp_path, capsys):
    with pytest.raises(ValueError, match="min_length must be >= 1"):
        gpualign.find_mems(["ACGT"], ["ACGT"], min_length=0)
    with pytest.raises(TypeError, match="min_length must be an integer"):
        gpualign.find_mems(["ACGT"], ["ACGT"], min_length=2.5)
    with pytest.raises(ValueError, match="strands="):
        gpualign.find_mems(["ACGT"], ["ACGT"], strands="plus")
    with pytest.raises(ValueError, match="reference: no records"):
        gpualign.find_mems([], ["ACGT"])
    empty = gpualign.find_mems(["ACGTACGT"], [], min_length=2)
    assert len(empty) == 0 and empty.query_names == []
    not_index = tmp_path / "x.gpuidx"
    not_index.write_bytes(b"not an index")
    with pytest.raises(ValueError, match="not a gpualign MEM index"):
        gpualign.MemIndex.load(not_index)
    missing = tmp_path / "missing.fa"
    assert main(["mems", str(EXAMPLES / "hiv_reference.fa"), str(missing)]) == 2
    assert "missing.fa" in capsys.readouterr().err
    assert main(["mems", str(EXAMPLES / "hiv_reference.fa"), str(missing), "-l", "0"]) == 2


def test_reads_streamed_in_batches(monkeypatch, backend):
    # Tiny batches: reads are found in many batches and their indices stay global.
    reference = EXAMPLES / "hiv_reference.fa"
    reads = EXAMPLES / "hiv_reads.fa"
    whole = gpualign.find_mems(reference, reads, min_length=25, strands="both", backend=backend)
    monkeypatch.setattr(gpualign.config, "MEM_QUERY_BATCH_RESIDUES", 700)
    for source in (reads, [sequence for _, sequence in read_records(reads)]):
        batched = gpualign.find_mems(reference, source, min_length=25, strands="both",
                                     backend=backend)
        for name in ("query_index", "reverse", "query_pos", "reference_index", "reference_pos",
                     "length", "query_lengths"):
            assert getattr(batched, name).tolist() == getattr(whole, name).tolist(), name
    assert batched.query_names == [str(i) for i in range(800)] and len(whole.query_names) == 800


def test_pages_find_what_one_page_finds(monkeypatch, tmp_path, backend):
    # The HIV reference (9.7 kbp) in pages of 1000 positions: the same MEMs as one page, also
    # through an index file; min_length beyond the pages' overlap is refused.
    reference = EXAMPLES / "hiv_reference.fa"
    reads = EXAMPLES / "hiv_reads.fa"
    whole = gpualign.find_mems(reference, reads, min_length=20, strands="both", backend=backend)
    monkeypatch.setattr(gpualign.config, "MEM_PAGE_BASES", 1000)
    monkeypatch.setattr(gpualign.config, "MEM_PAGE_OVERLAP", 64)
    paged = build_index(reference)
    assert len(paged.pages) == 10
    paged.save(tmp_path / "paged.gpuidx")
    for index in (paged, gpualign.MemIndex.load(tmp_path / "paged.gpuidx")):
        found = gpualign.find_mems(index, reads, min_length=20, strands="both",
                                   backend=backend)
        for name in ("query_index", "reverse", "query_pos", "reference_index",
                     "reference_pos", "length"):
            assert getattr(found, name).tolist() == getattr(whole, name).tolist(), name
    with pytest.raises(ValueError, match="supports MEMs of at most 64"):
        gpualign.find_mems(paged, reads, min_length=65, backend=backend)


@pytest.mark.cuda
@pytest.mark.skipif(not CUDA_AVAILABLE, reason=f"CUDA backend unavailable: {CUDA_REASON}")
def test_mummer_text_the_same_on_both_backends():
    # Random MEMs, positions up to 10^9 (wider than MUMmer's 8 columns), names with non-ASCII
    # letters, queries without MEMs, one to three reference records, every output option.
    from gpualign.io import write_mummer

    rng = np.random.default_rng(11)
    for trial in range(60):
        queries, records = int(rng.integers(0, 7)), int(rng.integers(1, 4))
        count = int(rng.integers(0, 40)) if queries else 0
        wide = 10**9 if trial % 4 == 0 else 500
        query_lengths = rng.integers(wide + 300, 2 * wide + 300, queries)
        mems = mems_api.Mems(
            np.sort(rng.integers(0, max(queries, 1), count)), rng.integers(0, 2, count) > 0,
            rng.integers(0, wide, count), rng.integers(0, records, count),
            rng.integers(0, 10**9 if trial % 3 == 0 else 5000, count),
            rng.integers(1, 300, count), [f"read{k}{'é' * (trial % 2)}" for k in range(queries)],
            [f"chr{k}" * int(rng.integers(1, 4)) for k in range(records)], query_lengths)
        for strands in ("forward", "reverse", "both"):
            for options in ({}, {"four_columns": True},
                            {"forward_positions": True, "lengths": True}):
                texts = []
                for backend in ("cpu", "cuda"):
                    out = io.StringIO()
                    write_mummer(out, mems, strands, backend=backend, **options)
                    texts.append(out.getvalue())
                assert texts[0] == texts[1], (trial, strands, options)
                assert texts[0].count(">") == queries * (1 + (strands == "both"))


# Runs the CLI and prints whether Numba was loaded; the stack of its first import goes to
# stderr, to show which module asked for it.
_NUMBA_LOADED = """
import sys, traceback

class Spy:
    def find_spec(self, name, path=None, target=None):
        if name == "numba":
            traceback.print_stack(file=sys.stderr)
        return None

sys.meta_path.insert(0, Spy())
from gpualign.cli import main
code = main(sys.argv[1:])
print("numba" in sys.modules)
sys.exit(code)
"""


def test_modules_of_a_cuda_mems_run_do_not_import_numba():
    # Importing Numba is slow: the CUDA path of find_mems (the backend module api.py and
    # index.py pick for "cuda"), its file reading and its MUMmer writer keep it out (the CPU
    # parts load it when first used).
    code = ("import sys, gpualign, gpualign.cli, gpualign.io, gpualign.mems.api, "
            "gpualign.formats._cuda; from gpualign.mems.index import _backend; "
            "print(_backend('cuda').__name__, 'numba' in sys.modules)")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True)
    assert shown.stdout.split() == ["gpualign.mems._cuda", "False"]


@pytest.mark.cuda
@pytest.mark.skipif(not CUDA_AVAILABLE, reason=f"CUDA backend unavailable: {CUDA_REASON}")
def test_cuda_mems_run_does_not_load_numba(tmp_path):
    out = tmp_path / "mems.txt"
    shown = subprocess.run(
        [sys.executable, "-c", _NUMBA_LOADED, "mems", str(EXAMPLES / "hiv_reference.fa"),
         str(EXAMPLES / "hiv_reads.fa"), "-b", "-q", "--backend", "cuda", "-o", str(out)],
        capture_output=True, text=True, check=True)
    assert shown.stdout.split() == ["False"], shown.stderr
    assert out.read_text().count("Reverse") == 800


def test_index_to_standard_output(tmp_path, capsysbinary, monkeypatch):
    # -o - writes the index's bytes to standard output (as '-' means everywhere else), and
    # refuses a terminal before any work.
    reference = EXAMPLES / "hiv_reference.fa"
    assert main(["index", str(reference), "-o", "-"]) == 0
    captured = capsysbinary.readouterr()
    assert b"-> standard output" in captured.err and not (Path.cwd() / "-").exists()
    (tmp_path / "piped.gpuidx").write_bytes(captured.out)
    loaded = gpualign.MemIndex.load(tmp_path / "piped.gpuidx")
    built = build_index(reference)
    assert np.array_equal(loaded.pages[0].suffix_array, built.pages[0].suffix_array)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(["index", str(reference), "-o", "-"]) == 2
    captured = capsysbinary.readouterr()
    assert captured.out == b"" and captured.err.decode().splitlines() == [
        "gpualign: error: -o -: an index is binary, not for a terminal; give a file name or "
        "redirect standard output"]


@pytest.mark.parametrize("kmer", [1, 2, 5, 10])
def test_every_kmer_size_against_the_oracle(kmer, backend):
    # build_index(kmer_size=k) as given, lookups (min_length >= k) and whole-array searches
    # alike; the default k follows the reference's length (see default_kmer_size).
    rng = np.random.default_rng(kmer)
    for _ in range(40):
        references = ["".join(rng.choice(list("ACGTN"), int(rng.integers(1, 40))))
                      for _ in range(int(rng.integers(1, 3)))]
        queries = ["".join(rng.choice(list("ACGT"), int(rng.integers(0, 30)))) for _ in range(2)]
        queries[0] += references[0][:20]
        index = build_index(references, kmer_size=kmer, backend=backend)
        assert index.kmer_size == kmer and index.pages[0].kmer_rows.shape == (4 ** kmer, 2)
        check_against_oracle(references, queries, int(rng.integers(1, 14)), backend, index)


def test_index_size_follows_the_reference(tmp_path, backend):
    # A 9 kbp genome gets k = 6 (a 64 KiB table, not the 16 MiB of k = 10), and every k finds
    # the same MEMs (l = 9: lookups for k <= 9, the whole suffix array for k = 10).
    reference = EXAMPLES / "hiv_reference.fa"
    reads = [sequence for _, sequence in read_records(EXAMPLES / "hiv_reads.fa")][:200]
    assert main(["index", str(reference), "-o", str(tmp_path / "hiv.gpuidx"), "-q"]) == 0
    assert (tmp_path / "hiv.gpuidx").stat().st_size < 1 << 20
    assert gpualign.MemIndex.load(tmp_path / "hiv.gpuidx").kmer_size == 6
    assert [mems_index.default_kmer_size(4 ** k) for k in range(3, 12)] == [4] * 2 + [
        5, 6, 7, 8, 9, 10, 10]
    found = {}
    for kmer in (None, 1, 4, 8, 10):
        mems = gpualign.find_mems(build_index(reference, kmer_size=kmer, backend=backend), reads,
                                  min_length=9, strands="both", backend=backend)
        found[kmer] = [getattr(mems, name).tolist() for name in (
            "query_index", "reverse", "query_pos", "reference_pos", "length")]
    assert all(value == found[None] for value in found.values()) and len(found[None][0]) > 100
