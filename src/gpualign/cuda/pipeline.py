"""Batches in flight on CUDA streams: staging, copies, kernels and the host's work on results
overlap.

A capability that streams batches through the GPU (one query against many subjects, a database
search, read mapping) supplies a :class:`Stage` for each device, which knows only its own
work:

- ``enqueue(slot, batch)`` stages one batch into the slot's page-locked buffers and queues its
  copies and kernels on the slot's stream; it returns what ``finish`` needs;
- ``finish(pending)``, once that work is done, makes the batch's result (copied out of the
  slot's buffers, which the slot's next batch reuses);
- ``split(batch)`` gives the smaller batches to run instead of one that ran out of device
  memory, or raises.

Everything else is here. Each device has a few :class:`Slot` s used in turn, each with its own
stream, page-locked host buffers and device buffers that grow to the largest batch and are then
reused, so that the steady state allocates nothing. While the GPU works on one slot's batch, the
host stages the next batch into another slot (on several threads, :meth:`Slot.stage`) and
queues its work, so copies overlap kernels. Results go to ``consume`` oldest first on each
device and never two at a time, while the GPU runs on. With several devices, one pipeline per
device pulls batches from the one shared source. An error on any device stops them all and is
re-raised in the caller once the work in flight is synchronized (no copy may still read or
write host memory). A batch that runs out of device memory is replaced by the parts ``split``
gives, after the work in flight is drained and the memory pool emptied.

Examples
--------
A stage that doubles float arrays on the GPU:

>>> import numpy as np
>>> class Double:
...     def enqueue(self, slot, batch):
...         staged = slot.host.get("in", len(batch), np.float64)
...         slot.stage(staged, batch)
...         data = slot.gpu.get("data", len(batch), np.float64)
...         data.set(staged, stream=slot.stream)
...         data *= 2  # the slot's stream is the current one during enqueue
...         out = slot.host.get("out", len(batch), np.float64)
...         data.get(stream=slot.stream, out=out, blocking=False)
...         return out
...     def finish(self, out):
...         return out.copy()  # the slot's next batch reuses ``out``
...     def split(self, batch):
...         if len(batch) == 1:
...             raise MemoryError("one element does not fit")
...         return [batch[:len(batch) // 2], batch[len(batch) // 2:]]
>>> results = []
>>> run([np.arange(3.0), np.arange(2.0)], lambda device: Double(), results.append,
...     slots=2)  # doctest: +SKIP
>>> [result.tolist() for result in results]  # doctest: +SKIP
[[0.0, 2.0, 4.0], [0.0, 2.0]]
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import numpy as np

from .host import HostBuffers

__all__ = ["DeviceBuffers", "Slot", "Stage", "run"]

#: Elements a staging thread copies at least: smaller parts cost more to hand to a thread than
#: to copy.
_STAGE_PART = 1 << 22


class Stage(Protocol):
    """What a capability supplies: its work on one device, made there by ``open_stage``."""

    def enqueue(self, slot: Slot, batch: Any) -> Any:
        """Stage ``batch`` into ``slot``'s buffers and queue its copies and kernels on
        ``slot.stream`` (the current stream meanwhile); return what :meth:`finish` needs. The
        slot's previous batch is finished, so its buffers are free."""

    def finish(self, pending: Any) -> Any:
        """The result of a batch whose queued work is done, from what :meth:`enqueue` returned
        (copied out of the slot's buffers)."""

    def split(self, batch: Any) -> list[Any]:
        """The batches to run instead of ``batch``, which ran out of device memory; raise
        (``MemoryError``) when it cannot be made smaller."""


class DeviceBuffers:
    """Named device arrays that grow to the largest request and are then reused. Used on one
    stream: the memory pool hands a freed array's memory to its stream only, after the work
    queued there."""

    def __init__(self) -> None:
        self._held: dict[str, Any] = {}

    def get(self, name: str, size: int, dtype: Any) -> Any:
        """A device array of ``size`` elements of ``dtype`` under ``name`` (its contents are
        whatever the last user left)."""
        import cupy

        held = self._held.get(name)
        if held is None or held.size < size or held.dtype != np.dtype(dtype):
            # Let go of the old array before allocating, so that the pool may reuse its memory.
            self._held.pop(name, None)
            del held
            held = self._held[name] = cupy.empty(max(size, 1), dtype=dtype)
        return held[:size]


class _Stager:
    """Copies into page-locked memory on the threads of ``executor`` (NumPy releases the GIL):
    one thread copies well below what a kernel consumes."""

    def __init__(self, executor: ThreadPoolExecutor, threads: int) -> None:
        self.executor = executor
        self.threads = threads

    def copy(self, destination: np.ndarray, source: np.ndarray) -> None:
        destination = destination[:len(source)]
        step = max(_STAGE_PART, -(-len(source) // self.threads))
        if len(source) <= step:
            destination[:] = source
            return
        parts = [self.executor.submit(np.copyto, destination[lo:lo + step], source[lo:lo + step])
                 for lo in range(0, len(source), step)]
        for part in parts:
            part.result()


class Slot:
    """A stream with its page-locked host buffers (:attr:`host`), its device buffers
    (:attr:`gpu`) and the batch it is working on.

    Attributes
    ----------
    stream : cupy.cuda.Stream
        The slot's own stream (non-blocking).
    host : HostBuffers
        Page-locked host arrays, reused from batch to batch.
    gpu : DeviceBuffers
        Device arrays, reused from batch to batch.
    """

    def __init__(self, stager: _Stager) -> None:
        import cupy

        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.host = HostBuffers()
        self.gpu = DeviceBuffers()
        self._stager = stager
        #: What the stage's ``finish`` needs and the event that ends the batch's work.
        self.pending: tuple[Any, Any] | None = None

    def stage(self, destination: np.ndarray, source: np.ndarray) -> None:
        """Copy ``source`` into the start of ``destination`` (a page-locked buffer of this slot)
        on the pipeline's staging threads."""
        self._stager.copy(destination, source)


class _Pipeline:
    """The slots of one device, used in turn: :meth:`submit` batches, then :meth:`drain`."""

    def __init__(self, device: int, open_stage: Callable[[int], Stage],
                 consume: Callable[[Any], None], stager: _Stager, slots: int) -> None:
        import cupy

        self.device = cupy.cuda.Device(device)
        with self.device:
            self.stage = open_stage(device)
            self.slots = [Slot(stager) for _ in range(max(2, slots))]
        self.turn = 0
        self.consume = consume

    def _finish(self, slot: Slot) -> None:
        if slot.pending is None:
            return
        pending, event = slot.pending
        slot.pending = None
        event.synchronize()
        self.consume(self.stage.finish(pending))

    def submit(self, batch: Any) -> None:
        import cupy

        with self.device:
            slot = self.slots[self.turn]
            self._finish(slot)
            try:
                with slot.stream:
                    pending = self.stage.enqueue(slot, batch)
                    slot.pending = (pending, slot.stream.record())
            except cupy.cuda.memory.OutOfMemoryError:
                parts = self.stage.split(batch)
                self.drain()
                cupy.get_default_memory_pool().free_all_blocks()
                for part in parts:
                    self.submit(part)
                return
            self.turn = (self.turn + 1) % len(self.slots)

    def drain(self) -> None:
        """Wait for the batches in flight and hand their results over, oldest first."""
        with self.device:
            for _ in self.slots:
                self._finish(self.slots[self.turn])
                self.turn = (self.turn + 1) % len(self.slots)

    def synchronize(self) -> None:
        """Wait for the work in flight without handing results over (after an error)."""
        for slot in self.slots:
            slot.stream.synchronize()


def run(batches: Iterable[Any], open_stage: Callable[[int], Stage],
        consume: Callable[[Any], None], devices: Sequence[int] | None = None, *, slots: int,
        staging_threads: int | None = None) -> None:
    """Run every batch of ``batches`` through the stages of ``devices``.

    Parameters
    ----------
    batches : iterable
        The shared source; with several devices, each pulls its next batch from it in turn.
    open_stage : callable
        ``open_stage(device)`` makes the :class:`Stage` of ``device`` (called with that device
        current, on the thread that drives it).
    consume : callable
        ``consume(result)`` for the result of each batch (``Stage.finish``): oldest first on
        each device, never concurrently.
    devices : list of int, optional
        The GPUs to use, one pipeline each (default: the current device).
    slots : int
        Batches in flight per device (at least 2).
    staging_threads : int, optional
        Threads of :meth:`Slot.stage`, shared by every device (default: one per core).

    Raises
    ------
    ValueError
        When a device does not exist.
    """
    import cupy

    if devices is None:
        devices = [cupy.cuda.Device().id]
    available = cupy.cuda.runtime.getDeviceCount()
    for device in devices:
        if device >= available:
            raise ValueError(f"devices: GPU {device} does not exist ({available} present)")
    lock = threading.Lock()

    def consume_locked(result: Any) -> None:
        with lock:
            consume(result)

    threads = staging_threads or os.cpu_count() or 1
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="gpualign-stage") as executor:
        _run_pipelines(batches, open_stage, consume_locked, list(devices),
                       _Stager(executor, threads), slots)


def _run_pipelines(batches: Iterable[Any], open_stage: Callable[[int], Stage],
                   consume: Callable[[Any], None], devices: list[int], stager: _Stager,
                   slots: int) -> None:
    """One pipeline per device, each pulling batches from the shared source on its own thread
    (the caller's with one device); the first error is re-raised here."""
    source = iter(batches)
    source_lock = threading.Lock()
    errors: list[BaseException] = []

    def work(device: int) -> None:
        pipeline = None
        try:
            pipeline = _Pipeline(device, open_stage, consume, stager, slots)
            while not errors:
                with source_lock:
                    batch = next(source, None)
                if batch is None:
                    break
                pipeline.submit(batch)
            pipeline.drain()
        except BaseException as exc:  # re-raised in the caller's thread
            errors.append(exc)
            if pipeline is not None:
                pipeline.synchronize()  # no copy may still read host memory

    if len(devices) == 1:
        work(devices[0])
    else:
        threads = [threading.Thread(target=work, args=(d,), name=f"gpualign-gpu{d}")
                   for d in devices]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    if errors:
        raise errors[0]
