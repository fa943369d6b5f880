"""Database search on a Dask cluster (``client=``, ``gpualign search --workers/--scheduler``):
the partitions' best hits merged on the client equal a search on one machine, ties included,
on both DNA strands, with the partitions spread over the workers; a worker killed mid-run
loses nothing. CPU workers, and (on a GPU machine) a GPU worker beside a CPU worker."""

from __future__ import annotations

import doctest
from pathlib import Path

import numpy as np
import pytest
from conftest import CUDA_AVAILABLE, CUDA_REASON, kill_a_worker_mid_run, local_dask_client

from gpualign import SequenceSet, _dask, config
from gpualign.cli import main
from gpualign.search import Database, distributed, search
from gpualign.search.database import partition_bounds

distributed_dask = pytest.importorskip("distributed")

DATA = Path(__file__).parent / "data"
UNIPROT = DATA / "uniprot_200.fasta.gz"  # 200 real proteins (MMseqs2 examples, UniProt)
#: Few enough residues a partition that most partitions hold one or two proteins.
SMALL_PARTITIONS = 600


@pytest.fixture(scope="module")
def client():
    # Threads of this process: quick to start, and config patches reach the workers too (the
    # partitions are cut here, so the results do not depend on that).
    with local_dask_client(processes=False) as dask_client:
        yield dask_client


@pytest.fixture(scope="module")
def proteins() -> SequenceSet:
    return SequenceSet.from_file(UNIPROT, "protein")


@pytest.fixture(scope="module")
def tied_database(proteins) -> Database:
    """The proteins and a renamed copy of every fifth, so that equal scores of different
    subjects fall into different partitions and the input order must break the ties."""
    copies = proteins.take(np.arange(0, len(proteins), 5))
    sequences = [proteins[k] for k in range(len(proteins))] + \
        [copies[k] for k in range(len(copies))]
    names = proteins.names + [f"copy-{name}" for name in copies.names]
    return Database.from_sequences(sequences, "protein", names=names)


def same_hits(local, on_cluster) -> None:
    for name in ("query_index", "subject_index", "rank", "score", "bitscore", "evalue",
                 "strand", "query_start", "query_end", "subject_start", "subject_end",
                 "identity", "mismatches", "gap_opens", "alignment_length"):
        a, b = getattr(local, name), getattr(on_cluster, name)
        assert (a is None) == (b is None), name
        if a is not None:
            np.testing.assert_array_equal(a, b, err_msg=name)
    assert local.cigar == on_cluster.cigar and local.cells == on_cluster.cells


def test_partitions_cover_the_database_in_order():
    offsets = np.array([0, 3, 5, 5, 12, 20, 21])
    bounds = partition_bounds(offsets, 6)
    assert bounds == [(0, 3), (3, 4), (4, 5), (5, 6)]  # the empty sequence rides along
    assert partition_bounds(offsets, 1 << 30) == [(0, 6)]
    assert partition_bounds(np.array([0]), 8) == []


def test_protein_search_equals_the_local_one_ties_included(client, proteins, tied_database,
                                                           monkeypatch):
    queries = proteins.take(np.arange(0, len(proteins), 10))
    local = search(queries, tied_database, n=12, task="path", backend="cpu")
    monkeypatch.setattr(config, "SEARCH_PARTITION_RESIDUES", SMALL_PARTITIONS)
    assert len(partition_bounds(tied_database.sequences.offsets,
                                            SMALL_PARTITIONS)) > 50
    on_cluster = search(queries, tied_database, n=12, task="path", backend="cpu",
                        client=client)
    same_hits(local, on_cluster)
    # The copies do tie with their originals, so the tie rule was exercised across partitions.
    names = tied_database.input_names()
    tied = [names[k] for k in on_cluster.subject_index.tolist()]
    assert sum(name.startswith("copy-") for name in tied) >= len(queries)


def test_dna_search_on_both_strands_equals_the_local_one(client, monkeypatch):
    rng = np.random.default_rng(22)
    bases = np.array(list("ACGT"))
    database = ["".join(rng.choice(bases, int(length))) for length in
                rng.integers(20, 120, 60)]
    queries = [database[3][5:40], database[17][::-1], "".join(rng.choice(bases, 50))]
    local = search(queries, database, n=7, task="locations", backend="cpu")
    monkeypatch.setattr(config, "SEARCH_PARTITION_RESIDUES", 150)
    on_cluster = search(queries, database, n=7, task="locations", backend="cpu",
                        client=client)
    same_hits(local, on_cluster)
    assert set(on_cluster.strand.tolist()) == {"+", "-"}


def test_fewer_subjects_than_n_and_progress_in_cells(client, monkeypatch):
    queries, database = ["MKVLAAGIVGAW"], ["MEEPQSDPSV", "MKVLATGIVGAWT", "GGGG"]
    local = search(queries, database, n=5, backend="cpu")
    monkeypatch.setattr(config, "SEARCH_PARTITION_RESIDUES", 8)  # a partition each
    steps = []
    on_cluster = search(queries, database, n=5, backend="cpu", client=client,
                        progress=lambda done, total: steps.append((done, total)))
    same_hits(local, on_cluster)
    assert on_cluster.subject_index.tolist()[:2] == [1, 0]
    # One step a partition, in its cells (the query's 12 residues times the subjects')
    assert sorted(np.diff([0] + [done for done, _ in steps]).tolist()) == [12 * 4, 12 * 10,
                                                                           12 * 13]
    assert steps[-1] == (12 * 27, 12 * 27) == (on_cluster.cells, on_cluster.cells)


def test_empty_database_and_bad_backend(client):
    assert len(search(["ACGT"], [], backend="cpu", client=client)) == 0
    with pytest.raises(ValueError, match="backend='gpu'"):  # here, before any task
        search(["ACGT"], ["ACGT"], backend="gpu", client=client)


def test_partitions_are_spread_over_the_workers(client, proteins, monkeypatch):
    monkeypatch.setattr(config, "SEARCH_PARTITION_RESIDUES", 2000)
    with distributed_dask.get_task_stream(client) as stream:
        search(proteins.take(np.arange(4)), UNIPROT, n=3, backend="cpu", client=client)
    tasks = [task for task in stream.data if "search-partition" in str(task["key"])]
    total = len(partition_bounds(Database.from_file(UNIPROT).sequences.offsets,
                                             2000))
    assert len(tasks) == total > 2
    assert {task["worker"] for task in tasks} == set(client.scheduler_info()["workers"])


def test_worker_killed_mid_run_loses_nothing(proteins, tied_database, monkeypatch):
    # Worker processes this time, so that one can die (os._exit) while it searches.
    queries = proteins.take(np.arange(0, len(proteins), 4))
    undisturbed = search(queries, tied_database, n=5, backend="cpu")
    monkeypatch.setattr(config, "SEARCH_PARTITION_RESIDUES", 300)
    partitions = len(partition_bounds(tied_database.sequences.offsets, 300))
    finished, outcome = [], {}
    with local_dask_client(processes=True) as dask_client:

        def run():
            outcome["result"] = search(queries, tied_database, n=5, backend="cpu",
                                       client=dask_client,
                                       progress=lambda done, total: finished.append(done))

        finished_before = kill_a_worker_mid_run(dask_client, run, lambda: len(finished))
    assert 0 < finished_before < partitions  # the worker died in the middle of the run
    same_hits(undisturbed, outcome["result"])


@pytest.mark.cuda
@pytest.mark.skipif(not CUDA_AVAILABLE, reason=f"CUDA unavailable: {CUDA_REASON}")
def test_gpu_and_cpu_workers_equal_the_local_search(proteins, tied_database, monkeypatch):
    # local_cluster(2) on a machine with a GPU: a GPU worker (CUDA backend, "auto") and a CPU
    # worker share the partitions; the merged hits equal the CPU backend's here.
    from gpualign.allpairs.cluster import local_cluster

    queries = proteins.take(np.arange(0, len(proteins), 7))
    local = search(queries, tied_database, n=9, task="path", backend="cpu")
    monkeypatch.setattr(config, "SEARCH_PARTITION_RESIDUES", 4000)
    with local_cluster(2, backend="auto") as dask_client:
        names = {worker["name"] for worker in dask_client.scheduler_info()["workers"].values()}
        assert any(name.startswith("gpu-") for name in names) and "cpu-0" in names
        with distributed_dask.get_task_stream(dask_client) as stream:
            on_cluster = search(queries, tied_database, n=9, task="path", backend="auto",
                                client=dask_client)
        same_hits(local, on_cluster)
        tasks = [task for task in stream.data if "search-partition" in str(task["key"])]
        assert {task["worker"] for task in tasks} == set(dask_client.scheduler_info()["workers"])

        def resident_partitions() -> int:
            import gc

            from gpualign.search import _cuda
            gc.collect()
            return len(_cuda._RESIDENT)

        # A worker keeps no partition on its GPU after its task: the partitions are many,
        # and a database kept resident belongs to the caller of a local search only.
        assert set(dask_client.run(resident_partitions).values()) == {0}


def test_examples_run():
    for module in (distributed, _dask):
        assert doctest.testmod(module, raise_on_error=True).attempted > 0


def test_cli_search_on_a_local_cluster_and_on_a_scheduler(client, tmp_path, capfd,
                                                          monkeypatch):
    queries = tmp_path / "queries.fa"
    proteins = SequenceSet.from_file(UNIPROT, "protein")
    queries.write_text("".join(f">{proteins.names[k]}\n{proteins[k]}\n" for k in (0, 50, 99)))
    database = tmp_path / "db.gpudb"
    assert main(["makedb", str(UNIPROT), "-o", str(database), "-q"]) == 0
    common = ["search", str(queries), str(database), "-n", "4", "--format", "blast6", "-q",
              "--backend", "cpu"]
    local, workers, joined = (tmp_path / f"{name}.tsv" for name in ("local", "workers",
                                                                     "joined"))
    assert main([*common, "-o", str(local)]) == 0
    capfd.readouterr()
    monkeypatch.setattr(config, "SEARCH_PARTITION_RESIDUES", 5000)
    assert main([*common, "--workers", "2", "-o", str(workers)]) == 0
    # -q: nothing on stderr, not even Dask's log of the cluster (here and in the workers)
    assert capfd.readouterr().err.splitlines() == []
    address = client.scheduler_info()["address"]
    assert main([*common, "--scheduler", address, "-o", str(joined)]) == 0
    assert workers.read_text() == joined.read_text() == local.read_text()
    assert len(local.read_text().splitlines()) == 12
    assert main([*common, "--workers", "2", "--scheduler", "tcp://x:1"]) == 2
    assert "not allowed with" in capfd.readouterr().err
