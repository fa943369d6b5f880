#!/usr/bin/env python3
"""The step time of the CUDA path fill (``warp_fill``) for every lane shape: the table behind
``gpualign.align._cuda._FILL_STEP_NS``, which chooses the lanes of each pair's fill.

A step is one column of a band's wavefront: every lane computes its rows of one column. For
each lane count (a warp of 32, blocks of 128, 256 and 512) and rows a lane keeps, one pair of
``lanes * rows`` random protein residues (one band) is aligned alone on the GPU (local,
BLOSUM62 11/1, ``task="path"``) against subjects of two lengths; the difference of the median
call times over the difference of the lengths is the time of a step, free of the call's fixed
costs (the walk back of random sequences is short either way).

    python benchmarks/bench_fill_steps.py    # writes results/fill-steps-<device>-<date>.md
    python benchmarks/bench_fill_steps.py --no-save
"""

from __future__ import annotations

import argparse
import datetime as _dt
import shlex
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from _common import ROOT, device_info, git_commit, header_lines, log, publish

import gpualign
from gpualign import config

#: Rows a lane keeps, by lane count (a block of 256 lanes keeps at most 16, of 512 at most 8).
SHAPES = {32: (2, 4, 8, 16, 24, 32, 48), 128: (2, 4, 8, 16, 24, 32), 256: (2, 4, 8, 16),
          512: (2, 4, 8)}
PROTEIN = "ARNDCQEGHILKMFPSTWYV"


def call_seconds(query: str, subject: str, repeats: int) -> float:
    """Median seconds of one pair's path on the GPU (after a warm-up call)."""
    import cupy

    scoring = gpualign.Scoring.matrix("BLOSUM62", gap_open=12, gap_extend=1)
    times = []
    for k in range(repeats + 1):
        cupy.cuda.Device().synchronize()
        started = time.perf_counter()
        gpualign.align([query], [subject], mode="local", task="path", scoring=scoring,
                       alphabet="protein", backend="cuda")
        cupy.cuda.Device().synchronize()
        if k:
            times.append(time.perf_counter() - started)
    return statistics.median(times)


def step_ns(lanes: int, rows: int, short: int, long: int, repeats: int,
            rng: np.random.Generator) -> float:
    """ns per step of the fill of ``lanes`` lanes of ``rows`` rows."""
    config.ALIGN_TRACE_LANES = (lanes,)
    if lanes == 32:
        config.ALIGN_TRACE_LANE_ROWS = (rows,)
    else:
        config.ALIGN_TRACE_BLOCK_LANE_ROWS = (rows,)
    query, subject = ("".join(rng.choice(list(PROTEIN), size)) for size in (lanes * rows, long))
    seconds = [call_seconds(query, subject[:length], repeats) for length in (short, long)]
    return (seconds[1] - seconds[0]) / (long - short) * 1e9


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--short", type=int, default=2000, help="the shorter subject")
    parser.add_argument("--long", type=int, default=6000, help="the longer subject")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls a length (median)")
    parser.add_argument("--results-dir", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--commit", help="commit to record (default: git)")
    parser.add_argument("--no-save", action="store_true", help="print only; write no file")
    args = parser.parse_args(argv)
    ok, why = gpualign.backend.cuda_status()
    if not ok:
        log(f"no CUDA device: {why}")
        return 3
    started = _dt.datetime.now(_dt.timezone.utc)
    info = device_info()
    rng = np.random.default_rng(1)
    rows_of = sorted({rows for heights in SHAPES.values() for rows in heights})
    table = {}
    with config.override(ALIGN_TRACE_LANES=config.ALIGN_TRACE_LANES,
                         ALIGN_TRACE_LANE_ROWS=config.ALIGN_TRACE_LANE_ROWS,
                         ALIGN_TRACE_BLOCK_LANE_ROWS=config.ALIGN_TRACE_BLOCK_LANE_ROWS):
        for lanes, heights in SHAPES.items():
            for rows in heights:
                table[lanes, rows] = step_ns(lanes, rows, args.short, args.long, args.repeats,
                                             rng)
                log(f"{lanes} lanes x {rows} rows: {table[lanes, rows]:.0f} ns a step")
    lines = ["| lanes | " + " | ".join(f"{rows} rows" for rows in rows_of) + " |",
             "|---|" + "---|" * len(rows_of)]
    for lanes, heights in SHAPES.items():
        cells = [f"{table[lanes, rows]:.0f}" if rows in heights else "-" for rows in rows_of]
        lines.append(f"| {lanes} | " + " | ".join(cells) + " |")
    command = shlex.join([Path(sys.executable).name, *(sys.argv if argv is None else argv)])
    text = "\n".join([
        *header_lines("CUDA path fill: ns a step by lane shape", info, git_commit(args.commit),
                      started.strftime('%Y-%m-%d %H:%M UTC'), command), "",
        *lines, "",
        f"One pair of lanes x rows random protein residues (one band), local, BLOSUM62 11/1, "
        f"task path, alone on the GPU: (median call time with a {args.long}-residue subject - "
        f"with its first {args.short}) / {args.long - args.short} columns, medians of "
        f"{args.repeats} calls after a warm-up.", ""])
    publish(text, 'fill-steps', info, started, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
