"""A local Dask cluster for all-vs-all runs: one worker per GPU, the others on the CPU.

:func:`gpualign.allpairs` never starts a cluster; it runs on the ``client`` it is given. This
module is what ``gpualign allpairs --workers N`` (and the benchmark) start when asked.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from typing import Any

from ..backend import cuda_devices, resolve_backend


def worker_specs(count: int, backend: str = "auto",
                 cores: int | None = None) -> dict[str, tuple[dict[str, str], dict[str, int]]]:
    """Name -> (environment, Dask resources) of the ``count`` workers of a local cluster.

    With the CUDA backend (``backend`` "cuda", or "auto" on a machine with GPUs) the first
    workers are GPU workers, one per GPU, pinned to it with ``CUDA_VISIBLE_DEVICES`` and
    holding the resource ``GPU=1``; the others are CPU workers that see no GPU. Each worker
    runs one tile at a time on its share of the cores (Numba threads), so that the workers do
    not oversubscribe the machine.
    """
    gpus = cuda_devices() if resolve_backend(backend) == "cuda" else []
    if backend == "cuda" and count > len(gpus):
        raise ValueError(f"{count} workers with backend cuda: this machine has "
                         f"{len(gpus)} GPU(s), one worker each")
    threads = str(max(1, (cores or os.cpu_count() or 1) // count))
    specs = {}
    for k in range(count):
        gpu = gpus[k] if k < len(gpus) else None
        env = {"NUMBA_NUM_THREADS": threads, "OMP_NUM_THREADS": threads,
               "CUDA_VISIBLE_DEVICES": gpu or ""}
        name = f"gpu-{gpu}" if gpu else f"cpu-{k - len(gpus)}"
        specs[name] = (env, {"GPU": 1} if gpu else {})
    return specs


@contextlib.contextmanager
def local_cluster(workers: int, backend: str = "auto",
                  log_level: int = logging.WARNING) -> Iterator[Any]:
    """A Dask client of a cluster of ``workers`` local worker processes (see
    :func:`worker_specs`), closed on exit.

    Parameters
    ----------
    workers : int
    backend : {"auto", "cpu", "cuda"}
    log_level : int
        Dask's log records below this level are dropped, here and in the workers (the default,
        as in Dask's ``LocalCluster``, keeps warnings and errors: starting and stopping a
        cluster logs some 70 lines at level INFO).

    Examples
    --------
    >>> import gpualign
    >>> from gpualign.allpairs.cluster import local_cluster
    >>> seqs = gpualign.SequenceSet.from_sequences(["ACGTACGTAA", "ACGTACGTTA", "GGGG"], "dna")
    >>> with local_cluster(2, backend="cpu") as client:
    ...     hits = gpualign.allpairs(seqs, min_identity=0.8, client=client)
    >>> hits.query_index.tolist(), hits.target_index.tolist(), hits.identity.tolist()
    ([0], [1], [0.9])
    """
    try:
        import distributed
    except ImportError:
        raise ValueError("a local Dask cluster needs Dask: pip install "
                         "'gpualign[distributed]'") from None
    cluster = distributed.SpecCluster(
        workers={name: {"cls": distributed.Nanny,
                        "options": {"nthreads": 1, "host": "127.0.0.1", "env": env,
                                    "resources": resources, "silence_logs": log_level}}
                 for name, (env, resources) in worker_specs(workers, backend).items()},
        scheduler={"cls": distributed.Scheduler,
                   "options": {"host": "127.0.0.1", "dashboard": False}},
        silence_logs=log_level)
    with cluster, distributed.Client(cluster) as client:
        yield client
