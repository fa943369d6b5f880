#!/usr/bin/env python3
"""Long pairs on the whole GPU (issue 21): one pair at a time through ``gpualign.align`` on the
CUDA backend, end to end (host to host), global alignment, DNA +2/-3, gaps 5/2.

    python benchmarks/bench_long_align.py                        # every workload
    python benchmarks/bench_long_align.py --only mt 100k --check  # and compare with parasail
    python benchmarks/bench_long_align.py --only 100k --shapes 32x8x256 64x4x256 128x8x1024 \
        --schedules tickets launches bands                        # compare tile shapes
    python benchmarks/bench_long_align.py --only mt 100k --profile  # where the time goes
    python benchmarks/bench_long_align.py --only mt 100k --tasks path --leaf-cells 262144

Workloads (``--only``) and the issue's targets on one H100:

- ``mt``: human x orangutan mitochondrial genomes (``tests/data``, 16.6 kb), score and CIGAR
  (target: CIGAR >= 100 GCUPS).
- ``100k``: 100 kb x 100 kb, the first 100 kb of ``ecoli_MG1655.fasta.gz`` in ``--data-dir``
  (else a random sequence) against a copy with 10% substitutions and 1% short indels (targets:
  score >= 1 TCUPS, CIGAR >= 0.3 TCUPS).
- ``ecoli``: the whole E. coli genome against such a copy, or ``--ecoli-pair A B``, two genomes
  (the issue's 4.64 x 4.63 Mbp; targets: score >= 2 TCUPS, CIGAR < 60 s).

Tile shapes (``--shapes``, ``config.LONG_ALIGN_THREADS``, ``..._ROWS_PER_THREAD``,
``..._TILE_COLUMNS``) and schedules (``--schedules``, ``config.LONG_ALIGN_SCHEDULE``) are
compared row by row. Each row is the best of ``--repeat`` runs, after a small pair has
compiled the kernels; GCUPS count query length x target length. Prints a Markdown table;
nothing is written.

``--profile`` times the second call of each row stage by stage instead (:class:`Profile`):
every call of the CUDA engine (``best_cells``, ``last_rows`` per level of the linear-space
driver, ``split_columns`` where the engine searches the splits itself, and ``leaf_paths``
once for the leaves of every level) and
inside them the host's planning, the launches, the collection of the results and the split
search, with the kernels' time from CUDA events around each launch; the device is
synchronized around each stage, so the total is a little above the plain run's.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

import gpualign
from gpualign import Scoring, config
from gpualign.align._cuda_long import SCHEDULES

ROOT = Path(__file__).resolve().parent.parent
SCORING = Scoring(match=2, mismatch=-3, gap_open=5, gap_extend=2)


def read_fasta(path: Path) -> str:
    """The first record of a FASTA file (plain or gzip)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as handle:
        lines = []
        for line in handle:
            if line.startswith(">"):
                if lines:
                    break
                continue
            lines.append(line.strip())
    return "".join(lines).upper()


def relative(text: str, rng: np.random.Generator) -> str:
    """A copy of ``text`` with 10% substitutions and 1% indels of 1-10 symbols."""
    symbols = np.frombuffer(text.encode(), dtype=np.uint8).copy()
    substituted = rng.random(len(symbols)) < 0.10
    symbols[substituted] = rng.choice(np.frombuffer(b"ACGT", dtype=np.uint8),
                                      int(substituted.sum()))
    cuts = np.sort(rng.choice(len(symbols), size=len(symbols) // 100, replace=False))
    pieces, last = [], 0
    for cut in cuts.tolist():
        pieces.append(symbols[last:cut])
        length = int(rng.integers(1, 11))
        if rng.random() < 0.5:  # an insertion here, else a deletion from here
            pieces.append(rng.choice(np.frombuffer(b"ACGT", dtype=np.uint8), length))
            last = cut
        else:
            last = min(len(symbols), cut + length)
    pieces.append(symbols[last:])
    return np.concatenate(pieces).tobytes().decode()


def random_dna(length: int, rng: np.random.Generator) -> str:
    return rng.choice(np.frombuffer(b"ACGT", dtype=np.uint8), length).tobytes().decode()


def workloads(names: list[str], data_dir: Path, ecoli_pair: list[Path] | None,
              rng: np.random.Generator):
    """Yield ``(name, query, target)``."""
    ecoli = data_dir / "ecoli_MG1655.fasta.gz"
    genome = read_fasta(ecoli) if ecoli.exists() and {"100k", "ecoli"} & set(names) else None
    if "mt" in names:
        yield ("mt", read_fasta(ROOT / "tests/data/MT-human.fa.gz"),
               read_fasta(ROOT / "tests/data/MT-orang.fa.gz"))
    if "100k" in names:
        query = genome[:100_000] if genome else random_dna(100_000, rng)
        yield "100k" if genome else "100k (random)", query, relative(query, rng)
    if "ecoli" in names:
        if ecoli_pair:
            yield "ecoli", read_fasta(ecoli_pair[0]), read_fasta(ecoli_pair[1])
        elif genome:
            yield "ecoli (copy)", genome, relative(genome, rng)
        else:
            print(f"ecoli: skipped, no {ecoli} (bash scripts/fetch-data.sh) nor --ecoli-pair")


def best_time(query: str, target: str, task: str, repeat: int) -> tuple[float, int, str]:
    """Best wall time of ``repeat`` runs; the score and the CIGAR."""
    times = []
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = gpualign.align([query], [target], mode="global", scoring=SCORING, task=task,
                                alphabet="dna", invalid="wildcard", backend="cuda")
        times.append(time.perf_counter() - start)
    cigar = result.cigar[0] if result.cigar else ""
    return min(times), int(result.score[0]), cigar


class Profile:
    """Stage by stage timing of the CUDA long-alignment engine (``--profile``), installed by
    wrapping the engine's methods, the driver's split search and the kernels of
    ``align/_cuda_long.py`` (see the module's docstring). A stage's row: its calls, problems,
    DP cells, kernel launches, kernel milliseconds (CUDA events around each launch), wall
    milliseconds (device synchronized before and after) and their difference, the host's
    share (Python, NumPy, allocations, transfers, launch overhead, idle device)."""

    def __init__(self) -> None:
        import cupy

        from gpualign.align import _cuda_long, _linear

        self.cupy = cupy
        self.events: list[tuple] = []
        self.rows: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0, 0, 0.0, 0.0])
        self.level = 0
        kernels: dict[int, _TimedKernel] = {}
        get_kernel = _cuda_long.get_kernel

        def timed_kernel(*args, **kwargs):
            kernel = get_kernel(*args, **kwargs)
            if id(kernel) not in kernels:
                kernels[id(kernel)] = _TimedKernel(kernel, self.events, cupy)
            return kernels[id(kernel)]

        _cuda_long.get_kernel = timed_kernel
        engine = _cuda_long.CudaEngine
        self._wrap(engine, "best_cells", "best_cells")
        self._wrap(engine, "last_rows", "last_rows L{level}")
        self._wrap(engine, "split_columns", "split_columns L{level}")
        self._wrap(engine, "leaf_paths", "leaf_paths (the leaves of every level)")
        self._wrap(engine, "_launches", "  tiles: launches + results to host")
        self._wrap(engine, "_wavefront", "  tiles: launches")
        self._wrap(engine, "_split_launch", "  split search (device) + to host")
        self._wrap(engine, "_leaf_launch", "  leaves: launch + paths to host")
        self._wrap(_cuda_long.BatchPlan, "of", "  tiles: host plan", static=True)
        self._wrap(_cuda_long.BatchPlan, "collect", "  tiles: host collect")
        self._wrap(_linear, "_split_columns", "driver: split search (host)")

    def _wrap(self, owner, name: str, label: str, static: bool = False) -> None:
        original = getattr(owner, name)
        if static:  # a classmethod: wrap the function it binds
            original = original.__func__

        @functools.wraps(original)
        def wrapper(*args, **kwargs):
            problems = next((a for a in args if hasattr(a, "cells")), None)
            self.cupy.cuda.Device().synchronize()
            first_event = len(self.events)
            row = self.rows[label.format(level=self.level)]  # listed in the order they start
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.cupy.cuda.Device().synchronize()
                wall = 1e3 * (time.perf_counter() - start)
                launched = self.events[first_event:]
                kernel_ms = sum(self.cupy.cuda.get_elapsed_time(a, b) for a, b in launched)
                row[0] += 1
                if problems is not None:
                    row[1] += len(problems)
                    row[2] += int(problems.cells().sum())
                row[3] += len(launched)
                row[4] += kernel_ms
                row[5] += wall
                if name in ("last_rows", "split_columns"):  # one a level of the driver
                    self.level += 1

        if static:
            wrapper = classmethod(wrapper)
        setattr(owner, name, wrapper)

    def reset(self) -> None:
        """Forget what was timed (before the call to report)."""
        self.events.clear()
        self.rows.clear()
        self.level = 0

    def report(self, title: str, total_seconds: float) -> None:
        """Print the stages of the last call as a Markdown table."""
        total = 1e3 * total_seconds
        print(f"\n{title}: {total:.1f} ms end to end\n")
        print("| stage | calls | problems | cells | launches | kernel ms | wall ms | host ms |")
        print("|---|---|---|---|---|---|---|---|")
        engine_ms = kernel_ms = 0.0
        for label, (calls, problems, cells, launches, kernels, wall) in self.rows.items():
            print(f"| {label} | {calls} | {problems or '-'} | {cells or '-'} | {launches} | "
                  f"{kernels:.2f} | {wall:.2f} | {wall - kernels:.2f} |")
            if not label.startswith((" ", "driver")):
                engine_ms += wall
                kernel_ms += kernels
        split_ms = sum(row[5] for label, row in self.rows.items() if label.startswith("driver"))
        print(f"| **engine calls** | | | | | {kernel_ms:.2f} | {engine_ms:.2f} | "
              f"{engine_ms - kernel_ms:.2f} |")
        print(f"| **outside the engine** (front end, driver, split search {split_ms:.2f}) | | | | "
              f"| | {total - engine_ms:.2f} | |", flush=True)


class _TimedKernel:
    """A compiled kernel whose launches record a pair of CUDA events each (attributes pass
    through to the kernel, so that ``cuda.launch`` sizes and configures it as usual)."""

    def __init__(self, kernel, events: list, cupy) -> None:
        object.__setattr__(self, "_kernel", kernel)
        object.__setattr__(self, "_events", events)
        object.__setattr__(self, "_cupy", cupy)

    def __call__(self, *args, **kwargs):
        start, end = self._cupy.cuda.Event(), self._cupy.cuda.Event()
        start.record()
        self._kernel(*args, **kwargs)
        end.record()
        self._events.append((start, end))

    def __getattr__(self, name: str):
        return getattr(self._kernel, name)

    def __setattr__(self, name: str, value) -> None:
        setattr(self._kernel, name, value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="+", default=["mt", "100k", "ecoli"],
                        choices=["mt", "100k", "ecoli"])
    parser.add_argument("--tasks", nargs="+", default=["score", "path"],
                        choices=["score", "path"])
    parser.add_argument("--data-dir", type=Path, default=ROOT / "data")
    parser.add_argument("--ecoli-pair", nargs=2, type=Path, metavar=("A", "B"))
    default_shape = (f"{config.LONG_ALIGN_THREADS}x{config.LONG_ALIGN_ROWS_PER_THREAD}x"
                     f"{config.LONG_ALIGN_TILE_COLUMNS}")
    parser.add_argument("--shapes", nargs="+", default=[default_shape],
                        help="tile shapes THREADSxROWSxCOLUMNS to compare (default: config's)")
    parser.add_argument("--schedules", nargs="+", default=[config.LONG_ALIGN_SCHEDULE],
                        choices=list(SCHEDULES))
    parser.add_argument("--leaf-cells", type=int, default=config.LONG_ALIGN_LEAF_CELLS,
                        help="config.LONG_ALIGN_LEAF_CELLS: largest leaf of the CIGAR's "
                             "linear-space recursion (default: config's)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--profile", action="store_true",
                        help="time the second call of each row stage by stage (see above)")
    parser.add_argument("--check", action="store_true",
                        help="compare scores with parasail's nw_scan_32 (one core; slow)")
    args = parser.parse_args()
    config.LONG_ALIGN_MIN_CELLS = 1
    config.LONG_ALIGN_LEAF_CELLS = args.leaf_cells
    import cupy

    device = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"]
    print(f"{device.decode() if isinstance(device, bytes) else device}\n")
    profile = Profile() if args.profile else None
    if not profile:
        print("| workload | m x n | tiles | schedule | task | seconds | GCUPS | score "
              "| CIGAR length | parasail |")
        print("|---|---|---|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(21)
    pairs = list(workloads(args.only, args.data_dir, args.ecoli_pair, rng))
    warm_up = random_dna(3000, rng)
    warm_up_target = relative(warm_up, rng)
    for name, query, target in pairs:
        cells = len(query) * len(target)
        expected = "-"
        if args.check:
            import parasail

            matrix = parasail.matrix_create("ACGT", 2, -3)
            expected = str(parasail.nw_scan_32(query, target, 5, 2, matrix).score)
        for shape in args.shapes:
            threads, rows, columns = (int(x) for x in shape.split("x"))
            config.LONG_ALIGN_THREADS = threads
            config.LONG_ALIGN_ROWS_PER_THREAD = rows
            config.LONG_ALIGN_TILE_COLUMNS = columns
            for schedule in args.schedules:
                config.LONG_ALIGN_SCHEDULE = schedule
                for task in args.tasks:
                    best_time(warm_up, warm_up_target, task, 1)  # compiles this shape's kernels
                    if profile:
                        best_time(query, target, task, 1)  # the profiled call is the second
                        profile.reset()
                    seconds, score, cigar = best_time(query, target, task,
                                                      1 if profile else args.repeat)
                    if profile:
                        profile.report(f"{name} {len(query)} x {len(target)} {shape} {schedule} "
                                       f"{task} (score {score}, {cells / seconds / 1e9:.1f} "
                                       "GCUPS)", seconds)
                        continue
                    print(f"| {name} | {len(query)} x {len(target)} | {shape} | {schedule} | "
                          f"{task} | "
                          f"{seconds:.3f} | {cells / seconds / 1e9:.1f} | {score} | "
                          f"{len(cigar)} | {expected} |", flush=True)


if __name__ == "__main__":
    main()
