#!/usr/bin/env python3
"""Read mapping: gpualign ``map_reads`` beside minimap2 on simulated pairs, in one run.

    python benchmarks/bench_map.py --pairs 100000                  # gpualign cuda and cpu
    python benchmarks/bench_map.py --pairs 1000000 --engines cuda,minimap2
    python benchmarks/bench_map.py --pairs 20000 --engines cpu --primary-cigar edit

Reads (``--simulator``): ``builtin``, ``--pairs`` pairs of 150 bp reads from both strands of
``--reference`` (E. coli K-12 MG1655 from ``scripts/fetch-data.sh``), facing each other across
inserts of 400 +- 30 bp, with 1% substitutions (no indels: this simulator is vectorised so
that a million pairs take seconds); or ``dwgsim``, the issue's accuracy check: dwgsim's pairs
of 150 bp (``-d 400 -s 30``, its default errors, mutations with indels and 5% random reads),
their truth read from their names. Rows (``--engines``):

- ``cuda``, ``cpu``: ``gpualign.map_reads`` on an index built beforehand (its build timed
  apart), reads given as encoded sets (no FASTQ parsing, no SAM text: the stages the issue's
  end-to-end target also counts are reported separately by ``gpualign map``); reads/s and the
  seconds of each stage, with ``--primary-cigar``'s setting of ``config.MAP_PRIMARY_CIGAR``
  (default: the shipped one).
- ``minimap2``: ``minimap2 -ax sr -t THREADS`` from FASTQ to SAM (index built in the same
  call), when ``minimap2`` is on PATH.
- ``cuda-cli``, ``cpu-cli``: the command ``gpualign map REF R1.fq R2.fq`` the same way, end to
  end (Python's start, the index, FASTQ parsing, SAM text), after a run on the first 5,000
  pairs that fills Numba's cache (shipped default ``config.MAP_PRIMARY_CIGAR``). The rows in
  memory map all the pairs twice and time the second call: the first meets every compiled
  stage (a user's first run compiles them once, into Numba's cache), which a sample need
  not: 10,000 pairs had no clipped end extended, whose runs took a 1.9 s compile in the
  timed call of 250,000.
- ``floor``: what a Python command spends here whatever its mapping costs, the best of three
  runs each: Python's start with ``gpualign map``'s imports and CuPy's CUDA context; both
  FASTQ files decompressed (``--gzip``, the issue's FASTQ.gz) by the command's reader; the
  last row's SAM written once more. With a ``minimap2`` row, the table ends with the seconds
  that 10 times minimap2's rate leaves for these reads.

Checks: the fraction of reads placed within 5 bp of their true leftmost position on the true
strand (with dwgsim's reads, the leftmost aligned base less a leading soft clip, for every
engine; its reads of random DNA are correct when left unmapped), and the reads placed
elsewhere with MAPQ >= 30 (wrong and confident). Writes the table
to ``benchmarks/results/map-<device>-<date>.md``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gzip
import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from _common import ROOT, device_info, git_commit, header_lines, log, publish

from gpualign import SequenceSet, config
from gpualign.backend import cuda_status
from gpualign.map import map_reads
from gpualign.map.index import MapIndex

READ_LENGTH = 150
INSERT, SPREAD = 400, 30
SUBSTITUTIONS = 0.01
SLACK = 5  # bp from the true position that count as correct
#: The first of the ``floor`` engine's rows (:func:`floor_rows`).
FLOOR_START = "fixed: Python's start and the command's imports"
CONFIDENT = 30  # MAPQ


def simulate(genome: np.ndarray, pairs: int, seed: int):
    """Codes of reads and mates (uint8, one row each), and the true leftmost positions and
    strands (True: the read is the reverse strand) of both."""
    rng = np.random.default_rng(seed)
    insert = np.clip(rng.normal(INSERT, SPREAD, pairs).astype(np.int64), READ_LENGTH,
                     2 * INSERT)
    left = rng.integers(0, len(genome) - insert.max() - 1, pairs)
    right = left + insert - READ_LENGTH
    span = np.arange(READ_LENGTH)
    forward = genome[left[:, None] + span]
    backward = genome[right[:, None] + span]
    complement = np.array([3, 2, 1, 0, 4], dtype=np.uint8)
    backward = complement[backward[:, ::-1]]
    # Either read of a pair may be the forward one.
    swap = rng.random(pairs) < 0.5
    reads = np.where(swap[:, None], backward, forward)
    mates = np.where(swap[:, None], forward, backward)
    for codes in (reads, mates):
        hit = rng.random(codes.shape) < SUBSTITUTIONS
        codes[hit] = (codes[hit] + rng.integers(1, 4, int(hit.sum()))) % 4
    read_pos = np.where(swap, right, left)
    mate_pos = np.where(swap, left, right)
    return reads, mates, read_pos, mate_pos, swap, ~swap


def write_fastq(path: Path, codes: np.ndarray) -> None:
    """Reads ``codes`` as FASTQ at ``path``, gzip-compressed (gzip's default level) when the
    name ends in ``.gz``."""
    letters = np.frombuffer(b"ACGTN", dtype=np.uint8)[codes]
    quality = b"I" * codes.shape[1]
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wb") as out:
        for i, row in enumerate(letters):
            out.write(b"@p%d\n%s\n+\n%s\n" % (i, row.tobytes(), quality))


def score(position, reverse, mapq, truth_position, truth_reverse) -> tuple[str, str, str]:
    """The table's checks of placements (position -1: unmapped) against the truth (position -1:
    a read of random DNA, correct only when left unmapped): the fraction correct, the reads
    wrong with MAPQ >= CONFIDENT, and the correct of the reads placed with MAPQ >= 1 (the
    others, MAPQ 0, have equal places elsewhere: which one is taken is a tie)."""
    placed = position >= 0
    correct = np.where(truth_position < 0, ~placed,
                       placed & (np.abs(position - truth_position) <= SLACK)
                       & (reverse == truth_reverse))
    wrong_confident = placed & ~correct & (mapq >= CONFIDENT)
    unique = placed & (mapq >= 1)
    return (f"{correct.mean():.4f}", str(int(wrong_confident.sum())),
            f"{int((correct & unique).sum()):,} of {int(unique.sum()):,}")


def sam_placements(sam: Path, pair_of: dict[str, int], clipped: bool):
    """Leftmost positions (-1 unmapped), strands and MAPQs of the primary records in ``sam`` of
    the pairs ``pair_of`` (the pair index of each name, less /1 and /2), in read order (first,
    second, first, ...): the leftmost aligned base, less a leading soft clip when ``clipped``
    (where the read itself starts)."""
    position = np.full(2 * len(pair_of), -1, dtype=np.int64)
    reverse = np.zeros(2 * len(pair_of), dtype=bool)
    mapq = np.zeros(2 * len(pair_of), dtype=np.int64)
    for line in open(sam):
        if line.startswith("@"):
            continue
        name, flag, _, pos, quality, cigar = line.split("\t", 6)[:6]
        flag = int(flag)
        if flag & 0x900:
            continue
        slot = 2 * pair_of[_pair_name(name)] + (1 if flag & 128 else 0)
        if not flag & 4:
            clip = re.match(r"([0-9]+)S", cigar) if clipped else None
            position[slot] = int(pos) - 1 - (int(clip.group(1)) if clip else 0)
            reverse[slot] = bool(flag & 16)
            mapq[slot] = int(quality)
    return position, reverse, mapq


def _pair_name(name: str) -> str:
    """A read's name less its /1 or /2."""
    return name[:-2] if name.endswith(("/1", "/2")) else name


def builtin_pairs(genome: SequenceSet, pairs: int, seed: int, work: Path,
                  compressed: bool = False):
    """This script's ``pairs`` pairs (:func:`simulate`) of ``genome``, written as FASTQ in
    ``work`` (gzip-compressed when ``compressed``): as :func:`dwgsim_pairs` returns them (pair
    ``i`` named ``p<i>``)."""
    reads, mates, read_pos, mate_pos, read_rev, mate_rev = simulate(genome.codes_of(0), pairs,
                                                                    seed)
    suffix = ".fq.gz" if compressed else ".fq"
    first, second = work / f"r1{suffix}", work / f"r2{suffix}"
    write_fastq(first, reads)
    write_fastq(second, mates)
    return (first, second, {f"p{i}": i for i in range(pairs)},
            np.column_stack([read_pos, mate_pos]).ravel(),
            np.column_stack([read_rev, mate_rev]).ravel())


def dwgsim_pairs(reference: Path, pairs: int, seed: int, work: Path):
    """dwgsim's ``pairs`` pairs of ``reference``, made in ``work``: their two FASTQ files, the
    pair index of each pair's name (less /1 and /2) and the truth of every read (first,
    second, first, ...): its 0-based leftmost position and strand (True: reverse), from its
    name (``<contig>_<start1>_<start2>_<strand1>_<strand2>_<random1>_<random2>_...``; a read of
    random DNA, ``rand_0_0_...``, has position -1)."""
    plain = work / "reference.fa"
    opener = gzip.open if reference.suffix == ".gz" else open
    with opener(reference, "rb") as source:
        plain.write_bytes(source.read())
    subprocess.run(["dwgsim", "-z", str(seed), "-N", str(pairs), "-1", str(READ_LENGTH),
                    "-2", str(READ_LENGTH), "-d", str(INSERT), "-s", str(SPREAD), str(plain),
                    str(work / "sim")], check=True, capture_output=True)
    first, second = (work / f"sim.bwa.read{n}.fastq.gz" for n in (1, 2))
    names = [_pair_name(name) for name in SequenceSet.from_file(first, "dna",
                                                                  invalid="wildcard").names]
    fields = [name.split("_") for name in names]
    truth_pos = np.array([[int(f[-9]) - 1, int(f[-8]) - 1] for f in fields]).ravel()
    truth_rev = np.array([[f[-7] == "1", f[-6] == "1"] for f in fields]).ravel()
    return first, second, {name: k for k, name in enumerate(names)}, truth_pos, truth_rev


def timed_sam(command: list[str], first: Path, second: Path, work: Path) -> tuple[float, Path]:
    """Seconds of ``command`` + ``[first, second]`` writing its SAM (standard output) into
    ``work``, and the SAM's path."""
    sam = work / "out.sam"
    began = time.perf_counter()
    with open(sam, "wb") as out:
        subprocess.run([*command, str(first), str(second)], stdout=out,
                       stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - began, sam


def engine_rows(args: argparse.Namespace, engines: list[str], index: MapIndex, build: float,
                genome: SequenceSet) -> list[tuple[str, ...]]:
    """The table's rows on ``args.simulator``'s pairs (:func:`builtin_pairs`,
    :func:`dwgsim_pairs`): every engine's placements read back from its SAM, so that all are
    counted alike (dwgsim's positions less a leading soft clip)."""
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        if args.simulator == "dwgsim":
            simulated = dwgsim_pairs(args.reference, args.pairs, args.seed, work)
        else:
            simulated = builtin_pairs(genome, args.pairs, args.seed, work, args.gzip)
        first, second, pair_of, truth_pos, truth_rev = simulated
        reads, mates = (SequenceSet.from_file(path, "dna", invalid="wildcard")
                        for path in (first, second))

        def row(name: str, seconds: float, sam: Path, note: str) -> tuple[str, ...]:
            checks = score(*sam_placements(sam, pair_of, args.simulator == "dwgsim"),
                           truth_pos, truth_rev)
            return (name, f"{2 * args.pairs / seconds:,.0f}", f"{seconds:.2f}", *checks, note)

        for engine in engines:
            if engine.startswith("cuda") and not cuda_status()[0]:
                rows.append((engine, "-", "-", "-", "-", "-", "skipped: no CUDA"))
            elif engine in ("cuda", "cpu"):
                with config.override(MAP_PRIMARY_CIGAR=args.primary_cigar):
                    map_reads(index, reads, mates, backend=engine)  # every compiled stage
                    began = time.perf_counter()
                    result = map_reads(index, reads, mates, backend=engine)
                    seconds = time.perf_counter() - began
                result.write_sam(work / "out.sam", reads, mates)
                rows.append(row(f"gpualign {engine} ({args.primary_cigar} CIGAR)", seconds,
                                work / "out.sam", f"index built apart in {build:.2f} s; stages: "
                                + ", ".join(f"{k} {v:.2f} s"
                                            for k, v in result.stage_seconds.items())))
            elif engine == "minimap2":
                if shutil.which("minimap2") is None:
                    rows.append(("minimap2", "-", "-", "-", "-", "-", "skipped: not on PATH"))
                    continue
                seconds, sam = timed_sam(["minimap2", "-ax", "sr", "-t", str(args.threads),
                                          str(args.reference)], first, second, work)
                rows.append(row(f"minimap2 -ax sr -t {args.threads}", seconds, sam,
                                "FASTQ to SAM, its index included"))
            elif engine in ("cuda-cli", "cpu-cli"):
                command = gpualign_command(args.reference, engine.split("-")[0])
                # Warm-up on the first 5,000 pairs: every compiled stage met once, so that
                # Numba's cache holds it (a user's first run compiles them once).
                warm = [work / "warm1.fq", work / "warm2.fq"]
                for source, path in zip((first, second), warm, strict=True):
                    opener = gzip.open if source.suffix == ".gz" else open
                    with opener(source, "rt") as lines, open(path, "w") as out:
                        out.writelines(itertools.islice(lines, 4 * 5_000))
                timed_sam(command, *warm, work)
                seconds, sam = timed_sam(command, first, second, work)
                rows.append(row(f"gpualign map --backend {engine.split('-')[0]} "
                                f"({config.MAP_PRIMARY_CIGAR} CIGAR)", seconds, sam,
                                "the command, FASTQ to SAM, its index included (as minimap2's "
                                "row)"))
            elif engine == "floor":
                rows.extend(floor_rows(first, second, work))
            log(f"  {' | '.join(rows[-1])}")
    return rows


def _best_seconds(action, repeats: int = 3) -> float:
    """The shortest of ``repeats`` timed calls of ``action``."""
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        action()
        times.append(time.perf_counter() - began)
    return min(times)


def _decompress(path: Path) -> None:
    """Read ``path`` through xopen, as ``gpualign map`` reads it (its fastest decompressor,
    in this process), and drop the bytes."""
    import xopen

    with xopen.xopen(path, "rb", threads=0) as handle:
        while handle.read(1 << 24):
            pass


def floor_rows(first: Path, second: Path, work: Path) -> list[tuple[str, ...]]:
    """Rows of the fixed costs of a Python command that maps ``first`` and ``second`` on this
    machine, whatever its mapping costs (the best of three runs each): Python's start with
    ``gpualign map``'s imports (and CuPy's CUDA context where there is a GPU); the two files'
    decompression, a thread each, when gzip-compressed; the last SAM that a row before wrote
    (``work/out.sam``) written once more."""
    imports = "import gpualign.cli.map, gpualign.map.api, gpualign.map.index"
    if cuda_status()[0]:
        imports += "; import cupy; cupy.zeros(1)"
    start = _best_seconds(lambda: subprocess.run([sys.executable, "-c", imports], check=True))
    rows = [(FLOOR_START, "-", f"{start:.2f}", "-", "-", "-",
             f'`python -c "{imports}"`')]
    if first.suffix == ".gz":
        def both() -> None:
            with ThreadPoolExecutor(2) as pool:
                list(pool.map(_decompress, (first, second)))
        rows.append(("fixed: decompressing both FASTQ files", "-", f"{_best_seconds(both):.2f}",
                     "-", "-", "-", "xopen, the command's reader, a thread a file"))
    sam, copy = work / "out.sam", work / "copy.sam"
    if sam.is_file():
        seconds = _best_seconds(lambda: shutil.copyfile(sam, copy))
        copy.unlink()
        rows.append(("fixed: writing the SAM", "-", f"{seconds:.2f}", "-", "-", "-",
                     f"the {sam.stat().st_size / 1e6:,.0f} MB SAM of the last row that "
                     "wrote one, written once more (a file copy)"))
    return rows


def target_lines(rows: list[tuple[str, ...]]) -> list[str]:
    """The issue's throughput target (10 times minimap2's rate) beside the fixed start-up,
    when both rows ran."""
    def seconds(prefix: str) -> float | None:
        found = [row[2] for row in rows if row[0].startswith(prefix)]
        try:
            return float(found[0]) if found else None
        except ValueError:  # skipped
            return None

    minimap2, start = seconds("minimap2"), seconds(FLOOR_START)
    if minimap2 is None or start is None:
        return []
    return ["", f"10 times minimap2's rate leaves {minimap2 / 10:.2f} s for these reads, end to "
                f"end. Python's start with the command's imports alone takes {start:.2f} s "
                "(row above), before a read is read."]


def gpualign_command(reference: Path, backend: str) -> list[str]:
    """``gpualign map`` of ``reference`` (its index built in the call) on ``backend``, SAM to
    standard output, no progress bar."""
    return [sys.executable, "-m", "gpualign.cli", "map", "--backend", backend, "-q",
            str(reference)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", type=Path, default=ROOT / "data/ecoli_MG1655.fasta.gz")
    parser.add_argument("--pairs", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--simulator", choices=("builtin", "dwgsim"), default="builtin",
                        help="the reads: this script's vectorised simulator (default) or "
                             "dwgsim's (on PATH)")
    parser.add_argument("--engines", default="cuda,cpu,minimap2",
                        help="rows, in order: cuda, cpu, cuda-cli, cpu-cli, minimap2, floor "
                             "(the fixed costs of a Python command on this machine; its SAM row "
                             "needs a SAM row before it)")
    parser.add_argument("--gzip", action="store_true",
                        help="the built-in simulator's FASTQ gzip-compressed")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                        help="minimap2's threads (default: every core)")
    parser.add_argument("--primary-cigar", choices=("affine", "edit"),
                        default=config.MAP_PRIMARY_CIGAR,
                        help="config.MAP_PRIMARY_CIGAR of gpualign's rows (default "
                             f"{config.MAP_PRIMARY_CIGAR})")
    parser.add_argument("--commit")
    parser.add_argument("--results-dir", type=Path, default=ROOT / "benchmarks/results")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    if not args.reference.is_file():
        log(f"{args.reference} missing: run scripts/fetch-data.sh")
        return 2
    if args.simulator == "dwgsim" and shutil.which("dwgsim") is None:
        log("dwgsim missing: apt install dwgsim")
        return 2
    engines = args.engines.split(",")
    started = _dt.datetime.now(_dt.timezone.utc)
    genome = SequenceSet.from_file(args.reference, "dna", invalid="wildcard")
    began = time.perf_counter()
    index = MapIndex.build(genome)
    build = time.perf_counter() - began
    rows = engine_rows(args, engines, index, build, genome)
    if args.simulator == "dwgsim":
        reads_line = (f"- reads: {args.pairs:,} pairs of {READ_LENGTH} bp from "
                      f"{args.reference.name} by dwgsim (-z {args.seed} -1 {READ_LENGTH} -2 "
                      f"{READ_LENGTH} -d {INSERT} -s {SPREAD}: its default errors, mutations "
                      "with indels, 5% random reads)")
    else:
        reads_line = (f"- reads: {args.pairs:,} pairs of {READ_LENGTH} bp from "
                      f"{args.reference.name}, inserts {INSERT} +- {SPREAD}, "
                      f"{SUBSTITUTIONS:.0%} substitutions, no indels (seed {args.seed})"
                      + (", FASTQ.gz" if args.gzip else ""))
    info = device_info()
    command = " ".join([Path(sys.executable).name, *(sys.argv if argv is None else argv)])
    header = ("engine", "reads/s", "seconds", "correct", f"wrong, MAPQ >= {CONFIDENT}",
              "correct of placed at MAPQ >= 1", "note")
    clip = (" (less a leading soft clip; dwgsim's reads of random DNA are correct when left "
            "unmapped)") if args.simulator == "dwgsim" else ""
    lines = [
        *header_lines("Read mapping: gpualign beside minimap2", info, git_commit(args.commit),
                      started.strftime('%Y-%m-%d %H:%M UTC'), command),
        reads_line,
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(row) + " |" for row in rows),
        "",
        f"Correct: within {SLACK} bp of the true leftmost position{clip}, on the true strand. "
        "Reads placed with MAPQ 0 have equal places elsewhere (repeats): which one each engine "
        "takes is a tie, so the last column compares the placements that are not.",
        *target_lines(rows),
    ]
    text = "\n".join(lines) + "\n"
    publish(text, 'map', info, started, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
