"""Shared fixtures: the backend parametrization and small tunables that force multi-batch paths."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

import gpualign.config
from gpualign.backend import cuda_status

CUDA_AVAILABLE, CUDA_REASON = cuda_status()

#: Every backend a test should run on: the CPU always; CUDA marked ``cuda`` and skipped
#: (with the reason) where CuPy or a GPU is missing.
BACKENDS = [
    pytest.param("cpu", id="cpu"),
    pytest.param("cuda", id="cuda", marks=[
        pytest.mark.cuda,
        pytest.mark.skipif(not CUDA_AVAILABLE, reason=f"CUDA backend unavailable: {CUDA_REASON}"),
    ]),
]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The name of a backend (``"cpu"``, ``"cuda"``); tests using it run once per backend."""
    return request.param


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Shrink the batch tunables so that tiny inputs take the multi-batch/multi-block paths."""
    monkeypatch.setattr(gpualign.config, "CPU_BATCH_PAIRS", 7)
    monkeypatch.setattr(gpualign.config, "MATRIX_BLOCK_PAIRS", 5)
    monkeypatch.setattr(gpualign.config, "GPU_BATCH_BYTES", 4096)


@pytest.fixture
def small_kernel_bins(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only two kernel bins (1 word of 32 rows per thread; up to 3 words over 2 lanes of 2
    words, so that queries of 33-96 rows are padded by whole words and lanes) and slices of 64
    rows (2 lanes x 1 word), so that queries over 96 symbols run in many sliced passes and short
    ones use the thread-cooperative kernel."""
    monkeypatch.setattr(gpualign.config, "EDIT_KERNEL_BINS", ((1, 1, 1), (3, 2, 2)))
    monkeypatch.setattr(gpualign.config, "EDIT_SLICE_KERNEL", (2, 1))


@pytest.fixture
def small_lcs_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tiny LCS batches: a few subjects per batch on the CPU (7 symbols) and on the GPU (first
    batches of 5 symbols doubling up to 64), so that small collections stream as many batches
    through the two CUDA slots and the top-N merge."""
    monkeypatch.setattr(gpualign.config, "LCS_CPU_BATCH_RESIDUES", 7)
    monkeypatch.setattr(gpualign.config, "LCS_GPU_BATCH_RESIDUES", 64)
    monkeypatch.setattr(gpualign.config, "LCS_GPU_FIRST_BATCH_RESIDUES", 5)


#: ``(LCS_TILE_WORDS, LCS_SHARED_BYTES)`` that split a query of the LCS kernel differently:
#: 1- and 2-word tiles in one launch; 4-word tiles with room for a few tiles per launch (DNA),
#: so that long queries take several launches; 1-word tiles with one launch per tile.
LCS_TILINGS = {
    "tiles-1-2": ((1, 2), 48 * 1024),
    "tiles-4-few-per-launch": ((4,), 1024),
    "tiles-1-launch-per-tile": ((1,), 1),
}


@pytest.fixture(params=list(LCS_TILINGS))
def small_lcs_tiles(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Small query tiles of the CUDA LCS kernel (many tiles, carries passed between them) and
    small shared memory (several launches per query); the CPU backend ignores them. Tests using
    it run once per tiling in :data:`LCS_TILINGS`; returns the tiling's name."""
    tiles, shared = LCS_TILINGS[request.param]
    monkeypatch.setattr(gpualign.config, "LCS_TILE_WORDS", tiles)
    monkeypatch.setattr(gpualign.config, "LCS_SHARED_BYTES", shared)
    return request.param


@contextlib.contextmanager
def local_dask_client(processes: bool) -> Iterator:
    """A Dask client of a local cluster of two single-threaded workers: threads of this
    process (``processes=False``: quick to start, and config patches reach them) or worker
    processes (which can die, and whose config is their own), each with one Numba and OpenMP
    thread so that two workers and this process do not oversubscribe the CI machine's cores."""
    distributed = pytest.importorskip("distributed")
    kind = ({"processes": True, "env": {"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}}
            if processes else {"processes": False, "protocol": "tcp"})
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0",
                                  **kind) as cluster, distributed.Client(cluster) as client:
        yield client


def kill_a_worker_mid_run(client, run, progress) -> int:
    """Run ``run()`` in a thread and, once ``progress()`` (the units of work finished so far)
    reaches 2, end one worker process of ``client`` at once (``os._exit``); wait for the run to
    finish (a Dask run must survive it). Returns the progress when the worker died."""
    import os
    import threading
    import time

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 120
    while progress() < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    finished_before = progress()
    victim = sorted(client.scheduler_info()["workers"])[0]
    try:
        client.run(os._exit, 1, workers=[victim])  # the worker process dies at once
    except Exception:  # noqa: BLE001 - the call itself fails: its worker is gone
        pass
    thread.join(timeout=300)
    assert not thread.is_alive()
    return finished_before
