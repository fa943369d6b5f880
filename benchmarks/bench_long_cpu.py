#!/usr/bin/env python3
"""One 100 kb pair on the CPU backend (issue 21): the first 100 kb of ``ecoli_MG1655.fasta.gz``
against a seeded copy with 10% substitutions and 1% indels, global, DNA +2/-3, gaps 5/2, for
``task`` "score" (the Numba engine, not parasail), "end" and "path"; and parasail's
``nw_scan_32`` and ``nw_striped_32`` on the same pair, on one core.

    python benchmarks/bench_long_cpu.py --data-dir data [--tasks path score] [--repeat 3]

Each row is the best of ``--repeat`` runs of CPU seconds (``time.process_time``, every thread)
and of wall seconds, after a small pair has compiled the engine; GCUPS count query length x
target length. Prints a Markdown table; nothing is written.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from bench_long_align import SCORING, read_fasta, relative

import gpualign
from gpualign import config


def timed(call) -> tuple[float, float, object]:
    """CPU seconds, wall seconds and the result of ``call()``."""
    cpu, wall = time.process_time(), time.perf_counter()
    result = call()
    return time.process_time() - cpu, time.perf_counter() - wall, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("data"))
    parser.add_argument("--tasks", nargs="+", default=["path", "end", "score"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    query = read_fasta(args.data_dir / "ecoli_MG1655.fasta.gz")[:100_000]
    target = relative(query, np.random.default_rng(args.seed))
    cells = len(query) * len(target)
    config.ALIGN_CPU_SCORES = "numba"
    print(f"{len(query)} x {len(target)}\n")
    print("| engine | task | score | CPU s | wall s | GCUPS (CPU) |")
    print("|---|---|---|---|---|---|")
    for task in args.tasks:
        def call(task=task):
            return gpualign.align([query], [target], mode="global", scoring=SCORING, task=task,
                                  alphabet="dna", backend="cpu")
        gpualign.align([query[:3000]], [target[:3000]], mode="global", scoring=SCORING,
                       task=task, alphabet="dna", backend="cpu")
        runs = [timed(call) for _ in range(args.repeat)]
        cpu, wall = min(r[0] for r in runs), min(r[1] for r in runs)
        result = runs[0][2]
        print(f"| gpualign cpu | {task} | {int(result.score[0])} | {cpu:.2f} | {wall:.2f} "
              f"| {cells / cpu / 1e9:.2f} |", flush=True)
    import parasail
    matrix = parasail.matrix_create("ACGT", SCORING.match, SCORING.mismatch)
    for name in ("nw_scan_32", "nw_striped_32"):
        function = getattr(parasail, name)
        runs = [timed(lambda function=function: function(query, target, SCORING.gap_open,
                                                         SCORING.gap_extend, matrix))
                for _ in range(args.repeat)]
        cpu, wall = min(r[0] for r in runs), min(r[1] for r in runs)
        print(f"| parasail {name} | score | {runs[0][2].score} | {cpu:.2f} | {wall:.2f} "
              f"| {cells / cpu / 1e9:.2f} |", flush=True)


if __name__ == "__main__":
    main()
