"""Shared fixtures: the backend parametrization and small tunables that force multi-batch paths."""

from __future__ import annotations

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
    """Only two kernel bins (1 word per thread; 2 words over 2 lanes) and slices of 128 rows
    (2 lanes x 1 word), so that queries over 128 symbols run in many sliced passes and short
    ones use the thread-cooperative kernel."""
    monkeypatch.setattr(gpualign.config, "EDIT_KERNEL_BINS", ((1, 1, 1), (2, 2, 1)))
    monkeypatch.setattr(gpualign.config, "EDIT_SLICE_KERNEL", (2, 1))
