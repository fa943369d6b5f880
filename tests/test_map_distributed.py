"""Read mapping on a Dask cluster (``client=``, ``gpualign map --workers/--scheduler``): the
batches' results come back in input order and equal a mapping here, single-end and pairs (the
first batch's insert estimate included); the batches are spread over the workers, those ahead
of a slow batch are bounded; a worker killed mid-run loses no read. CPU workers, and (on a GPU
machine) a GPU worker beside a CPU worker."""

from __future__ import annotations

import doctest
import threading
import time

import numpy as np
import pytest
from conftest import CUDA_AVAILABLE, CUDA_REASON, kill_a_worker_mid_run, local_dask_client
from test_map import REAL_READS, REFERENCE, simulate_pairs

import gpualign
from gpualign import config
from gpualign.cli import main
from gpualign.map import distributed
from gpualign.map.api import (
    MappingResult,
    _read_pairs,
    concatenate,
    iter_mappings,
    map_batch,
)
from gpualign.map.index import as_map_index
from gpualign.sequences import SequenceSet

distributed_dask = pytest.importorskip("distributed")

#: Reads a batch: the 2000 real reads make 20 batches, the 300 pairs 3.
BATCH = 100
FIELDS = ("read", "mate", "flag", "contig", "pos", "mapq", "nm", "score", "xs", "mate_contig",
          "mate_pos", "tlen")


@pytest.fixture(scope="module")
def client():
    # Threads of this process: quick to start; the batches are cut here, so config patches
    # here decide them.
    with local_dask_client(processes=False) as dask_client:
        yield dask_client


@pytest.fixture(scope="module")
def index():
    return as_map_index(REFERENCE, backend="cpu")


@pytest.fixture(scope="module")
def real_reads() -> SequenceSet:
    return SequenceSet.from_file(REAL_READS, "dna", invalid="wildcard")


@pytest.fixture(scope="module")
def pairs():
    reads, mates, _, _ = simulate_pairs(5, 300)
    return reads, mates


@pytest.fixture
def small_batches(monkeypatch):
    monkeypatch.setattr(config, "MAP_BATCH_READS", BATCH)


def same_mappings(local: MappingResult, on_cluster: MappingResult) -> None:
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(local, name), getattr(on_cluster, name),
                                      err_msg=name)
    assert local.cigar == on_cluster.cigar
    assert local.insert_size == on_cluster.insert_size
    assert local.reference_names == on_cluster.reference_names


@pytest.mark.usefixtures("small_batches")
def test_single_end_reads_equal_the_local_mapping(client, index, real_reads):
    local = gpualign.map_reads(index, real_reads, backend="cpu")
    on_cluster = gpualign.map_reads(index, real_reads, backend="cpu", client=client)
    same_mappings(local, on_cluster)
    assert on_cluster.read.tolist() == list(range(len(real_reads)))
    assert on_cluster.mapped.mean() > 0.9
    assert {"read", "candidates", "verify", "pair", "cigar"} <= set(on_cluster.stage_seconds)


@pytest.mark.usefixtures("small_batches")
def test_pairs_equal_the_local_mapping_estimated_insert_included(client, index, pairs):
    reads, mates = pairs
    local = gpualign.map_reads(index, reads, mates, backend="cpu")
    assert local.insert_size != tuple(config.MAP_DEFAULT_INSERT)
    with distributed_dask.get_task_stream(client) as stream:
        on_cluster = gpualign.map_reads(index, reads, mates, backend="cpu", client=client)
    same_mappings(local, on_cluster)
    assert (on_cluster.flag & 0x2).mean() > 0.9  # proper pairs
    # Every later batch waited for the first one's estimate.
    tasks = _batch_tasks(stream)
    first_done = max(span["stop"] for span in tasks[0]["startstops"])
    assert len(tasks) == len(reads) // BATCH
    assert all(span["start"] >= first_done for task in tasks[1:] for span in task["startstops"]
               if span["action"] == "compute")
    # A given insert size goes to every batch at once.
    given = gpualign.map_reads(index, reads, mates, backend="cpu", insert_size=(250, 550),
                               client=client)
    same_mappings(gpualign.map_reads(index, reads, mates, backend="cpu",
                                     insert_size=(250, 550)), given)


def _batch_tasks(stream) -> list[dict]:
    """The map tasks of a task stream, by batch number."""
    tasks = [task for task in stream.data if "-map-batch-" in str(task["key"])]
    return sorted(tasks, key=lambda task: int(str(task["key"]).split("-map-batch-")[1]
                                              .split("-")[0]))


@pytest.mark.usefixtures("small_batches")
def test_batches_are_spread_over_the_workers(client, index, real_reads):
    with distributed_dask.get_task_stream(client) as stream:
        gpualign.map_reads(index, real_reads, backend="cpu", client=client)
    tasks = _batch_tasks(stream)
    assert len(tasks) == len(real_reads) // BATCH
    assert {task["worker"] for task in tasks} == set(client.scheduler_info()["workers"])


def _slow_first_batch(index, reads, mates, start, insert, **options):
    """:func:`map_batch`, the first batch a second late: the others finish before it."""
    if start == 0:
        time.sleep(1.0)
    return map_batch(index, reads, mates, start, insert, **options)


def test_results_in_input_order_and_the_batches_ahead_bounded(client, index, real_reads):
    options = {"k": None, "max_candidates": 8}
    with distributed_dask.get_task_stream(client) as stream:
        done = list(distributed.cluster_mappings(
            client, _slow_first_batch, index, _read_pairs(real_reads, None, 50), None, "cpu",
            options, paired=False))
    assert [reads.start for reads, _, _ in done] == list(range(0, len(real_reads), 50))
    local = [map_batch(index, reads.sequences, None, reads.start, None, backend="cpu",
                       **options) for reads, _, _ in done]
    for (_, _, result), expected in zip(done, local, strict=True):
        same_mappings(expected, result)
    # The later batches finished first, yet no more of them were given out than the bound.
    tasks = _batch_tasks(stream)
    first_done = max(span["stop"] for span in tasks[0]["startstops"])
    before = [task for task in tasks[1:]
              if min(span["start"] for span in task["startstops"]) < first_done]
    threads = sum(client.nthreads().values())
    assert 0 < len(before) < distributed._BATCHES_AHEAD_PER_THREAD * threads < len(tasks)


def test_empty_reads_bad_backend_and_mates_of_another_count(client, index, pairs):
    assert len(gpualign.map_reads(index, [], backend="cpu", client=client)) == 0
    with pytest.raises(ValueError, match="backend='gpu'"):  # here, before any task
        list(iter_mappings(index, ["ACGT"], backend="gpu", client=client))
    reads, mates = pairs
    with config.override(MAP_BATCH_READS=BATCH), \
            pytest.raises(ValueError, match="differ in number"):
        gpualign.map_reads(index, reads, mates[:-1], backend="cpu", client=client)


def test_a_cluster_without_workers_is_an_error_not_a_loss(index):
    with distributed_dask.LocalCluster(n_workers=0, processes=False,
                                       dashboard_address=":0") as cluster, \
            distributed_dask.Client(cluster) as dask_client, \
            pytest.raises(RuntimeError, match="no workers"):
        gpualign.map_reads(index, ["ACGT" * 20], backend="cpu", client=dask_client)


def test_worker_killed_mid_run_loses_no_read(index, pairs, monkeypatch):
    # Worker processes this time, so that one can die (os._exit) while it maps.
    reads, mates = pairs
    # Batches of 4 pairs: 75 tasks, so that the run is still going when the worker dies even
    # where the workers outpace the client's polling thread (a loaded machine).
    monkeypatch.setattr(config, "MAP_BATCH_READS", 4)
    undisturbed = gpualign.map_reads(index, reads, mates, backend="cpu")
    batches = len(reads) // 4
    finished, outcome = [], {}
    with local_dask_client(processes=True) as dask_client:

        def run():
            results = []
            for _, _, result in iter_mappings(index, reads, mates, backend="cpu",
                                              client=dask_client):
                results.append(result)
                finished.append(len(results))
            outcome["results"] = results

        finished_before = kill_a_worker_mid_run(dask_client, run, lambda: len(finished))
    assert 0 < finished_before < batches  # the worker died in the middle of the run
    same_mappings(undisturbed, concatenate(outcome["results"]))


def test_workers_map_with_the_clients_settings(index, real_reads):
    # Worker processes, whose config is their own: the client's override goes with each task.
    with config.override(MAP_MAX_EDIT_FRACTION=0.0, MAP_BATCH_READS=BATCH):
        local = gpualign.map_reads(index, real_reads, backend="cpu")
        with local_dask_client(processes=True) as dask_client:
            on_cluster = gpualign.map_reads(index, real_reads, backend="cpu",
                                            client=dask_client)
            left = dask_client.run(lambda: config.MAP_MAX_EDIT_FRACTION)
    same_mappings(local, on_cluster)
    assert 0 < on_cluster.mapped.sum() < gpualign.map_reads(index, real_reads,
                                                            backend="cpu").mapped.sum()
    assert set(left.values()) == {config.defaults()["MAP_MAX_EDIT_FRACTION"]}  # restored


def test_a_workers_tasks_share_their_clients_settings_and_restore_them_last():
    # The tasks of a worker's threads: those of one client's settings run together and the
    # last one restores the settings; a task of other settings waits for them.
    entered, release, order = threading.Event(), threading.Event(), []
    ours, theirs = {"MAP_MAX_OCCURRENCES": 7}, {"MAP_MAX_OCCURRENCES": 9}

    def task(settings, name, hold=False):
        with distributed._client_settings(settings):
            order.append((name, config.MAP_MAX_OCCURRENCES))
            if hold:
                entered.set()
                release.wait(10)
            order.append((name, config.MAP_MAX_OCCURRENCES))

    first = threading.Thread(target=task, args=(ours, "first", True))
    first.start()
    entered.wait(10)
    task(ours, "second")  # runs beside the first, and ends first: the settings stay
    other = threading.Thread(target=task, args=(theirs, "other"))
    other.start()
    time.sleep(0.2)  # the other client's task waits for the first
    release.set()
    first.join(10)
    other.join(10)
    assert order == [("first", 7), ("second", 7), ("second", 7), ("first", 7), ("other", 9),
                     ("other", 9)]
    assert config.MAP_MAX_OCCURRENCES == config.defaults()["MAP_MAX_OCCURRENCES"]


@pytest.mark.cuda
@pytest.mark.skipif(not CUDA_AVAILABLE, reason=f"CUDA unavailable: {CUDA_REASON}")
def test_gpu_and_cpu_workers_equal_the_local_mapping(index, pairs, monkeypatch):
    # local_cluster(2) on a machine with a GPU: a GPU worker (CUDA backend, "auto") and a CPU
    # worker share the batches; the results equal the CPU backend's here.
    from gpualign.allpairs.cluster import local_cluster

    reads, mates = pairs
    monkeypatch.setattr(config, "MAP_BATCH_READS", 30)
    local = gpualign.map_reads(index, reads, mates, backend="cpu")
    with local_cluster(2, backend="auto") as dask_client:
        names = {worker["name"] for worker in dask_client.scheduler_info()["workers"].values()}
        assert any(name.startswith("gpu-") for name in names) and "cpu-0" in names
        with distributed_dask.get_task_stream(dask_client) as stream:
            on_cluster = gpualign.map_reads(index, reads, mates, backend="auto",
                                            client=dask_client)
        same_mappings(local, on_cluster)
        assert {task["worker"] for task in _batch_tasks(stream)} == \
            set(dask_client.scheduler_info()["workers"])


def test_examples_run():
    assert doctest.testmod(distributed, raise_on_error=True).attempted > 0


@pytest.mark.usefixtures("small_batches")
def test_cli_map_on_a_local_cluster_and_on_a_scheduler(client, tmp_path, capfd, pairs):
    reads, mates = pairs
    paths = []
    for name, records in (("reads", reads), ("mates", mates)):
        path = tmp_path / f"{name}.fq"
        path.write_text("".join(f"@pair{k}\n{text}\n+\n{'I' * len(text)}\n"
                                for k, text in enumerate(records)))
        paths.append(str(path))
    common = ["map", str(REFERENCE), *paths, "-q", "--backend", "cpu"]
    local, workers, joined = (tmp_path / f"{name}.sam" for name in ("local", "workers",
                                                                     "joined"))
    assert main([*common, "-o", str(local)]) == 0
    capfd.readouterr()
    assert main([*common, "--workers", "2", "-o", str(workers)]) == 0
    # -q: nothing on stderr, not even Dask's log of the cluster (here and in the workers)
    assert capfd.readouterr().err.splitlines() == []
    address = client.scheduler_info()["address"]
    assert main([*common, "--scheduler", address, "-o", str(joined)]) == 0
    assert _sam_records(workers) == _sam_records(joined) == _sam_records(local)
    assert len([line for line in _sam_records(local) if not line.startswith("@")]) == \
        2 * len(reads)
    assert main([*common, "--workers", "2", "--scheduler", "tcp://x:1"]) == 2
    assert "not allowed with" in capfd.readouterr().err
    assert main(["map", "--help"]) == 0  # its -k help has a percent sign, which argparse formats
    assert "--scheduler ADDRESS" in capfd.readouterr().out
    assert main([*common[:-3], "--workers", "1", "-o", str(workers)]) == 0
    assert "on a local Dask cluster of 1 worker" in capfd.readouterr().err


def _sam_records(path) -> list[str]:
    """The lines of a SAM file but its @PG line, which names the command line."""
    return [line for line in path.read_text().splitlines() if not line.startswith("@PG")]


@pytest.mark.usefixtures("small_batches")
def test_cli_map_cuda_on_a_scheduler_from_a_client_without_a_gpu(client, tmp_path, capfd,
                                                                 monkeypatch):
    # This process has no GPU; the workers stand for GPU workers (their --backend cuda
    # resolves to the CPU here). The client builds the index on the CPU instead of failing.
    from gpualign import backend
    monkeypatch.setattr(backend, "cuda_status", lambda: (False, "no GPU in this test"))
    monkeypatch.setattr(distributed, "resolve_backend", lambda requested: "cpu")
    common = ["map", str(REFERENCE), str(REAL_READS), "-q"]
    local, joined = tmp_path / "local.sam", tmp_path / "joined.sam"
    assert main([*common, "--backend", "cpu", "-o", str(local)]) == 0
    address = client.scheduler_info()["address"]
    assert main([*common, "--backend", "cuda", "--scheduler", address, "-o", str(joined)]) == 0
    assert _sam_records(joined) == _sam_records(local)
    capfd.readouterr()
    # --workers start here, on the machine without a GPU: an error before any work.
    assert main([*common, "--backend", "cuda", "--workers", "1"]) == 2
    assert "backend 'cuda' requested but unavailable: no GPU in this test" in \
        capfd.readouterr().err


def test_a_task_in_the_clients_own_process_leaves_its_settings_alone(monkeypatch):
    # A worker thread of the client's process shares its settings: a task there (one of an
    # earlier run still going, whose settings differ) must neither apply them nor restore older
    # ones afterwards. A worker process of its own applies them for the task, then restores.
    import os

    monkeypatch.setattr(config, "MAP_BATCH_READS", 4)
    seen = []

    def fake_map_batch(*args, **kwargs):
        seen.append(config.MAP_BATCH_READS)

    earlier_run = {"MAP_BATCH_READS": 99}
    distributed._map_on_worker(None, fake_map_batch, None, None, 0, None, "cpu", {},
                               earlier_run, os.getpid())
    distributed._map_on_worker(None, fake_map_batch, None, None, 0, None, "cpu", {},
                               earlier_run, -1)  # as if from another process
    assert seen == [4, 99] and config.MAP_BATCH_READS == 4
