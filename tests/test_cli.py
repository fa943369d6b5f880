"""The ``gpualign`` command line: output table, all-vs-all, errors and exit codes, --quiet;
``gpualign edit`` and ``gpualign lcs``.

Most tests call :func:`gpualign.cli.main` in-process (fast: Numba functions stay compiled); one
runs the installed module in a subprocess to check the real exit status and stderr.
"""

from __future__ import annotations

import doctest
import gzip
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from naive import rescore_alignment
from rapidfuzz.distance import LCSseq

import gpualign
from gpualign.align import api as align_api
from gpualign.allpairs import cluster
from gpualign.backend import cuda_status
from gpualign.cigar import cigar_lengths, count_ops, parse_cigar
from gpualign.cli import ALIGN_COLUMNS, EDIT_COLUMNS, LCS_ALL_COLUMNS, LCS_TOP_COLUMNS, main
from gpualign.io import read_records

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
HIV_READS = EXAMPLES / "hiv_reads.fa"
HIV_REFERENCE = EXAMPLES / "hiv_reference.fa"
RDP_GENES = EXAMPLES / "rdp16s_1000.fa.gz"
DATA = Path(__file__).resolve().parent / "data"
RDP16S = DATA / "rdp16s_200.fasta.gz"  # 200 real 16S sequences; 8 hold N, K or Y
UNIPROT = DATA / "uniprot_200.fasta.gz"  # 200 real proteins

QUERIES = [("q0", "ACGTACGT"), ("q1", "ACGT"), ("q2", "GGGGGGGGGG")]
TARGETS = [("t0", "ACGTTCGT"), ("t1", "TTACCTTT"), ("t2", "ACGTACGT")]


def write_fasta(path: Path, records: list[tuple[str, str]]) -> Path:
    path.write_text("".join(f">{name} description\n{seq}\n" for name, seq in records))
    return path


def read_tsv(path: Path, columns: tuple[str, ...] = EDIT_COLUMNS) -> list[dict[str, str]]:
    lines = path.read_text().splitlines()
    assert tuple(lines[0].split("\t")) == columns
    return [dict(zip(columns, line.split("\t"), strict=True)) for line in lines[1:]]


def check_cigar(row: dict[str, str], query: str, target: str) -> None:
    """The CIGAR spans the query and target[start:end], costs the distance, and = columns match."""
    start, end, distance = int(row["target_start"]), int(row["target_end"]), int(row["distance"])
    assert 0 <= start <= end <= len(target)
    ops = parse_cigar(row["cigar"])
    assert cigar_lengths(ops) == (len(query), end - start)
    assert count_ops(row["cigar"], "XID") == distance
    qi, ti = 0, start
    for n, op in ops:
        if op in "=X":
            for a, b in zip(query[qi:qi + n].upper(), target[ti:ti + n].upper(), strict=True):
                assert (a == b and a in "ACGT") == (op == "="), (row, a, b)
        qi += n if op in "=XI" else 0
        ti += n if op in "=XD" else 0


@pytest.fixture
def pair_files(tmp_path: Path) -> tuple[Path, Path]:
    return write_fasta(tmp_path / "q.fa", QUERIES), write_fasta(tmp_path / "t.fa", TARGETS)


@pytest.fixture
def hiv_subset(tmp_path: Path) -> Path:
    """50 of the bundled MiSeq reads (real data; reads 700-749, of which 22 lie within 25 edits
    of the reference), as a FASTA file."""
    lines = HIV_READS.read_text().splitlines(keepends=True)[1400:1500]
    path = tmp_path / "reads50.fa"
    path.write_text("".join(lines))
    return path


def test_pairwise_global_to_file(pair_files, tmp_path, capsys):
    queries, targets = pair_files
    out = tmp_path / "out.tsv"
    assert main(["edit", str(queries), str(targets), "-o", str(out), "--backend", "cpu"]) == 0
    rows = read_tsv(out)
    assert [(r["query"], r["target"]) for r in rows] == [("q0", "t0"), ("q1", "t1"), ("q2", "t2")]
    expected = gpualign.edit_distance([s for _, s in QUERIES], [s for _, s in TARGETS],
                                      backend="cpu").distance.tolist()
    assert [int(r["distance"]) for r in rows] == expected == [1, 5, 8]
    assert all(r["target_start"] == r["target_end"] == r["cigar"] == "*" for r in rows)
    captured = capsys.readouterr()
    assert captured.out == ""
    # A progress bar may come first (shown when the run outlasts a second); the summary is last.
    summary = captured.err.strip().splitlines()[-1].split("\r")[-1]
    assert summary.startswith("gpualign edit: 3 pairs") and "backend cpu" in summary


def test_pairwise_k_path_to_stdout(pair_files, capsys):
    queries, targets = pair_files
    assert main(["edit", str(queries), str(targets), "-k", "2", "--mode", "infix",
                 "--task", "path", "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    lines = captured.out.splitlines()
    assert tuple(lines[0].split("\t")) == EDIT_COLUMNS
    rows = [dict(zip(EDIT_COLUMNS, line.split("\t"), strict=True)) for line in lines[1:]]
    # q0 in t0: 1 mismatch; q1 in t1: 1 edit (ACCT); q2 over k: -1 and nothing else.
    assert [r["distance"] for r in rows] == ["1", "1", "-1"]
    for row, (_, query), (_, target) in zip(rows[:2], QUERIES, TARGETS, strict=False):
        check_cigar(row, query, target)
    assert rows[2]["target_start"] == rows[2]["target_end"] == rows[2]["cigar"] == "*"


def test_locations_task_has_no_cigar(pair_files, capsys):
    queries, targets = pair_files
    assert main(["edit", str(queries), str(targets), "--mode", "prefix", "--task",
                 "locations", "-q"]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()[1:]]
    assert all(row[3] == "0" and row[5] == "*" for row in rows)  # prefix alignments start at 0


def test_all_vs_all_dense_and_sparse(pair_files, tmp_path):
    queries, targets = pair_files
    q_seqs, t_seqs = [s for _, s in QUERIES], [s for _, s in TARGETS]
    dense = gpualign.edit_distance_matrix(q_seqs, t_seqs, mode="infix", backend="cpu")

    out = tmp_path / "all.tsv"
    assert main(["edit", str(queries), str(targets), "--all-vs-all", "--mode", "infix",
                 "-o", str(out), "-q"]) == 0
    rows = read_tsv(out)
    assert len(rows) == len(QUERIES) * len(TARGETS)
    got = {(r["query"], r["target"]): int(r["distance"]) for r in rows}
    assert got == {(q, t): int(dense[i, j]) for i, (q, _) in enumerate(QUERIES)
                   for j, (t, _) in enumerate(TARGETS)}

    assert main(["edit", str(queries), str(targets), "--all-vs-all", "--mode", "infix",
                 "-k", "1", "--task", "path", "-o", str(out), "-q"]) == 0
    rows = read_tsv(out)
    assert {(r["query"], r["target"]) for r in rows} == {
        (q, t) for (q, t), d in got.items() if d <= 1}
    queries_by_name, targets_by_name = dict(QUERIES), dict(TARGETS)
    for row in rows:
        assert int(row["distance"]) == got[row["query"], row["target"]]
        check_cigar(row, queries_by_name[row["query"]], targets_by_name[row["target"]])


def test_hiv_reads_infix_search(hiv_subset, tmp_path, backend):
    """The README's read example on 50 real reads: every hit has a consistent CIGAR."""
    out = tmp_path / "hits.tsv"
    assert main(["edit", str(hiv_subset), str(HIV_REFERENCE), "--all-vs-all", "--mode", "infix",
                 "-k", "25", "--task", "path", "--invalid", "wildcard", "--backend", backend,
                 "-o", str(out), "-q"]) == 0
    rows = read_tsv(out)
    reads = gpualign.SequenceSet.from_file(hiv_subset)
    reference = gpualign.SequenceSet.from_file(HIV_REFERENCE, invalid="wildcard")
    distances = gpualign.edit_distance_matrix(reads, reference, mode="infix", backend="cpu")
    within = {reads.names[i] for i in np.flatnonzero(distances[:, 0] <= 25)}
    assert {r["query"] for r in rows} == within
    assert len(within) >= 10  # real reads: most forward-strand reads are found
    by_name = {name: reads[i] for i, name in enumerate(reads.names)}
    for row in rows:
        assert row["target"] == "DQ234790"
        assert int(row["distance"]) == distances[reads.names.index(row["query"]), 0]
        check_cigar(row, by_name[row["query"]], reference[0])


def test_reference_iupac_codes_are_an_error_by_default(hiv_subset, capsys):
    assert main(["edit", str(hiv_subset), str(HIV_REFERENCE), "--all-vs-all"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpualign: error: ") and "DQ234790" in err
    assert "position 929" in err and "--invalid wildcard" in err


# (R was U until issue 20 made DNA read U as T.)
@pytest.mark.parametrize("sequence, position", [("ACGTXACGT", 4), ("ACGR", 3)])
def test_invalid_symbol_names_record_and_position(tmp_path, capsys, sequence, position):
    queries = write_fasta(tmp_path / "q.fa", [("good", "ACGT"), ("bad_read", sequence)])
    targets = write_fasta(tmp_path / "t.fa", [("t0", "ACGT"), ("t1", "ACGT")])
    assert main(["edit", str(queries), str(targets)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err
    assert err.startswith("gpualign: error: ") and err.count("\n") == 1
    assert str(queries) in err and "bad_read" in err and f"position {position}" in err
    assert "Traceback" not in err
    # --invalid wildcard reads the symbol as N, which matches nothing.
    assert main(["edit", str(queries), str(targets), "--invalid", "wildcard", "-q"]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()[1:]]
    assert int(rows[1][2]) >= 1


def test_protein_and_bytes_alphabets(tmp_path, capsys):
    queries = write_fasta(tmp_path / "q.fa", [("p", "MKVLAW")])
    targets = write_fasta(tmp_path / "t.fa", [("t", "MKILAW")])
    # Protein letters are not DNA (--alphabet dna named since issue 20 infers the alphabet).
    assert main(["edit", str(queries), str(targets), "--alphabet", "dna"]) == 2
    assert "dna alphabet" in capsys.readouterr().err
    for alphabet in ("auto", "protein", "bytes"):
        assert main(["edit", str(queries), str(targets), "--alphabet", alphabet, "-q"]) == 0
        assert capsys.readouterr().out.splitlines()[1].split("\t")[:3] == ["p", "t", "1"]


def test_missing_file(pair_files, tmp_path, capsys):
    queries, _ = pair_files
    missing = tmp_path / "missing.fa"
    assert main(["edit", str(queries), str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpualign: error: ") and str(missing) in err and "no such file" in err


def test_mismatched_counts(tmp_path, capsys):
    queries = write_fasta(tmp_path / "q.fa", QUERIES)
    targets = write_fasta(tmp_path / "t.fa", TARGETS[:2])
    assert main(["edit", str(queries), str(targets)]) == 2
    err = capsys.readouterr().err
    assert "3 records" in err and "2 records" in err and "--all-vs-all" in err
    # ... which --all-vs-all accepts.
    assert main(["edit", str(queries), str(targets), "--all-vs-all", "-q"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1 + 3 * 2


def test_truncated_gzip(tmp_path, capsys):
    records = "".join(f">r{i}\n{'ACGT' * 50}\n" for i in range(2000))
    whole = gzip.compress(records.encode())
    truncated = tmp_path / "truncated.fa.gz"
    truncated.write_bytes(whole[: len(whole) // 2])
    good = tmp_path / "good.fa.gz"
    good.write_bytes(whole)
    assert main(["edit", str(good), str(truncated), "--all-vs-all", "-k", "0", "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpualign: error: ") and str(truncated) in err
    assert main(["edit", str(good), str(good), "-k", "0", "-q"]) == 0  # the whole file reads


def test_corrupt_gzip(tmp_path, capsys):
    """Corrupt deflate data (isal/zlib-ng raise their own errors, not OSError) is an input error
    naming the file, not a traceback."""
    whole = gzip.compress("".join(f">r{i}\n{'ACGT' * 50}\n" for i in range(2000)).encode())
    corrupt = tmp_path / "corrupt.fa.gz"
    corrupt.write_bytes(whole[:20] + bytes(range(256)) * 4 + whole[1044:])
    good = write_fasta(tmp_path / "q.fa", [("q", "ACGT")])
    for queries, targets in ((good, corrupt), (corrupt, good)):
        assert main(["edit", str(queries), str(targets), "--all-vs-all", "-q"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"gpualign: error: {corrupt}: cannot read") and err.count("\n") == 1


def test_bad_options_exit_2(pair_files, capsys):
    queries, targets = pair_files
    assert main(["edit", str(queries), str(targets), "-k", "-1"]) == 2
    assert "must be >= 0" in capsys.readouterr().err
    assert main(["edit", str(queries), str(targets), "--mode", "local"]) == 2
    assert main([]) == 2
    assert main(["--help"]) == 0
    assert "edit" in capsys.readouterr().out


def test_output_folder_missing(pair_files, tmp_path, capsys):
    queries, targets = pair_files
    out = tmp_path / "no" / "such" / "out.tsv"
    assert main(["edit", str(queries), str(targets), "-o", str(out)]) == 2
    assert "gpualign: error: " in capsys.readouterr().err and not out.exists()


@pytest.mark.skipif(cuda_status()[0], reason="a CUDA device is present")
def test_cuda_unavailable(pair_files, capsys):
    queries, targets = pair_files
    assert main(["edit", str(queries), str(targets), "--backend", "cuda"]) == 2
    assert "unavailable" in capsys.readouterr().err


def test_empty_files_give_an_empty_table(tmp_path, capsys):
    empty = tmp_path / "empty.fa"
    empty.write_text("")
    assert main(["edit", str(empty), str(empty), "-q"]) == 0
    assert capsys.readouterr().out.splitlines() == ["\t".join(EDIT_COLUMNS)]


def test_subprocess_exit_status_and_quiet(hiv_subset, tmp_path):
    """The real process: status 0 with a table and one summary line; status 2 without a
    traceback; --quiet leaves stderr empty."""
    out = tmp_path / "hits.tsv"
    command = [sys.executable, "-m", "gpualign.cli", "edit", str(hiv_subset), str(HIV_REFERENCE),
               "--all-vs-all", "--mode", "infix", "-k", "25", "--invalid", "wildcard",
               "--backend", "cpu", "-o", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and "50 x 1 all-vs-all" in done.stderr
    assert len(read_tsv(out)) >= 10

    done = subprocess.run(command + ["--quiet"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and done.stderr == ""

    done = subprocess.run(command[:5] + [str(tmp_path / "missing.fa")], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 2
    assert done.stderr.startswith("gpualign: error: ") and "Traceback" not in done.stderr


@pytest.mark.parametrize(("argv", "imported"), [
    (["--help"], []), (["--version"], []), (["mems", "--help"], ["gpualign.mems.api"])],
    ids=["help", "version", "mems-help"])
def test_parser_imports_only_the_api_of_its_command(argv, imported):
    """A command's options are declared on first use, with defaults read from its API:
    ``gpualign --help`` imports no capability (nor Numba), a command only its own."""
    code = ("import sys; from gpualign.cli import main; main(sys.argv[1:]); "
            "print(sorted(m for m in sys.modules if m == 'numba' or m.endswith('.api')))")
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                          check=True)
    assert done.stdout.splitlines()[-1] == repr(imported)


def test_help_prints_the_api_defaults(capsys):
    assert main(["allpairs", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    scoring, matrix = gpualign.Scoring(), gpualign.Scoring.matrix("PAM30")
    min_identity = gpualign.allpairs.__kwdefaults__["min_identity"]
    for shown in (f"this identity (default {min_identity})",
                  f"match score (default {scoring.match})",
                  f"symbol (default {scoring.gap_open}; {matrix.gap_open} with --matrix)"):
        assert shown in text, shown


# --------------------------------------------------------------------------- lcs


@pytest.fixture(scope="module")
def rdp16s() -> list[tuple[str, str]]:
    return list(read_records(RDP16S))


@pytest.fixture(scope="module")
def uniprot() -> list[tuple[str, str]]:
    return list(read_records(UNIPROT))


def read_table(text: str, header: tuple[str, ...]) -> list[dict[str, str]]:
    lines = text.splitlines()
    assert tuple(lines[0].split("\t")) == header
    return [dict(zip(header, line.split("\t"), strict=True)) for line in lines[1:]]


def is_subsequence(short: str, long: str) -> bool:
    rest = iter(long)
    return all(symbol in rest for symbol in short)


def lcs_lengths(query: str, subjects: list[tuple[str, str]]) -> list[int]:
    """rapidfuzz's LCS of ``query`` with every subject. Exact for a query of ACGT only (the
    N/K/Y of some subjects, which gpualign reads as N, match nothing in it either) and for
    proteins (every symbol matches itself)."""
    return [LCSseq.similarity(query, subject) for _, subject in subjects]


def best(lengths: list[int], n: int) -> list[int]:
    """Indices of the ``n`` longest, ties by lower index (the order of ``lcs_top``)."""
    return sorted(range(len(lengths)), key=lambda j: (-lengths[j], j))[:n]


def summary_line(err: str) -> str:
    # A progress bar may come first (shown when the run outlasts a second); the summary is last.
    return err.strip().splitlines()[-1].split("\r")[-1]


def test_lcs_top_16s(rdp16s, tmp_path, capsys, backend):
    """Top 7 of a real 16S query among the 200 (itself included): ranks, lengths (rapidfuzz),
    lengths of both sequences, and LCS strings that are common subsequences of that length."""
    name, query = rdp16s[3]
    assert set(query) <= set("ACGT")
    query_file = write_fasta(tmp_path / "query.fa", [(name, query)])
    out = tmp_path / "top.tsv"
    assert main(["lcs", str(query_file), str(RDP16S), "--top", "7", "--invalid", "wildcard",
                 "--backend", backend, "-o", str(out)]) == 0
    rows = read_table(out.read_text(), LCS_TOP_COLUMNS)
    lengths = lcs_lengths(query, rdp16s)
    expected = best(lengths, 7)
    assert expected[0] == 3 and lengths[3] == len(query)  # the query finds itself first
    assert [r["subject"] for r in rows] == [rdp16s[j][0] for j in expected]
    assert [int(r["lcs_length"]) for r in rows] == [lengths[j] for j in expected]
    assert [r["rank"] for r in rows] == [str(k) for k in range(1, 8)]
    assert {r["query"] for r in rows} == {name}
    assert {r["query_length"] for r in rows} == {str(len(query))}
    assert [int(r["subject_length"]) for r in rows] == [len(rdp16s[j][1]) for j in expected]
    for row, j in zip(rows, expected, strict=True):
        assert len(row["lcs"]) == int(row["lcs_length"])
        assert is_subsequence(row["lcs"], query) and is_subsequence(row["lcs"], rdp16s[j][1])
    assert rows[0]["lcs"] == query
    # The same as the Python API.
    top = gpualign.lcs_top(query, RDP16S, 7, invalid="wildcard", backend="cpu")
    assert [r["subject"] for r in rows] == top.name
    captured = capsys.readouterr()
    assert captured.out == ""
    summary = summary_line(captured.err)
    assert summary.startswith("gpualign lcs: 1 query x 200 subjects, top 7: 200 compared, "
                              f"7 rows written -> {out} in ")
    assert summary.endswith(f"(backend {backend})")


def test_lcs_all_16s_in_file_order(rdp16s, tmp_path, capsys, backend, small_lcs_batches):
    """--all: one row per subject in file order, also when the subjects come in many batches."""
    name, query = rdp16s[101]
    assert set(query) <= set("ACGT")
    query_file = write_fasta(tmp_path / "query.fa", [(name, query)])
    assert main(["lcs", str(query_file), str(RDP16S), "--all", "--invalid", "wildcard",
                 "--backend", backend, "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    rows = read_table(captured.out, LCS_ALL_COLUMNS)
    assert [r["subject"] for r in rows] == [n for n, _ in rdp16s]
    assert [int(r["lcs_length"]) for r in rows] == lcs_lengths(query, rdp16s)
    assert [int(r["subject_length"]) for r in rows] == [len(s) for _, s in rdp16s]
    assert {(r["query"], r["query_length"]) for r in rows} == {(name, str(len(query)))}


def test_lcs_several_queries(rdp16s, tmp_path, capsys):
    """Every record of QUERY is a query; the rows of one query come together, in QUERY order."""
    picks = [150, 0]
    query_file = write_fasta(tmp_path / "queries.fa", [rdp16s[i] for i in picks])
    assert main(["lcs", str(query_file), str(RDP16S), "--top", "3", "--invalid", "wildcard",
                 "--no-strings", "--backend", "cpu"]) == 0
    captured = capsys.readouterr()
    rows = read_table(captured.out, LCS_TOP_COLUMNS[:-1])
    expected = []
    for i in picks:
        lengths = lcs_lengths(rdp16s[i][1], rdp16s)
        expected += [(rdp16s[i][0], rdp16s[j][0], str(k + 1), str(lengths[j]))
                     for k, j in enumerate(best(lengths, 3))]
    assert [(r["query"], r["subject"], r["rank"], r["lcs_length"]) for r in rows] == expected
    assert "2 queries x 200 subjects, top 3 without strings: 400 compared, 6 rows" in (
        summary_line(captured.err))

    out = tmp_path / "all.tsv"
    assert main(["lcs", str(query_file), str(RDP16S), "--all", "--invalid", "wildcard",
                 "--backend", "cpu", "-o", str(out), "-q"]) == 0
    rows = read_table(out.read_text(), LCS_ALL_COLUMNS)
    assert [(r["query"], r["subject"]) for r in rows] == [
        (rdp16s[i][0], n) for i in picks for n, _ in rdp16s]
    assert [int(r["lcs_length"]) for r in rows] == [
        length for i in picks for length in lcs_lengths(rdp16s[i][1], rdp16s)]


def test_lcs_protein_without_strings(uniprot, tmp_path, capsys):
    name, query = uniprot[42]
    query_file = write_fasta(tmp_path / "query.fa", [(name, query)])
    assert main(["lcs", str(query_file), str(UNIPROT), "--alphabet", "protein", "--top", "4",
                 "--no-strings", "--backend", "cpu", "-q"]) == 0
    rows = read_table(capsys.readouterr().out, LCS_TOP_COLUMNS[:-1])
    lengths = lcs_lengths(query, uniprot)
    expected = best(lengths, 4)
    assert expected[0] == 42
    assert [(r["subject"], int(r["lcs_length"]), int(r["subject_length"])) for r in rows] == [
        (uniprot[j][0], lengths[j], len(uniprot[j][1])) for j in expected]
    # Protein letters are not DNA: the query file is named, with its record and position
    # (--alphabet dna named since issue 20 infers the alphabet).
    assert main(["lcs", str(query_file), str(UNIPROT), "--alphabet", "dna", "--backend",
                 "cpu"]) == 2
    err = capsys.readouterr().err
    first = min(i for i, c in enumerate(query) if c not in "ACGTN")
    assert err.startswith(f"gpualign: error: {query_file}: record '{name}' (#0): ")
    assert f"at position {first} " in err and "--alphabet protein/bytes" in err


def test_lcs_empty_subjects(tmp_path, capsys):
    query_file = write_fasta(tmp_path / "query.fa", [("q", "ACGT")])
    empty = tmp_path / "empty.fa"
    empty.write_text("")
    for mode, header in (("--top=3", LCS_TOP_COLUMNS), ("--all", LCS_ALL_COLUMNS)):
        assert main(["lcs", str(query_file), str(empty), mode, "--backend", "cpu"]) == 0
        captured = capsys.readouterr()
        assert captured.out.splitlines() == ["\t".join(header)]
        assert "1 query x 0 subjects" in captured.err and "0 rows written" in captured.err


def lcs_error(capsys, args: list[str]) -> str:
    """Run ``gpualign lcs ARGS``: status 2, nothing on stdout, one ``gpualign: error:`` line."""
    assert main(["lcs", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("gpualign: error: ") and captured.err.count("\n") == 1
    return captured.err


def test_lcs_invalid_symbol_in_streamed_subjects(rdp16s, tmp_path, capsys):
    """Real data: record #83 of the 16S excerpt holds a K (IUPAC G/T)."""
    query_file = write_fasta(tmp_path / "query.fa", [rdp16s[0]])
    out = tmp_path / "out.tsv"
    for mode in ("--top=5", "--all"):
        err = lcs_error(capsys, [str(query_file), str(RDP16S), mode, "-o", str(out),
                                 "--backend", "cpu"])
        assert f"{RDP16S}: record '101390' (#83): symbol 'K' at position 1495" in err
        assert "--invalid wildcard" in err and not out.exists()


def test_lcs_input_errors(tmp_path, capsys):
    query_file = write_fasta(tmp_path / "query.fa", [("q", "ACGTACGT")])
    subjects = write_fasta(tmp_path / "subjects.fa", TARGETS)
    missing = tmp_path / "missing.fa"
    for args in ([str(missing), str(subjects)], [str(query_file), str(missing)],
                 [str(query_file), str(missing), "--all"]):
        assert f"{missing}: no such file" in lcs_error(capsys, args + ["--backend", "cpu"])

    records = "".join(f">r{i}\n{'ACGT' * 50}\n" for i in range(2000))
    whole = gzip.compress(records.encode())
    truncated = tmp_path / "truncated.fa.gz"
    truncated.write_bytes(whole[: len(whole) // 2])
    corrupt = tmp_path / "corrupt.fa.gz"
    corrupt.write_bytes(whole[:20] + bytes(range(256)) * 4 + whole[1044:])
    for bad in (truncated, corrupt):
        for mode in ("--top=1", "--all"):
            err = lcs_error(capsys, [str(query_file), str(bad), mode, "--backend", "cpu"])
            assert f"{bad}: cannot read" in err
    good = tmp_path / "good.fa.gz"
    good.write_bytes(whole)
    assert main(["lcs", str(query_file), str(good), "--top", "1", "-q", "--backend", "cpu"]) == 0
    assert capsys.readouterr().out.splitlines()[1].split("\t")[:4] == ["q", "r0", "1", "8"]

    empty = tmp_path / "empty.fa"
    empty.write_text("")
    err = lcs_error(capsys, [str(empty), str(subjects), "--backend", "cpu"])
    assert f"{empty}: no records" in err


def test_lcs_option_errors(tmp_path, capsys):
    query_file = write_fasta(tmp_path / "query.fa", [("q", "ACGTACGT")])
    subjects = write_fasta(tmp_path / "subjects.fa", TARGETS)
    inputs = [str(query_file), str(subjects)]
    for args, message in (
        (["--top", "0"], "argument --top: must be >= 1, got 0"),
        (["--top", "3", "--all"], "argument --all: not allowed with argument --top"),
        (["--devices", "0,x"], "argument --devices: expected GPU ids such as 0,1"),
        (["--alphabet", "rna"], "argument --alphabet: invalid choice"),
    ):
        assert main(["lcs", *inputs, *args]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and f"gpualign lcs: error: {message}" in captured.err
    err = lcs_error(capsys, [*inputs, "--devices", "0", "--backend", "cpu"])
    assert "devices" in err and "CUDA backend only" in err
    err = lcs_error(capsys, [*inputs, "-o", str(tmp_path / "no" / "out.tsv")])
    assert "no such folder" in err


@pytest.mark.skipif(cuda_status()[0], reason="a CUDA device is present")
def test_lcs_cuda_unavailable(tmp_path, capsys):
    query_file = write_fasta(tmp_path / "query.fa", [("q", "ACGT")])
    for extra in ([], ["--devices", "0,1"]):
        err = lcs_error(capsys, [str(query_file), str(query_file), "--backend", "cuda", *extra])
        assert "unavailable" in err


@pytest.mark.cuda
@pytest.mark.skipif(not cuda_status()[0], reason="no CUDA device")
def test_lcs_devices_on_cuda(rdp16s, tmp_path, capsys):
    query_file = write_fasta(tmp_path / "query.fa", [rdp16s[3]])
    common = [str(query_file), str(RDP16S), "--top", "5", "--invalid", "wildcard", "-q"]
    assert main(["lcs", *common, "--backend", "cpu"]) == 0
    on_cpu = capsys.readouterr().out
    import cupy

    every = ",".join(map(str, range(cupy.cuda.runtime.getDeviceCount())))
    for devices in sorted({"0", every}):  # all GPUs too, where there are several
        assert main(["lcs", *common, "--backend", "cuda", "--devices", devices]) == 0
        assert read_table(capsys.readouterr().out, LCS_TOP_COLUMNS) == read_table(
            on_cpu, LCS_TOP_COLUMNS)
    assert "distinct" in lcs_error(capsys, [*common, "--backend", "cuda", "--devices", "0,0"])
    assert "does not exist" in lcs_error(capsys, [*common, "--backend", "cuda",
                                                  "--devices", "0,99"])


def test_lcs_subprocess(rdp16s, tmp_path):
    """The real process: a table on stdout and one summary line; status 2 without a traceback."""
    query_file = write_fasta(tmp_path / "query.fa", [rdp16s[3]])
    command = [sys.executable, "-m", "gpualign.cli", "lcs", str(query_file), str(RDP16S),
               "--top", "3", "--backend", "cpu"]
    done = subprocess.run(command + ["--invalid", "wildcard"], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    rows = read_table(done.stdout, LCS_TOP_COLUMNS)
    assert [r["subject"] for r in rows][:1] == [rdp16s[3][0]] and len(rows) == 3
    assert done.stderr.count("\n") == 1 and "1 query x 200 subjects, top 3" in done.stderr

    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("gpualign: error: ") and "Traceback" not in done.stderr
    assert "'101390' (#83)" in done.stderr


# --- gpualign align ------------------------------------------------------------------------------


def _genes(count: int) -> list[tuple[str, str]]:
    return list(read_records(DATA / "rdp16s_200.fasta.gz"))[:count]


def test_align_tsv_equals_the_api(tmp_path):
    genes = _genes(8)
    queries = write_fasta(tmp_path / "q.fa", genes[0::2])
    targets = write_fasta(tmp_path / "t.fa", genes[1::2])
    out = tmp_path / "aln.tsv"
    assert main(["align", str(queries), str(targets), "--mode", "semi-global", "--task", "path",
                 "--match", "1", "--mismatch", "-2", "--gap-open", "3", "--gap-extend", "1",
                 "--invalid", "wildcard", "-o", str(out), "-q"]) == 0
    rows = read_tsv(out, ALIGN_COLUMNS)
    assert len(rows) == 4
    api = gpualign.align(queries, targets, mode="semi-global", task="path", invalid="wildcard",
                         scoring=gpualign.Scoring(match=1, mismatch=-2, gap_open=3,
                                                  gap_extend=1))
    for p, row in enumerate(rows):
        assert (row["query"], row["target"]) == (genes[2 * p][0], genes[2 * p + 1][0])
        assert int(row["score"]) == int(api.score[p]) and row["cigar"] == api.cigar[p]
        assert [int(row[c]) for c in ("query_start", "query_end", "target_start",
                                      "target_end")] == [
            int(api.query_start[p]), int(api.query_end[p]), int(api.target_start[p]),
            int(api.target_end[p])]
        assert float(row["identity"]) == pytest.approx(api.identity[p], abs=5e-5)


def test_align_all_vs_all_with_a_matrix_defaults_to_protein(tmp_path, capsys):
    proteins = list(read_records(DATA / "uniprot_200.fasta.gz"))[:3]
    path = write_fasta(tmp_path / "p.fa", proteins)
    assert main(["align", str(path), str(path), "--all-vs-all", "--matrix", "blosum62",
                 "--mode", "local", "--task", "end", "--invalid", "wildcard"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert len(lines) == 1 + 9 and "BLOSUM62, gap open 11, extend 1" in captured.err
    rows = [dict(zip(ALIGN_COLUMNS, line.split("\t"), strict=True)) for line in lines[1:]]
    scoring = gpualign.Scoring.matrix("BLOSUM62")
    api = gpualign.align([s for _, s in proteins], [s for _, s in proteins], mode="local",
                         task="end", alphabet="protein", invalid="wildcard", scoring=scoring,
                         pairs=(np.repeat(np.arange(3), 3), np.tile(np.arange(3), 3)))
    assert [int(r["score"]) for r in rows] == api.score.tolist()
    assert all(r["cigar"] == r["query_start"] == "*" for r in rows)


def test_align_sam(tmp_path):
    genes = _genes(2)
    reads = [("read1", genes[0][1][100:400]), ("read2", "ACGT" * 3 + genes[0][1][500:700]),
             ("nothing", "")]
    reads_fa = write_fasta(tmp_path / "reads.fa", reads)
    ref = write_fasta(tmp_path / "ref.fa", [(genes[0][0], genes[0][1])] * 3)
    sam = tmp_path / "out.sam"
    # The three references share a name: renamed, as @SQ names must be unique (issue 20).
    assert main(["align", str(reads_fa), str(ref), "--mode", "local", "--invalid", "wildcard",
                 "-o", str(sam), "-q", "--rename-duplicates"]) == 0
    lines = sam.read_text().splitlines()
    header = [line for line in lines if line.startswith("@")]
    records = [line.split("\t") for line in lines if not line.startswith("@")]
    assert header[0].startswith("@HD\tVN:1.6")
    assert [line.split("\t")[1] for line in header[1:4]] == [
        f"SN:{genes[0][0]}", f"SN:{genes[0][0]}.2", f"SN:{genes[0][0]}.3"]
    assert len(records) == 3
    first, second, third = records
    assert first[:6] == ["read1", "0", genes[0][0], "101", "255", "300="]
    assert first[9] == reads[0][1] and "AS:i:600" in first and "NM:i:0" in first
    assert second[3] == "501" and second[5].startswith("12S")  # the unrelated head is clipped
    consumed = sum(int(n) for n, op in re.findall(r"(\d+)([=XIS])", second[5]))
    assert consumed == len(second[9])
    assert third[1:6] == ["4", "*", "0", "255", "*"]  # an empty read aligns nowhere


def test_align_band_writes_the_full_dps_table(tmp_path, backend, monkeypatch):
    # Reads with a few substitutions in windows around them: --band gives every row of the
    # full DP's table.
    genes = _genes(6)
    reads = [(f"r{k}", seq[100:400].replace("A", "C", 2)) for k, (_, seq) in enumerate(genes)]
    windows = [(f"w{k}", seq[90:410]) for k, (_, seq) in enumerate(genes)]
    queries = write_fasta(tmp_path / "q.fa", reads)
    targets = write_fasta(tmp_path / "t.fa", windows)
    banded = []  # the calls that went through the bands
    band_results = align_api.band_results
    monkeypatch.setattr(align_api, "band_results",
                        lambda *args: banded.append(1) or band_results(*args))
    tables = []
    for extra in ([], ["--band", "3"]):
        out = tmp_path / f"aln{len(extra)}.tsv"
        assert main(["align", str(queries), str(targets), "--mode", "semi-global", "--task",
                     "path", "--invalid", "wildcard", "--backend", backend, "-o", str(out),
                     "-q", *extra]) == 0
        tables.append(out.read_text())
    assert tables[0] == tables[1] and len(tables[0].splitlines()) == 7 and banded == [1]


def test_align_path_summary_names_the_backend(pair_files, tmp_path, capsys, backend):
    # Paths (and so SAM) are computed on the backend asked for; the summary names it.
    queries, targets = pair_files
    for extra in (["--task", "path"], ["-o", str(tmp_path / "out.sam")]):
        assert main(["align", str(queries), str(targets), "--backend", backend, *extra]) == 0
        assert summary_line(capsys.readouterr().err).endswith(f"(backend {backend})"), extra


def test_align_errors(tmp_path, capsys):
    queries = write_fasta(tmp_path / "q.fa", [("a", "ACGT")])
    targets = write_fasta(tmp_path / "t.fa", [("b", "ACGA"), ("c", "A")])
    for extra, message in (
            ([], "1 record but"),
            (["--all-vs-all", "--gap-open", "-1"], "positive costs"),
            (["--all-vs-all", "--gap-open", "1", "--gap-extend", "2"], "at least as much"),
            (["--all-vs-all", "--matrix", "BLOSUM63"], "unknown matrix"),
            (["--all-vs-all", "--matrix", str(queries)], "must list distinct"),
            (["--all-vs-all", "--backend", "cuda"], "cuda"),
            (["--all-vs-all", "--band", "3"], "--band 3: for --task path (or SAM) in --mode "
                                             "global or semi-global, not --task score in "
                                             "--mode global"),
            (["--all-vs-all", "--task", "path", "--mode", "local", "--band", "3"],
             "not --task path in --mode local"),
            (["--all-vs-all", "--task", "path", "--band", "-1"], "--band -1: a band of 0")):
        assert main(["align", str(queries), str(targets), *extra]) == 2, extra
        assert message in capsys.readouterr().err, extra


# --- gpualign allpairs ---------------------------------------------------------------------------


def test_allpairs_tsv_equals_the_api(tmp_path, capsys):
    genes = _genes(25)
    seqs = write_fasta(tmp_path / "genes.fa", genes + [("copy", genes[3][1])])
    out, folder = tmp_path / "pairs.tsv", tmp_path / "ckpt"
    args = ["allpairs", str(seqs), "--min-identity", "0.85", "--invalid", "wildcard",
            "--checkpoint", str(folder), "-o", str(out)]
    assert main(args) == 0
    assert "pairs; after the length bound" in capsys.readouterr().err
    first = out.read_text()
    rows = read_tsv(out, ALIGN_COLUMNS)
    api = gpualign.allpairs(seqs, min_identity=0.85, invalid="wildcard")
    names = [name for name, _ in genes] + ["copy"]
    assert [(r["query"], r["target"]) for r in rows] == [
        (names[q], names[t]) for q, t in zip(api.query_index.tolist(),
                                             api.target_index.tolist(), strict=True)]
    assert [r["cigar"] for r in rows] == api.cigar
    assert [float(r["identity"]) for r in rows] == pytest.approx(api.identity.tolist(), abs=5e-5)
    assert (genes[3][0], "copy") in [(r["query"], r["target"]) for r in rows]
    assert main(args) == 0 and out.read_text() == first  # resumed from the checkpoint


def test_readme_main_job_all_pairs_of_1000_genes(tmp_path, capsys, backend):
    # The README's main job as written: every row's CIGAR spans both genes, re-scores to its
    # score and gives its identity (matches / columns), which reaches 97%.
    out = tmp_path / "pairs.tsv"
    assert main(["allpairs", str(RDP_GENES), "--min-identity", "0.97", "--backend", backend,
                 "-o", str(out)]) == 0
    assert "499500 pairs; after the length bound" in capsys.readouterr().err
    rows = read_tsv(out, ALIGN_COLUMNS)
    genes = gpualign.SequenceSet.from_file(RDP_GENES)
    index = {name: k for k, name in enumerate(genes.names)}
    table, _ = gpualign.Scoring().table(genes.alphabet)
    assert len(rows) > 100
    for row in rows:
        query, target = (genes.codes_of(index[row[key]]) for key in ("query", "target"))
        score, q_end, t_end = rescore_alignment(query.tolist(), target.tolist(), 0, 0,
                                                row["cigar"], table, 5, 2)
        assert (score, q_end, t_end) == (int(row["score"]), len(query), len(target))
        identity = count_ops(row["cigar"], "=") / count_ops(row["cigar"])
        assert float(row["identity"]) == pytest.approx(identity, abs=5e-5) and identity >= 0.97


def test_allpairs_two_files_and_errors(tmp_path, capsys):
    a = write_fasta(tmp_path / "a.fa", [("a1", "ACGTACGTAC"), ("a2", "TTTTTTTTTT")])
    b = write_fasta(tmp_path / "b.fa", [("b1", "ACGTACGTAA")])
    assert main(["allpairs", str(a), str(b), "--min-identity", "0.8", "--no-align"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split("\t")[:4] == ["a1", "b1", "0.9000", "15"] and len(lines) == 2  # 9*2-3
    assert lines[1].split("\t")[-1] == "*"
    for extra, message in ((["--min-identity", "1.5"], "min_identity"),
                           (["--gap-open", "-2"], "positive costs")):
        assert main(["allpairs", str(a), *extra]) == 2
        assert message in capsys.readouterr().err


def test_allpairs_on_a_local_dask_cluster(tmp_path, capfd):
    pytest.importorskip("distributed")
    genes = _genes(12)
    seqs = write_fasta(tmp_path / "genes.fa", genes + [("copy", genes[2][1])])
    local, dask = tmp_path / "local.tsv", tmp_path / "dask.tsv"
    common = ["allpairs", str(seqs), "--min-identity", "0.85", "--invalid", "wildcard", "-q"]
    assert main([*common, "-o", str(local)]) == 0
    capfd.readouterr()
    assert main([*common, "--workers", "2", "-o", str(dask)]) == 0
    assert dask.read_text() == local.read_text() and "copy" in local.read_text()
    # -q: nothing on stderr, not even Dask's log of the cluster (here and in the workers)
    assert capfd.readouterr().err.splitlines() == []


def test_local_cluster_example_runs():
    pytest.importorskip("distributed")
    assert doctest.testmod(cluster, raise_on_error=True).attempted > 0


def test_local_cluster_pins_one_worker_to_each_gpu(monkeypatch):
    # Two GPUs named by CUDA_VISIBLE_DEVICES and three workers: a GPU worker on each GPU,
    # resource GPU=1, and a CPU worker that sees no GPU; the cores are shared out.
    monkeypatch.setattr(cluster, "cuda_devices", lambda: ["2", "5"])
    monkeypatch.setattr(cluster, "resolve_backend", lambda backend: "cuda")
    specs = cluster.worker_specs(3, "auto", cores=12)
    assert list(specs) == ["gpu-2", "gpu-5", "cpu-0"]
    assert [env["CUDA_VISIBLE_DEVICES"] for env, _ in specs.values()] == ["2", "5", ""]
    assert [resources for _, resources in specs.values()] == [{"GPU": 1}, {"GPU": 1}, {}]
    assert {env["NUMBA_NUM_THREADS"] for env, _ in specs.values()} == {"4"}
    with pytest.raises(ValueError, match="2 GPU"):
        cluster.worker_specs(3, "cuda")
    monkeypatch.setattr(cluster, "resolve_backend", lambda backend: "cpu")
    assert list(cluster.worker_specs(2, "auto", cores=2)) == ["cpu-0", "cpu-1"]


def test_lcs_several_queries_have_a_progress_bar(rdp16s, tmp_path, monkeypatch):
    # One bar over the pairs (query, subject), moving as batches of subjects finish, within a
    # query too; its total is known once the first query has counted the subjects. Shown when
    # the run outlasts a second (tqdm's delay, left to the real bar) and never with -q.
    from gpualign.cli import lcs as lcs_command

    bars = []

    class RecordingBar:
        def __init__(self, total, enabled, what, unit="pair"):
            self.total, self.enabled, self.unit, self.steps = total, enabled, unit, []
            bars.append(self)

        def update(self, count=1):
            self.steps.append((count, self.total))

        def close(self):
            pass

    monkeypatch.setattr(lcs_command, "progress_bar", RecordingBar)
    monkeypatch.setattr(gpualign.config, "LCS_CPU_BATCH_RESIDUES", 1)  # a batch per subject
    query_file = write_fasta(tmp_path / "queries.fa", rdp16s[:3])
    subjects = write_fasta(tmp_path / "subjects.fa", rdp16s[:5])
    for quiet in ([], ["-q"]):
        assert main(["lcs", str(query_file), str(subjects), "--top", "2", "--backend", "cpu",
                     "--no-strings", "-o", str(tmp_path / "top.tsv"), *quiet]) == 0
        assert [(bar.total, bar.enabled, bar.unit, bar.steps) for bar in bars] == [
            (15, not quiet, "pair", [(1, None)] * 5 + [(1, 15)] * 10)]
        bars.clear()
        assert main(["lcs", str(query_file), str(subjects), "--all", "--backend", "cpu",
                     "-o", str(tmp_path / "all.tsv"), *quiet]) == 0
        assert [(bar.enabled, bar.unit, bar.steps) for bar in bars][0] == (
            not quiet, "pair", [(3, None)] * 5)  # one pass: a subject is 3 pairs
        bars.clear()


def test_align_scores_on_the_cpu_hint_at_parasail(pair_files, monkeypatch, capsys):
    # parasail is optional (no wheels for aarch64 Linux): CPU scores without it say how to get
    # them faster, once, before the summary; -q keeps stderr empty; scores are the same.
    pytest.importorskip("parasail")
    queries, targets = pair_files
    command = ["align", str(queries), str(targets), "--task", "score", "--backend", "cpu"]
    assert main(command) == 0
    with_parasail = capsys.readouterr()
    assert "hint" not in with_parasail.err
    monkeypatch.setitem(sys.modules, "parasail", None)  # import parasail fails
    assert main(command) == 0
    captured = capsys.readouterr()
    assert captured.out == with_parasail.out
    assert captured.err.splitlines()[0] == ("gpualign align: hint: pip install parasail for CPU "
                                            "scores about 9x faster (the same scores)")
    assert main([*command, "-q"]) == 0 and capsys.readouterr().err == ""
