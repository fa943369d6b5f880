"""Read mapping beyond one machine: :func:`gpualign.map_reads` and
:func:`~gpualign.map.api.iter_mappings` with a Dask ``client``.

Every batch of reads (with its mates) is one task: a worker maps it with its own backend (CUDA
where it has a GPU, as the workers of :func:`gpualign.allpairs` choose) and sends back its
:class:`~gpualign.map.api.MappingResult`. The index goes to the cluster once, as an input
that Dask moves to each worker needing it and computes again if its holder dies (see
:func:`gpualign._dask.run_pulled`); a batch goes with its task. Tasks are pure: the task of a
worker that dies runs again elsewhere, and no read is lost.

The reads are read here as the tasks are submitted, and the results are handed on in input
order, those that finish early held until the batches before them are done; the batches ahead
of the next one handed on are bounded (a few per thread of the cluster), so memory holds a few
batches whatever the input's size. Pairs whose insert sizes are to be estimated wait for the
first batch's estimate, which every batch uses, as on one machine; the results are then those
of a mapping here. Each task carries the ``MAP_*`` settings of :mod:`gpualign.config` that
this process has (an ``override`` in force included), and its worker maps with them; a
worker in this very process (a cluster of threads) shares them and leaves them alone.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .. import config
from .._dask import run_pulled
from ..backend import resolve_backend
from ._reads import ReadBatch

__all__ = ["cluster_mappings"]

#: Batches a worker holds per thread: the one it maps and the next, so that a GPU worker
#: never waits for the scheduler (or the batch's transfer) between batches.
_BATCHES_IN_FLIGHT_PER_THREAD = 2

#: Batches submitted but not yet handed on, at most, per thread of the cluster: twice those in
#: flight, so that the workers stay busy while a slow batch holds back the ones after it.
_BATCHES_AHEAD_PER_THREAD = 2 * _BATCHES_IN_FLIGHT_PER_THREAD

#: The worker side of the clients' settings: the settings of the tasks running in this process
#: (one client's: tasks of other settings wait), how many run, and what restores the settings
#: that were there before them.
_SETTINGS_CHANGED = threading.Condition()
_running: dict[str, Any] = {"settings": None, "tasks": 0}
_restore_settings = contextlib.ExitStack()


def cluster_mappings(client: Any, map_batch: Callable[..., Any], index: Any,
                     batches: Iterable[tuple[ReadBatch, ReadBatch | None, float]],
                     insert_size: tuple[int, int] | None, backend: str,
                     options: dict[str, Any], *, paired: bool,
                     ) -> Iterator[tuple[ReadBatch, ReadBatch | None, Any]]:
    """Map ``batches`` (reads, mates or None, seconds spent reading them) on the Dask cluster
    of ``client``: yield each batch with its result in input order.

    Parameters
    ----------
    client : dask.distributed.Client
    map_batch : callable
        :func:`gpualign.map.api.map_batch`, run by the workers as
        ``map_batch(index, reads, mates, start, insert, backend=..., **options)``.
    index : MapIndex
        Sent to the cluster once.
    batches : iterable
        Read only as their tasks are submitted.
    insert_size : (int, int) or None
        None with ``paired``: estimated by the first batch's task, for every batch.
    backend : {"auto", "cpu", "cuda"}
        Resolved by each worker.
    options : dict
        ``k`` and ``max_candidates`` of :func:`~gpualign.map.api.map_batch`.
    paired : bool
        Whether the batches hold mates.

    Yields
    ------
    tuple of ReadBatch, ReadBatch or None, MappingResult
        As :func:`~gpualign.map.api.iter_mappings`; a result's ``stage_seconds`` are its
        worker's, with this process's ``read``.

    Examples
    --------
    >>> import numpy as np
    >>> from gpualign.allpairs.cluster import local_cluster
    >>> from gpualign.map.api import _read_pairs, map_batch
    >>> from gpualign.map.index import as_map_index
    >>> genome = "".join(np.random.default_rng(7).choice(list("ACGT"), 5000))
    >>> reads = [genome[i:i + 50] for i in (0, 900, 1800)]
    >>> with local_cluster(1, backend="cpu") as client:
    ...     done = list(cluster_mappings(client, map_batch, as_map_index([genome]),
    ...                                  _read_pairs(reads, None, 2), None, "cpu",
    ...                                  {"k": None, "max_candidates": 8}, paired=False))
    >>> [(reads.start, result.pos.tolist()) for reads, _, result in done]
    [(0, [0, 900]), (2, [1800])]
    """
    held: dict[int, tuple[ReadBatch, ReadBatch | None, float]] = {}
    finished: dict[int, Any] = {}
    insert = insert_size
    submitted = handed_on = 0
    read_all = False
    settings = {name: getattr(config, name) for name in config.defaults()
                if name.startswith("MAP_")}
    client_process = os.getpid()

    def items() -> Iterator[tuple[int]]:
        nonlocal submitted, read_all
        for number, batch in enumerate(batches):
            held[number] = batch
            submitted = number + 1
            yield (number,)
        read_all = True

    def arguments(item: tuple[int]) -> tuple:
        reads, mates, _ = held[item[0]]
        return (map_batch, reads.sequences, None if mates is None else mates.sequences,
                reads.start, insert, backend, options, settings, client_process)

    def ready() -> bool:
        if submitted == 0:
            return True
        if paired and insert is None:
            return False  # the first batch's estimate comes first
        return submitted - handed_on < _BATCHES_AHEAD_PER_THREAD * max(
            1, sum(client.nthreads().values()))

    for (number,), result in run_pulled(client, _map_on_worker, (index,), items(),
                                        arguments, "map-batch", _BATCHES_IN_FLIGHT_PER_THREAD,
                                        ready):
        if number == 0 and paired and insert is None:
            insert = result.insert_size
        finished[number] = result
        while handed_on in finished:
            result = finished.pop(handed_on)
            reads, mates, read_seconds = held.pop(handed_on)
            handed_on += 1
            result.stage_seconds = {"read": read_seconds, **result.stage_seconds}
            yield reads, mates, result
    if not read_all or held:
        raise RuntimeError("the Dask cluster has no workers: reads were left unmapped")


def _map_on_worker(index: Any, map_batch: Callable[..., Any], reads: Any, mates: Any,
                   start: int, insert: tuple[int, int] | None, backend: str,
                   options: dict[str, Any], settings: dict[str, Any],
                   client_process: int) -> Any:
    """A task: one batch mapped by the worker's backend, with its client's ``settings``; in
    the client's own process (``client_process``) with the settings in force there, which
    are the client's: a task of an earlier run, still going, would otherwise apply that run's
    settings and then restore older ones under the client."""
    same_process = os.getpid() == client_process
    with contextlib.nullcontext() if same_process else _client_settings(settings):
        return map_batch(index, reads, mates, start, insert, backend=resolve_backend(backend),
                         **options)


@contextlib.contextmanager
def _client_settings(settings: dict[str, Any]) -> Iterator[None]:
    """Run a task with its client's ``settings`` in force in this worker process.

    A worker's threads share the settings (module globals), so a task whose settings differ
    from those of the tasks running waits until they are done; tasks of the same settings run
    together, the first applying them (:func:`gpualign.config.override`) and the last
    restoring those before (an override per task would not do: the task that ends first would
    restore the old settings under the others).
    """
    with _SETTINGS_CHANGED:
        _SETTINGS_CHANGED.wait_for(lambda: not _running["tasks"]
                                   or _running["settings"] == settings)
        if not _running["tasks"]:
            _running["settings"] = settings
            if any(getattr(config, name) != value for name, value in settings.items()):
                _restore_settings.enter_context(config.override(**settings))
        _running["tasks"] += 1
    try:
        yield
    finally:
        with _SETTINGS_CHANGED:
            _running["tasks"] -= 1
            if not _running["tasks"]:
                _restore_settings.close()
                _SETTINGS_CHANGED.notify_all()
