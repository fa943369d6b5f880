"""The ``gpualign`` command line: output table, all-vs-all, errors and exit codes, --quiet.

Most tests call :func:`gpualign.cli.main` in-process (fast: Numba functions stay compiled); one
runs the installed module in a subprocess to check the real exit status and stderr.
"""

from __future__ import annotations

import gzip
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gpualign
from gpualign.backend import cuda_status
from gpualign.cli import EDIT_COLUMNS, main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
HIV_READS = EXAMPLES / "hiv_reads.fa"
HIV_REFERENCE = EXAMPLES / "hiv_reference.fa"

QUERIES = [("q0", "ACGTACGT"), ("q1", "ACGT"), ("q2", "GGGGGGGGGG")]
TARGETS = [("t0", "ACGTTCGT"), ("t1", "TTACCTTT"), ("t2", "ACGTACGT")]


def write_fasta(path: Path, records: list[tuple[str, str]]) -> Path:
    path.write_text("".join(f">{name} description\n{seq}\n" for name, seq in records))
    return path


def read_tsv(path: Path) -> list[dict[str, str]]:
    lines = path.read_text().splitlines()
    assert tuple(lines[0].split("\t")) == EDIT_COLUMNS
    return [dict(zip(EDIT_COLUMNS, line.split("\t"), strict=True)) for line in lines[1:]]


def check_cigar(row: dict[str, str], query: str, target: str) -> None:
    """The CIGAR spans the query and target[start:end], costs the distance, and = columns match."""
    start, end, distance = int(row["target_start"]), int(row["target_end"]), int(row["distance"])
    assert 0 <= start <= end <= len(target)
    ops = [(int(n), op) for n, op in re.findall(r"(\d+)([=XID])", row["cigar"])]
    assert "".join(f"{n}{op}" for n, op in ops) == row["cigar"]
    assert sum(n for n, op in ops if op in "=XI") == len(query)
    assert sum(n for n, op in ops if op in "=XD") == end - start
    assert sum(n for n, op in ops if op in "XID") == distance
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
    """The README's main job on 50 real reads: every hit has a consistent CIGAR."""
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


@pytest.mark.parametrize("sequence, position", [("ACGTXACGT", 4), ("ACGU", 3)])
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
    assert main(["edit", str(queries), str(targets)]) == 2  # not DNA
    assert "dna alphabet" in capsys.readouterr().err
    for alphabet in ("protein", "bytes"):
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
