#!/usr/bin/env python3
"""Long pairs on the whole GPU (issue 21): one pair at a time through ``gpualign.align`` on the
CUDA backend, end to end (host to host), global alignment, DNA +2/-3, gaps 5/2.

    python benchmarks/bench_long_align.py                        # every workload
    python benchmarks/bench_long_align.py --only mt 100k --check  # and compare with parasail
    python benchmarks/bench_long_align.py --only 100k --threads 128 --rows 8 --columns 1024

Workloads (``--only``) and the issue's targets on one H100:

- ``mt``: human x orangutan mitochondrial genomes (``tests/data``, 16.6 kb), score and CIGAR
  (target: CIGAR >= 100 GCUPS).
- ``100k``: 100 kb x 100 kb, the first 100 kb of ``ecoli_MG1655.fasta.gz`` in ``--data-dir``
  (else a random sequence) against a copy with 10% substitutions and 1% short indels (targets:
  score >= 1 TCUPS, CIGAR >= 0.3 TCUPS).
- ``ecoli``: the whole E. coli genome against such a copy, or ``--ecoli-pair A B``, two genomes
  (the issue's 4.64 x 4.63 Mbp; targets: score >= 2 TCUPS, CIGAR < 60 s).

The tile shape comes from ``--threads``, ``--rows``, ``--columns`` (``config.LONG_ALIGN_*``).
Each row is the best of ``--repeat`` runs, after a small pair has compiled the kernels; GCUPS
count query length x target length. Prints a Markdown table; nothing is written.
"""

from __future__ import annotations

import argparse
import gzip
import time
from pathlib import Path

import numpy as np

import gpualign
from gpualign import Scoring, config

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="+", default=["mt", "100k", "ecoli"],
                        choices=["mt", "100k", "ecoli"])
    parser.add_argument("--tasks", nargs="+", default=["score", "path"],
                        choices=["score", "path"])
    parser.add_argument("--data-dir", type=Path, default=ROOT / "data")
    parser.add_argument("--ecoli-pair", nargs=2, type=Path, metavar=("A", "B"))
    parser.add_argument("--threads", type=int, default=config.LONG_ALIGN_THREADS)
    parser.add_argument("--rows", type=int, default=config.LONG_ALIGN_ROWS_PER_THREAD)
    parser.add_argument("--columns", type=int, default=config.LONG_ALIGN_TILE_COLUMNS)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--check", action="store_true",
                        help="compare scores with parasail's nw_scan_32 (one core; slow)")
    args = parser.parse_args()
    config.LONG_ALIGN_THREADS = args.threads
    config.LONG_ALIGN_ROWS_PER_THREAD = args.rows
    config.LONG_ALIGN_TILE_COLUMNS = args.columns
    config.LONG_ALIGN_MIN_CELLS = 1
    import cupy

    device = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"]
    device = device.decode() if isinstance(device, bytes) else device
    print(f"{device}; tiles of {args.threads} threads x {args.rows} rows x {args.columns} "
          "columns\n")
    print("| workload | m x n | task | seconds | GCUPS | score | CIGAR length | parasail |")
    print("|---|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(21)
    warm_up = random_dna(3000, rng)
    for task in args.tasks:  # the kernels compile here, not in a timed run
        best_time(warm_up, relative(warm_up, rng), task, 1)
    for name, query, target in workloads(args.only, args.data_dir, args.ecoli_pair, rng):
        cells = len(query) * len(target)
        expected = "-"
        if args.check:
            import parasail

            matrix = parasail.matrix_create("ACGT", 2, -3)
            expected = str(parasail.nw_scan_32(query, target, 5, 2, matrix).score)
        for task in args.tasks:
            seconds, score, cigar = best_time(query, target, task, args.repeat)
            print(f"| {name} | {len(query)} x {len(target)} | {task} | {seconds:.3f} | "
                  f"{cells / seconds / 1e9:.1f} | {score} | {len(cigar)} | {expected} |",
                  flush=True)


if __name__ == "__main__":
    main()
