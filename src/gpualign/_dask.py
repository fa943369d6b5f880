"""Tasks on a Dask cluster the way gpualign's capabilities run them (:func:`gpualign.allpairs`'
tiles, :func:`gpualign.search`'s database partitions): shared inputs sent once, pure tasks
pulled by the workers at their own pace, results yielded as they finish.

The library never starts a cluster (that is :mod:`gpualign.allpairs.cluster`, for the CLI);
this module only runs tasks on the ``client`` a caller gives.
"""

from __future__ import annotations

import collections
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any


def run_pulled(client: Any, function: Callable[..., Any], shared: Sequence[Any],
               items: Iterable[tuple[int, ...]], arguments: Callable[[tuple[int, ...]], tuple],
               name: str, per_thread: int, ready: Callable[[], bool] | None = None,
               ) -> Iterator[tuple[tuple[int, ...], Any]]:
    """Yield ``(item, function(*shared, *arguments(item)))`` for every item, as the tasks
    finish on the cluster of ``client``.

    Parameters
    ----------
    client : dask.distributed.Client
    function : callable
        A pure function (no side effects): Dask runs a task again on another worker when the
        worker running it, or holding an input it needs, dies.
    shared : sequence
        Inputs of every task (None stays None). Each enters the graph once, as the argument of
        a task that returns it, and every task depends on that task: Dask moves it to each
        worker that needs it, and computes it again if the worker holding it is lost.
        (Scattering with ``broadcast=True`` relies on Dask's replicate, which is not robust:
        it hung a CI run here, as in dask/distributed#4907; scattered data is also lost for
        good with its worker.)
    items : iterable of tuple of int
        One task each; they name the tasks' keys (``gpualign-{name}-{item...}-{run}``). Taken
        one at a time as the tasks are submitted, so an iterator may read its input as it goes.
    arguments : callable
        An item's task's own arguments, after the shared ones; called as the task is submitted
        (so that a partition of a memory-mapped file is read only then).
    name : str
    per_thread : int
        Tasks a worker holds per thread: the one it runs and the next ones, so that it never
        waits for the scheduler between tasks.
    ready : callable, optional
        Asked before each task is submitted: while it returns False the next tasks wait, until
        it is asked again after the caller has taken the next result (so that a caller can
        bound the results it holds, or give the next tasks an input that a result brings). It
        must return True whenever no task is in flight.

    Examples
    --------
    >>> from gpualign.allpairs.cluster import local_cluster
    >>> with local_cluster(1, backend="cpu") as client:
    ...     done = dict(run_pulled(client, lambda base, value: base + value, [10],
    ...                            [(1,), (2,)], lambda item: (3 * item[0],), "example", 1))
    >>> done
    {(1,): 13, (2,): 16}
    """
    import dask
    from distributed import as_completed

    run = uuid.uuid4().hex[:16]
    with dask.config.set({"distributed.admin.large-graph-warning-threshold": "4GB"}):
        inputs = [None if value is None else
                  client.submit(_input, value, pure=False, key=f"gpualign-shared-{k}-{run}")
                  for k, value in enumerate(shared)]
    # Pull model: each worker holds at most `per_thread` tasks per thread and gets the next
    # when one finishes, so GPU and CPU workers take tasks at their own pace. Left to itself,
    # Dask places every task that needs a shared input on the worker that already holds it
    # (one GPU of two did all the work). The restriction is loose: the tasks of a worker that
    # dies run elsewhere, and a worker that joins gets tasks at the next refill.
    pending = iter(items)
    in_flight: dict[Any, tuple[tuple[int, ...], str]] = {}
    load: collections.Counter[str] = collections.Counter()
    finished = as_completed()

    def refill() -> None:
        threads = client.nthreads()
        for worker in sorted(threads, key=lambda address: load[address] / threads[address]):
            while load[worker] < per_thread * threads[worker] and (ready is None or ready()):
                item = next(pending, None)
                if item is None:
                    return
                future = client.submit(
                    function, *inputs, *arguments(item), pure=False,
                    key=f"gpualign-{name}-{'-'.join(map(str, item))}-{run}",
                    workers=[worker], allow_other_workers=True)
                in_flight[future] = item, worker
                load[worker] += 1
                finished.add(future)

    try:
        refill()
        for future in finished:
            item, worker = in_flight.pop(future)
            load[worker] -= 1
            result = future.result()
            refill()
            yield item, result
            refill()
    finally:
        client.cancel([*in_flight, *(future for future in inputs if future is not None)])


def _input(value: Any) -> Any:
    """A task's view of a shared input (see :func:`run_pulled`)."""
    return value
