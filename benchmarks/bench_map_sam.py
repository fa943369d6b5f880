#!/usr/bin/env python3
"""The SAM writer alone (``sam.write_records``): reads (and mates) mapped once on the CPU, then
every batch's records written into memory, round after round; the seconds of each round, their
median, that median per million records, and the SAM (for ``cmp`` against another checkout's).

    NUMBA_NUM_THREADS=2 python benchmarks/bench_map_sam.py REF.fa R1.fq.gz [R2.fq.gz] \
        --primary-cigar edit --rounds 3 --sam out.sam

Run it with ``PYTHONPATH`` at another checkout's ``src`` to measure that one: it uses only names
that both sides of a change have (``api.iter_mappings``, ``sam.sam_header``,
``sam.write_records``). One warm-up round (Numba's compilation or cache loads) is not counted.
"""

from __future__ import annotations

import io
import statistics
import sys
import time

import numpy as np
from bench_map_cigar import map_arguments

from gpualign import config
from gpualign.map import api
from gpualign.map.index import as_map_index
from gpualign.map.sam import sam_header, write_records


def write_round(index, batches, out: io.TextIOBase) -> float:
    """Seconds of ``write_records`` over every batch (the header not counted)."""
    out.write(sam_header(list(index.reference.names), index.reference.lengths, None))
    began = time.perf_counter()
    for chunk, mate_chunk, result in batches:
        write_records(out, result, np.arange(len(result)), chunk, mate_chunk,
                      index.reference.names)
    return time.perf_counter() - began


def main(argv: list[str] | None = None) -> int:
    parser = map_arguments(__doc__.splitlines()[0])
    args = parser.parse_args(argv)
    config.MAP_PRIMARY_CIGAR = args.primary_cigar
    index = as_map_index(args.reference, backend="cpu")
    batches = list(api.iter_mappings(index, args.reads, args.mates, backend="cpu"))
    records = sum(len(result) for _, _, result in batches)
    write_round(index, batches, io.StringIO())  # warm-up
    seconds = []
    for number in range(args.rounds):
        text = io.StringIO()
        seconds.append(write_round(index, batches, text))
        print(f"round {number}: write {seconds[-1]:.3f} s", file=sys.stderr, flush=True)
    if args.sam is not None:
        args.sam.write_text(text.getvalue())
    median = statistics.median(seconds)
    print(f"records {records}, batches {len(batches)}, write median {median:.3f} s, "
          f"{median / records * 1e6:.3f} s per 1M records")
    return 0


if __name__ == "__main__":
    sys.exit(main())
