#!/usr/bin/env python3
"""Long edit-distance pairs: distance and CIGAR of one long pair (1 Mbp x 1 Mbp by default)
and distances of many 10-50 kb pairs, with the peak GPU memory of each call.

    python benchmarks/bench_edit_long.py                        # 1 Mbp x 1 Mbp on CUDA
    python benchmarks/bench_edit_long.py --pairs 2000 --length 10000 --max-length 50000
    python benchmarks/bench_edit_long.py --backend cpu --length 100000 --check
    python benchmarks/bench_edit_long.py --words 2 --lanes 16   # LONG_EDIT_* settings
    python benchmarks/bench_edit_long.py --repeats 1 --profile  # where the time goes

The target is the query with about ``--divergence`` of its positions edited (substitutions,
insertions and deletions in equal parts). Rates count m*n cells per pair (for the CIGAR, the
same cells: a "TCUPS-equivalent"). The peak GPU memory is the most that CuPy's memory pool
held during the call (the pool is emptied before it; it keeps what it allocates, so its size
after the call is its peak), beside the device's used memory from cudaMemGetInfo. ``--check``
compares the distance (and the CIGAR's cost) with edlib on the CPU.

``--profile`` (CUDA) makes one more call of each task with every kernel of the long-pair path
timed by CUDA events and each stage timed on the host (synchronized at its end): the distance
launches, and for the CIGAR each level of Hirschberg's recursion (its splits: one launch over
the whole rows, then the choice of the columns; its leaves: traced in full). A stage's host
time beyond its kernels' is launch overhead, transfers and NumPy work; "outside the stages" is
the rest of the call (grouping, operation buffers to CIGAR text, and the pairs too short for
the long kernel, whose kernels run on streams of their own: their event times there only
bound them).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import statistics
import time

import numpy as np

import gpualign
from gpualign import config
from gpualign.cigar import cigar_edit_cost


def mutated(rng: np.random.Generator, query: np.ndarray, divergence: float) -> np.ndarray:
    """``query`` with about ``divergence * len(query)`` random single-symbol edits."""
    edits = rng.random(len(query)) < divergence
    kind = rng.integers(0, 3, len(query))
    keep = ~(edits & (kind == 1))  # deletions
    target = query.copy()
    substitute = edits & (kind == 0)
    target[substitute] = (target[substitute] + rng.integers(1, 4, substitute.sum())) % 4
    inserted = np.flatnonzero(edits & (kind == 2))
    out = np.insert(target, inserted, rng.integers(0, 4, len(inserted)).astype(np.uint8))
    keep = np.insert(keep, inserted, True)
    return out[keep]


def as_text(codes: np.ndarray) -> str:
    return np.array(list("ACGT"))[codes].view(f"<U{len(codes)}")[0]


def timed(call, repeats: int, backend: str):
    """Median seconds of ``repeats`` calls (after one warm-up call), the last result, and the
    peak GPU memory (pool bytes, device used bytes) of one call."""
    sync = lambda: None  # noqa: E731
    pool = None
    if backend == "cuda":
        import cupy

        pool = cupy.get_default_memory_pool()
        sync = cupy.cuda.Device().synchronize
    result = call()
    sync()
    peak = None
    if pool is not None:
        import cupy

        pool.free_all_blocks()
        result = call()
        sync()
        free, total = cupy.cuda.runtime.memGetInfo()
        peak = (pool.total_bytes(), total - free)
    seconds = []
    for _ in range(repeats):
        sync()
        begin = time.perf_counter()
        result = call()
        sync()
        seconds.append(time.perf_counter() - begin)
    return statistics.median(seconds), result, peak


class TimedKernel:
    """A compiled kernel whose launches record CUDA events for ``profile``; its attributes
    (launch bounds, shared memory settings) are the kernel's."""

    def __init__(self, kernel, name: str, profile: Profile) -> None:
        object.__setattr__(self, "_kernel", kernel)
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_profile", profile)

    def __getattr__(self, attribute: str):
        return getattr(self._kernel, attribute)

    def __setattr__(self, attribute: str, value) -> None:
        setattr(self._kernel, attribute, value)

    def __call__(self, *args, **kwargs) -> None:
        import cupy

        begin, end = cupy.cuda.Event(), cupy.cuda.Event()
        begin.record()
        self._kernel(*args, **kwargs)
        end.record()
        self._profile.events.append((self._profile.stage, self._name, begin, end))


class Profile:
    """Kernel times (CUDA events) and host times of the stages of the long-pair CUDA path,
    gathered by wrapping the functions of ``gpualign.edit._cuda`` for one call."""

    def __init__(self) -> None:
        self.stage = "outside the stages"
        self.level = 0
        self.events: list[tuple[str, str, object, object]] = []
        self.wall: dict[str, float] = collections.defaultdict(float)
        self.calls: collections.Counter = collections.Counter()
        self.sizes: dict[str, int] = collections.defaultdict(int)

    @contextlib.contextmanager
    def timing(self, stage: str, items: int = 0):
        """Attribute the kernels launched inside to ``stage``; add its host time (after a
        synchronization) and ``items`` (subproblems) to it."""
        import cupy

        outer, self.stage = self.stage, stage
        begin = time.perf_counter()
        try:
            yield
        finally:
            cupy.cuda.Device().synchronize()
            self.wall[stage] += time.perf_counter() - begin
            self.calls[stage] += 1
            self.sizes[stage] += items
            self.stage = outer

    def timed_kernel(self, kernel, name: str) -> TimedKernel:
        return TimedKernel(kernel, name, self)

    @contextlib.contextmanager
    def installed(self):
        """Wrap ``run_long``, ``hirschberg``'s callbacks and every kernel of the module."""
        from gpualign.edit import _cuda

        saved = {name: getattr(_cuda, name) for name in ("get_kernel", "run_long", "hirschberg")}

        def get_kernel(path, name, *args, **kwargs):
            return self.timed_kernel(saved["get_kernel"](path, name, *args, **kwargs), name)

        def run_long(*args, **kwargs):
            if self.stage.startswith("level"):  # a level's splits: timed by split_columns
                return saved["run_long"](*args, **kwargs)
            with self.timing("distance launch", len(args[2][1])):
                return saved["run_long"](*args, **kwargs)

        def hirschberg(q_len, t_len, distance, is_leaf, split_columns, trace_leaves):
            self.level = 0

            def split(pair, *rest):
                self.level += 1
                with self.timing(f"level {self.level:2d} splits", len(pair)):
                    return split_columns(pair, *rest)

            def leaves(pair, *rest):
                with self.timing(f"level {self.level + 1:2d} leaves", len(pair)):
                    return trace_leaves(pair, *rest)
            return saved["hirschberg"](q_len, t_len, distance, is_leaf, split, leaves)

        for name, value in (("get_kernel", get_kernel), ("run_long", run_long),
                            ("hirschberg", hirschberg)):
            setattr(_cuda, name, value)
        try:
            yield self
        finally:
            for name, value in saved.items():
                setattr(_cuda, name, value)

    def report(self, total: float) -> None:
        import cupy

        cupy.cuda.Device().synchronize()
        kernel_seconds: dict[str, float] = collections.defaultdict(float)
        by_kernel: dict[tuple[str, str], float] = collections.defaultdict(float)
        for stage, name, begin, end in self.events:
            seconds = cupy.cuda.get_elapsed_time(begin, end) / 1e3
            kernel_seconds[stage] += seconds
            by_kernel[stage, name] += seconds
        self.wall["outside the stages"] = total - sum(self.wall.values())
        print(f"  {'stage':24} {'calls':>5} {'items':>8} {'host s':>8} {'kernels s':>9}  kernels")
        for stage in sorted(self.wall):
            kernels = ", ".join(f"{name} {seconds:.3f}" for (where, name), seconds
                                in sorted(by_kernel.items()) if where == stage)
            print(f"  {stage:24} {self.calls[stage]:5d} {self.sizes[stage]:8d} "
                  f"{self.wall[stage]:8.3f} {kernel_seconds[stage]:9.3f}  {kernels}")
        print(f"  total {total:.3f} s, kernels {sum(kernel_seconds.values()):.3f} s")


def profiled(call) -> None:
    """One call of ``call`` with its stages and kernels timed (see :class:`Profile`)."""
    import cupy

    with Profile().installed() as profile:
        cupy.cuda.Device().synchronize()
        begin = time.perf_counter()
        call()
        cupy.cuda.Device().synchronize()
        profile.report(time.perf_counter() - begin)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--length", type=int, default=1_000_000, help="query length")
    parser.add_argument("--max-length", type=int, default=None,
                        help="with --pairs: lengths uniform in [length, max-length]")
    parser.add_argument("--pairs", type=int, default=1)
    parser.add_argument("--divergence", type=float, default=0.05)
    parser.add_argument("--mode", default="global", choices=["global", "prefix", "infix"])
    parser.add_argument("--tasks", default="distance,path")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--lanes", type=int, default=None, help="LONG_EDIT_THREADS")
    parser.add_argument("--words", type=int, default=None, help="LONG_EDIT_WORDS_PER_LANE")
    parser.add_argument("--min-cells", type=int, default=None, help="LONG_EDIT_MIN_CELLS")
    parser.add_argument("--check", action="store_true", help="compare with edlib")
    parser.add_argument("--profile", action="store_true",
                        help="time each stage and kernel of one more call (CUDA)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    settings = {name: value for name, value in (
        ("LONG_EDIT_THREADS", args.lanes), ("LONG_EDIT_WORDS_PER_LANE", args.words),
        ("LONG_EDIT_MIN_CELLS", args.min_cells)) if value is not None}

    rng = np.random.default_rng(args.seed)
    high = args.max_length or args.length
    lengths = rng.integers(args.length, high + 1, args.pairs)
    queries = [rng.integers(0, 4, int(n)).astype(np.uint8) for n in lengths]
    targets = [mutated(rng, q, args.divergence) for q in queries]
    q_text = [as_text(q) for q in queries]
    t_text = [as_text(t) for t in targets]
    cells = float(sum(len(q) * len(t) for q, t in zip(queries, targets, strict=True)))
    print(f"{args.pairs} pair(s), query {args.length}..{high}, divergence {args.divergence}, "
          f"mode {args.mode}, backend {args.backend}, settings {settings or 'defaults'}")
    with config.override(**settings):
        for task in args.tasks.split(","):
            def call(task=task):
                return gpualign.edit_distance(q_text, t_text, mode=args.mode, task=task,
                                              backend=args.backend)
            seconds, result, peak = timed(call, args.repeats, args.backend)
            memory = "" if peak is None else (f", peak pool {peak[0] / 2**30:.2f} GiB, device "
                                              f"used {peak[1] / 2**30:.2f} GiB")
            print(f"{task}: {seconds:.3f} s, {cells / seconds / 1e12:.2f} TCUPS{memory}; "
                  f"distance {result.distance[:4].tolist()}")
            if args.check:
                import edlib

                edlib_mode = {"global": "NW", "prefix": "SHW", "infix": "HW"}[args.mode]
                for p in range(min(args.pairs, 4)):
                    found = edlib.align(q_text[p], t_text[p], mode=edlib_mode)
                    assert result.distance[p] == found["editDistance"], (p, found)
                    if task == "path":
                        s, e = int(result.target_start[p]), int(result.target_end[p])
                        cost = cigar_edit_cost(queries[p], targets[p][s:e], result.cigar[p])
                        assert cost == result.distance[p], (p, cost)
                print(f"{task}: equal to edlib (first {min(args.pairs, 4)} pairs)")
            if args.profile and args.backend == "cuda":
                print(f"{task}: profile of one call")
                profiled(call)


if __name__ == "__main__":
    main()
