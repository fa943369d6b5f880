"""The search database (sorting, ``.gpudb`` files memory-mapped, their errors), the same output
from a ``.gpudb`` file, a FASTA file and sequences in memory, and the ``gpualign search`` and
``gpualign makedb`` commands end to end."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

from gpualign import SequenceSet
from gpualign.cli import main
from gpualign.io import SequenceFileError, write_tsv
from gpualign.search import Database, as_database, search
from gpualign.search import database as search_database
from gpualign.search.api import BLAST6_COLUMNS, SEARCH_COLUMNS

DATA = Path(__file__).parent / "data"
UNIPROT = DATA / "uniprot_200.fasta.gz"
MT_HUMAN = DATA / "MT-human.fa.gz"


def test_sequences_are_sorted_by_length_stably():
    db = Database.from_sequences(["AAAA", "C", "GG", "TTTT", "A"], names=list("abcde"))
    assert db.order.tolist() == [1, 4, 2, 0, 3]
    assert db.sequences.names == ["b", "e", "c", "a", "d"]
    assert db.sequences.lengths.tolist() == [1, 1, 2, 4, 4]
    assert db.input_names() == list("abcde")
    assert (len(db), db.residues, db.alphabet.name) == (5, 12, "dna")


def test_save_and_open(tmp_path):
    db = Database.from_file(UNIPROT)
    path = tmp_path / "uniprot.gpudb"
    db.save(path)
    opened = Database.open(path)
    assert isinstance(opened.sequences.codes.base, np.memmap) or \
        isinstance(opened.sequences.codes, np.memmap)
    assert np.array_equal(opened.sequences.codes, db.sequences.codes)
    assert np.array_equal(opened.sequences.offsets, db.sequences.offsets)
    assert np.array_equal(opened.order, db.order)
    assert opened.sequences.names == db.sequences.names
    assert opened.alphabet == db.alphabet and opened.residues == db.residues
    assert opened.input_names() == SequenceSet.from_file(UNIPROT).names


def test_an_empty_database_and_odd_names(tmp_path):
    path = tmp_path / "empty.gpudb"
    Database.from_sequences([], "protein").save(path)
    assert len(Database.open(path)) == 0
    named = Database.from_sequences(["MKV", ""], "protein", names=["ä|β", ""])
    named.save(path)
    assert Database.open(path).input_names() == ["ä|β", ""]
    assert len(search(["MKV"], path, backend="cpu")) == 1


def test_open_errors(tmp_path):
    whole = tmp_path / "whole.gpudb"
    Database.from_file(UNIPROT).save(whole)
    data = whole.read_bytes()
    for size, why in ((30, "its header cannot be read"), (len(data) // 2, "truncated")):
        cut = tmp_path / f"cut{size}.gpudb"
        cut.write_bytes(data[:size])
        with pytest.raises(ValueError, match=rf"^{re.escape(str(cut))}: damaged gpualign search "
                                             rf"database \(.*{why}"):
            Database.open(cut)
    with pytest.raises(ValueError, match="not a gpualign search database"):
        Database.open(UNIPROT)
    other = tmp_path / "other.gpudb"
    other.write_bytes(data.replace(b'"format": 1', b'"format": 9', 1))
    with pytest.raises(ValueError, match="of format 9, this version reads format 1: rebuild"):
        Database.open(other)
    with pytest.raises(FileNotFoundError):
        Database.open(tmp_path / "missing.gpudb")
    with pytest.raises(SequenceFileError, match="a gpualign search database .* not a FASTA"):
        SequenceSet.from_file(whole)


def test_as_database_accepts_every_form(tmp_path):
    path = tmp_path / "db.gpudb"
    Database.from_file(UNIPROT).save(path)
    for source in (path, str(path), UNIPROT, str(UNIPROT), SequenceSet.from_file(UNIPROT)):
        assert as_database(source).input_names()[:3] == \
            SequenceSet.from_file(UNIPROT).names[:3]


@pytest.mark.parametrize("task", ["score", "path"])
def test_gpudb_fasta_and_memory_give_identical_results(tmp_path, backend, task):
    path = tmp_path / "uniprot.gpudb"
    Database.from_file(UNIPROT).save(path)
    records = SequenceSet.from_file(UNIPROT)
    queries = records.take(np.array([11, 12, 150]))
    names = records.names
    tables = []
    for database in (path, UNIPROT, str(UNIPROT), records,
                     [records[k] for k in range(len(records))]):
        text = io.StringIO()
        write_tsv(text, *search(queries, database, n=7, task=task, backend=backend).table(
            queries.names, names))
        tables.append(text.getvalue())
    assert tables[0].count("\n") == 22 and tables == tables[:1] * 5


# --------------------------------------------------------------------------- command line


def _write_queries(tmp_path: Path, indices: list[int]) -> Path:
    records = SequenceSet.from_file(UNIPROT)
    path = tmp_path / "queries.fa"
    path.write_text("".join(f">{records.names[k]}\n{records[k]}\n" for k in indices))
    return path


def test_makedb_then_search_end_to_end(tmp_path, capsys):
    queries = _write_queries(tmp_path, [0, 42])
    database = tmp_path / "uniprot.gpudb"
    assert main(["makedb", str(UNIPROT), "-o", str(database)]) == 0
    err = capsys.readouterr().err
    assert "200 sequences" in err and f"-> {database}" in err
    outputs = {}
    for source in (database, UNIPROT):
        for fmt in ("tsv", "blast6"):
            out = tmp_path / f"{source.name}.{fmt}"
            assert main(["search", str(queries), str(source), "-n", "4", "--format", fmt,
                         "--task", "path", "--backend", "cpu", "-o", str(out)]) == 0
            outputs[source, fmt] = out.read_text()
            err = capsys.readouterr().err
            assert "2 queries against 200 sequences" in err and "GCUPS" in err
            assert "BLOSUM62, gap open 12, extend 1" in err and "(backend cpu)" in err
    for fmt in ("tsv", "blast6"):
        assert outputs[database, fmt] == outputs[UNIPROT, fmt]
    tsv = outputs[database, "tsv"].splitlines()
    assert tuple(tsv[0].split("\t")) == SEARCH_COLUMNS and len(tsv) == 9
    blast = [line.split("\t") for line in outputs[database, "blast6"].splitlines()]
    assert len(blast) == 8 and all(len(row) == len(BLAST6_COLUMNS) for row in blast)
    records = SequenceSet.from_file(UNIPROT)
    assert blast[0][:4] == [records.names[0], records.names[0], "100.000",
                            str(records.lengths[0])]
    assert blast[0][6:10] == ["1", str(records.lengths[0]), "1", str(records.lengths[0])]


def test_search_matches_the_api(tmp_path, capsys):
    queries = _write_queries(tmp_path, [7])
    assert main(["search", str(queries), str(UNIPROT), "-n", "3", "--evalue", "10",
                 "--backend", "cpu", "-q"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    rows = [line.split("\t") for line in captured.out.splitlines()[1:]]
    result = search(SequenceSet.from_file(queries), UNIPROT, n=3, evalue=10, backend="cpu")
    assert [int(row[3]) for row in rows] == result.score.tolist()
    assert all(row[8] == "*" and row[12] == "*" for row in rows)  # task score


def test_search_dna_with_scoring_options(tmp_path, capsys):
    query = tmp_path / "q.fa"
    query.write_text(f">q\n{SequenceSet.from_file(MT_HUMAN)[0][1000:1055]}\n")
    assert main(["search", str(query), str(MT_HUMAN), "--match", "1", "--mismatch", "-2",
                 "--format", "blast6", "--backend", "cpu", "-n", "2"]) == 0
    captured = capsys.readouterr()
    first = captured.out.splitlines()[0].split("\t")
    assert first[2:10] == ["100.000", "55", "0", "0", "1", "55", "1001", "1055"]
    assert "match +1, mismatch -2, gap open 7, extend 2" in captured.err


def test_protein_gap_options_keep_blosum62(tmp_path, capsys):
    queries = _write_queries(tmp_path, [3])
    assert main(["search", str(queries), str(UNIPROT), "--gap-open", "10", "-n", "1",
                 "--backend", "cpu", "-o", str(tmp_path / "out.tsv")]) == 0
    assert "BLOSUM62, gap open 10, extend 1" in capsys.readouterr().err


@pytest.mark.parametrize("argv,message", [
    (["search", "QUERIES", "DB", "--evalue", "0"], "argument --evalue: must be > 0, got 0"),
    (["search", "QUERIES", "DB", "-n", "0"], "argument -n/--max-hits: must be >= 1, got 0"),
    (["search", "QUERIES", "DB", "--evalue", "1", "--match", "7", "--mismatch", "-13"],
     "evalue=1.0: no published Karlin-Altschul parameters"),
    (["search", "QUERIES", "GPUDB", "--alphabet", "dna"], "is a protein database"),
    (["search", "EMPTY", "DB"], "no records: QUERIES must hold at least one sequence"),
    (["makedb", "DB", "-o", "-"], "-o -: a database is memory-mapped from a file"),
])
def test_command_errors(tmp_path, capsys, argv, message):
    queries = _write_queries(tmp_path, [1])
    empty = tmp_path / "empty.fa"
    empty.write_text("")
    gpudb = tmp_path / "db.gpudb"
    Database.from_file(UNIPROT).save(gpudb)
    paths = {"QUERIES": str(queries), "DB": str(UNIPROT), "GPUDB": str(gpudb),
             "EMPTY": str(empty)}
    assert main([paths.get(arg, arg) for arg in argv] + ["--backend", "cpu"] *
                (argv[0] == "search")) == 2
    err = capsys.readouterr().err
    if not message.startswith("argument"):  # argparse's errors come after the usage
        assert err.startswith("gpualign: error: ") and err.count("\n") == 1, err
    assert message in err, err


def test_open_refuses_a_damaged_order_or_code(tmp_path):
    """Damage that would index past an array is an error naming the file, not a wrong hit."""
    good = tmp_path / "good.gpudb"
    Database.from_sequences(["MKVLA", "MEEPQSDPSV"]).save(good)
    data = bytearray(good.read_bytes())
    magic = search_database.MAGIC
    size = int(np.frombuffer(data[len(magic):len(magic) + 8], dtype="<i8")[0])
    header = json.loads(bytes(data[len(magic) + 8:len(magic) + 8 + size]))
    start = search_database._aligned(len(magic) + 8 + size)
    order_at = start + header["arrays"]["order"]["offset"]
    codes_at = start + header["arrays"]["codes"]["offset"]
    for name, at, value in (("order", order_at, 5), ("code", codes_at, 200)):
        damaged = bytearray(data)
        damaged[at] = value
        path = tmp_path / f"{name}.gpudb"
        path.write_bytes(bytes(damaged))
        with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}: damaged .*{name}"):
            Database.open(path)


def test_an_empty_database_is_an_error(tmp_path, capsys):
    empty, queries = tmp_path / "empty.fa", tmp_path / "q.fa"
    empty.write_text("")
    queries.write_text(">q\nMKVLA\n")
    assert main(["makedb", str(empty), "-o", str(tmp_path / "e.gpudb"), "-q"]) == 2
    assert f"{empty}: no records" in capsys.readouterr().err
    assert main(["search", str(queries), str(empty), "-q", "--backend", "cpu"]) == 2
    assert f"{empty}: no records" in capsys.readouterr().err
