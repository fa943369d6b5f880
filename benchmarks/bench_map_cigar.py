#!/usr/bin/env python3
"""The mapper's ``cigar`` stage and SAM writing (CPU backend by default), from FASTQ pairs: the SAM
(for ``cmp`` against another checkout's), the stage seconds of each round and, with
``--profile``, cProfile's top functions of the ``cigar`` stage (``map.api._records``).

    NUMBA_NUM_THREADS=2 python benchmarks/bench_map_cigar.py REF.fa R1.fq.gz R2.fq.gz \
        --primary-cigar edit --rounds 3 --sam out.sam --profile

Run it with ``PYTHONPATH`` at another checkout's ``src`` to measure that one: it uses only
``map.api`` names that both sides of a change have (``iter_mappings``, ``_records``,
``sam.write_records``). One warm-up round (Numba's compilation or cache loads) is not counted.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from gpualign import config
from gpualign.map import api
from gpualign.map.index import as_map_index
from gpualign.map.sam import sam_header, write_records


def one_round(index, reads: Path, mates: Path | None, out: io.TextIOBase,
              backend: str) -> dict[str, float]:
    """Map and write every batch; the stage seconds summed, ``write`` and ``total`` added."""
    began = time.perf_counter()
    seconds: dict[str, float] = {"write": 0.0}
    out.write(sam_header(list(index.reference.names), index.reference.lengths, None))
    records = 0
    for chunk, mate_chunk, result in api.iter_mappings(index, reads, mates, backend=backend):
        written = time.perf_counter()
        write_records(out, result, np.arange(len(result)), chunk, mate_chunk,
                      index.reference.names)
        seconds["write"] += time.perf_counter() - written
        records += int(result.primary.sum())
        for stage, value in result.stage_seconds.items():
            seconds[stage] = seconds.get(stage, 0.0) + value
    seconds["total"] = time.perf_counter() - began
    seconds["reads"] = records
    return seconds


def map_arguments(description: str) -> argparse.ArgumentParser:
    """The arguments of this script and ``bench_map_sam.py``: the reference, the reads (and
    mates), the primaries' CIGARs, the rounds and where the last round's SAM goes."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("reference", type=Path)
    parser.add_argument("reads", type=Path)
    parser.add_argument("mates", type=Path, nargs="?")
    parser.add_argument("--primary-cigar", choices=("affine", "edit"), default="affine")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sam", type=Path, help="write the last round's SAM here")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = map_arguments(__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--profile", action="store_true",
                        help="one more round with cProfile on the cigar stage")
    args = parser.parse_args(argv)
    config.MAP_PRIMARY_CIGAR = args.primary_cigar
    index = as_map_index(args.reference, backend=args.backend)
    one_round(index, args.reads, args.mates, io.StringIO(), args.backend)  # warm-up
    rounds = []
    for number in range(args.rounds):
        text = io.StringIO()
        rounds.append(one_round(index, args.reads, args.mates, text, args.backend))
        print(f"round {number}: " + ", ".join(f"{k} {v:.3f}" for k, v in rounds[-1].items()),
              file=sys.stderr, flush=True)
    if args.sam is not None:
        args.sam.write_text(text.getvalue())
    median = {stage: statistics.median(r[stage] for r in rounds) for stage in rounds[0]}
    print("median: " + ", ".join(f"{k} {v:.3f}" for k, v in median.items())
          + f", reads/s {median['reads'] / median['total']:,.0f}")
    if args.profile:
        profiler = cProfile.Profile()
        records = api._records

        def profiled(*call_args, **call_kwargs):
            profiler.enable()
            try:
                return records(*call_args, **call_kwargs)
            finally:
                profiler.disable()

        api._records = profiled
        one_round(index, args.reads, args.mates, io.StringIO(), args.backend)
        api._records = records
        report = io.StringIO()
        pstats.Stats(profiler, stream=report).sort_stats("tottime").print_stats(10)
        print(report.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
