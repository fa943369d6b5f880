#!/usr/bin/env python3
"""Read mapping on real reads: gpualign ``map_reads`` beside minimap2, placement by placement.

    python benchmarks/bench_map_real.py                        # both workloads, backend auto
    python benchmarks/bench_map_real.py --only hiv --backend cuda --threads 16
    python benchmarks/bench_map_real.py --primary-cigar edit --primary-cigar affine

Workloads (``--only``):

- ``hiv``: the real MiSeq pairs (2 x 250 bp, adapters left in) of iva's test data against the
  HIV-1 genome DQ234790 (``data/`` of ``scripts/fetch-data.sh``, or ``--data-dir``).
- ``quast``: the 2,000 real 101 bp Illumina reads of QUAST's tests (single-end: tests/data
  holds only their first reads) against the first 10 kb of E. coli K-12 MG1655, which they
  were taken from (``tests/data``).

Engines: ``gpualign.map_reads`` on ``--backend`` from the FASTA and FASTQ files (its index
built in the call, after an untimed warm-up on the first reads that compiles its kernels),
and ``minimap2 -ax sr -t THREADS`` on the same files (its index built in the call); reads/s
of each, end to end (minimap2's time includes writing its SAM; gpualign returns arrays).
``--primary-cigar`` (repeatable) maps with each setting of ``config.MAP_PRIMARY_CIGAR`` in
turn, each compared with minimap2 (default: the shipped setting).

Agreement: each read's (and mate's) primary record (minimap2's: neither 0x100 nor 0x800) is
compared among the reads both tools place uniquely (MAPQ >= 30 in both): the same contig and
strand, and POS (the reference position of the first aligned base, soft clips not counted)
within 5 bp. Issue 23's target: >= 99% agree. The reads placed by one tool only are counted,
and the first disagreeing reads are listed with both tools' records.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import itertools
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from _common import ROOT, device_info, git_commit, log, publish, versions

from gpualign import config
from gpualign.backend import resolve_backend
from gpualign.io import read_records
from gpualign.map import map_reads
from gpualign.map._reads import template_name

SLACK = 5  # bp between the two tools' POS that still count as the same placement
UNIQUE = 30  # MAPQ from which a placement counts as unique
TARGET = 0.99  # issue 23: fraction of the reads both place uniquely that must agree
WARM_UP_READS = 1000


@dataclass
class Workload:
    name: str
    reference: Path
    reads: Path
    mates: Path | None
    about: str


@dataclass
class Placements:
    """One primary record per read (single-end) or per mate (pair ``i``'s at ``2i``, ``2i +
    1``); contig names, ``pos`` 0-based (-1 where unmapped) and ``end`` past the last
    reference base aligned."""

    contig: list[str | None]
    pos: np.ndarray
    end: np.ndarray
    reverse: np.ndarray
    mapq: np.ndarray
    cigar: list[str | None]
    nm: np.ndarray

    @classmethod
    def empty(cls, count: int) -> Placements:
        unset = np.full(count, -1, np.int64)
        return cls([None] * count, unset.copy(), unset.copy(), np.zeros(count, bool),
                   np.zeros(count, np.int64), [None] * count, unset.copy())

    @property
    def placed(self) -> np.ndarray:
        return self.pos >= 0

    def describe(self, i: int) -> str:
        if not self.placed[i]:
            return "unmapped"
        return (f"{self.contig[i]}:{self.pos[i] + 1} {'-' if self.reverse[i] else '+'} "
                f"{self.cigar[i]} MAPQ {self.mapq[i]} NM {self.nm[i]}")


def workloads(data_dir: Path) -> dict[str, Workload]:
    tests = ROOT / "tests" / "data"
    return {
        "hiv": Workload("hiv", data_dir / "hiv_reference.fasta", data_dir / "hiv_reads_1.fq.gz",
                        data_dir / "hiv_reads_2.fq.gz",
                        "iva's test data (Debian iva 1.0.11+ds-3): real MiSeq 2 x 250 bp pairs "
                        "against HIV-1 DQ234790 (9,056 bp)"),
        "quast": Workload("quast", tests / "ecoli_10kb.fasta.gz",
                          tests / "ecoli_reads_2000.fastq.gz", None,
                          "QUAST 5.2.0's test data (tests/data/README.md): the first 2,000 real "
                          "101 bp Illumina reads (single-end: their mates are not in tests/data) "
                          "against the first 10 kb of E. coli K-12 MG1655"),
    }


def read_names(path: Path) -> list[str]:
    return [name for name, _ in read_records(path)]


def slot_of(read: np.ndarray, mate: np.ndarray) -> np.ndarray:
    """Position in :class:`Placements` of a read (mate 0: single-end) or of mate 1 or 2."""
    return np.where(mate > 0, 2 * read + mate - 1, read)


def run_gpualign(work: Workload, backend: str, count: int) -> tuple[float, Placements, str]:
    """Seconds of ``map_reads`` from the files, its primary placements and its stages."""
    warm = [[sequence for _, sequence in itertools.islice(read_records(path), WARM_UP_READS)]
            for path in (work.reads, work.mates) if path is not None]
    map_reads(work.reference, *warm, backend=backend)  # compiles the kernels (Numba or NVRTC)
    began = time.perf_counter()
    result = map_reads(work.reference, work.reads, work.mates, backend=backend)
    seconds = time.perf_counter() - began
    primary = np.flatnonzero(result.primary)  # a split read's supplementary record left out
    placements = Placements.empty(count)
    slots = slot_of(result.read[primary], result.mate[primary])
    mapped = (result.flag[primary] & 4) == 0
    slots, primary = slots[mapped], primary[mapped]
    placements.pos[slots] = result.pos[primary]
    placements.reverse[slots] = (result.flag[primary] & 16) != 0
    placements.mapq[slots] = result.mapq[primary]
    placements.nm[slots] = result.nm[primary]
    for slot, record in zip(slots.tolist(), primary.tolist(), strict=True):
        placements.contig[slot] = result.reference_names[result.contig[record]]
        placements.cigar[slot] = result.cigar[record]
        placements.end[slot] = result.pos[record] + reference_length(result.cigar[record])
    stages = ", ".join(f"{stage} {value:.2f} s" for stage, value in result.stage_seconds.items())
    return seconds, placements, stages


def run_minimap2(work: Workload, threads: int, names: list[str]) -> tuple[float, Placements]:
    """Seconds of ``minimap2 -ax sr`` from the files to SAM, and its primary placements
    (records in input order; each checked against the input's read names)."""
    files = [str(path) for path in (work.reads, work.mates) if path is not None]
    began = time.perf_counter()
    sam = subprocess.run(["minimap2", "-ax", "sr", "-t", str(threads), str(work.reference),
                          *files], capture_output=True, text=True, check=True).stdout
    seconds = time.perf_counter() - began
    paired = work.mates is not None
    placements = Placements.empty(len(names) * (2 if paired else 1))
    order = itertools.count()
    read = -1
    for line in sam.splitlines():
        if line.startswith("@"):
            continue
        name, flag, contig, pos, mapq, cigar, *rest = line.split("\t")
        flag = int(flag)
        if flag & 0x900:
            continue
        if paired:
            if flag & 0x40:  # the first mate's record comes first: a new pair
                read = next(order)
            slot = 2 * read + (1 if flag & 0x80 else 0)
        else:
            read = slot = next(order)
        if template_name(name) != template_name(names[read]):
            raise ValueError(f"minimap2's record {name!r} is not read #{read} "
                             f"({names[read]!r}): records out of input order")
        if flag & 4:
            continue
        placements.contig[slot] = contig
        placements.pos[slot] = int(pos) - 1
        placements.reverse[slot] = bool(flag & 16)
        placements.mapq[slot] = int(mapq)
        placements.cigar[slot] = cigar
        placements.end[slot] = int(pos) - 1 + reference_length(cigar)
        placements.nm[slot] = next((int(tag[5:]) for tag in rest if tag.startswith("NM:i:")),
                                   -1)
    return seconds, placements


def compare(ours: Placements, theirs: Placements) -> tuple[dict[str, int], np.ndarray]:
    """Counts of the comparison, and the reads both place uniquely that disagree."""
    unique_ours = ours.placed & (ours.mapq >= UNIQUE)
    unique_theirs = theirs.placed & (theirs.mapq >= UNIQUE)
    both = np.flatnonzero(unique_ours & unique_theirs)
    same_strand = np.array([ours.contig[i] == theirs.contig[i] for i in both], dtype=bool) \
        & (ours.reverse[both] == theirs.reverse[both])
    same = same_strand & (np.abs(ours.pos[both] - theirs.pos[both]) <= SLACK)
    overlap = same_strand & (np.minimum(ours.end[both], theirs.end[both])
                             > np.maximum(ours.pos[both], theirs.pos[both]))
    counts = {
        "both unique": len(both),
        "agree": int(same.sum()),
        "disagree on the ends of overlapping alignments": int((overlap & ~same).sum()),
        "disagree elsewhere on the strand": int((same_strand & ~overlap).sum()),
        "disagree on the strand or contig": int((~same_strand).sum()),
        "placed by gpualign only": int((ours.placed & ~theirs.placed).sum()),
        "placed by minimap2 only": int((theirs.placed & ~ours.placed).sum()),
        "unique in gpualign only": int((unique_ours & ~unique_theirs).sum()),
        "unique in minimap2 only": int((unique_theirs & ~unique_ours).sum()),
    }
    return counts, both[~same]


def reference_length(cigar: str) -> int:
    """Reference bases a SAM CIGAR's alignment covers."""
    return sum(int(length) for length, op in re.findall(r"([0-9]+)([MDN=X])", cigar))


def read_label(slot: int, names: list[str], paired: bool) -> str:
    if not paired:
        return names[slot]
    return f"{template_name(names[slot // 2])}/{slot % 2 + 1}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", choices=("hiv", "quast"), metavar="NAME",
                        help="workload to run (repeatable; default both): hiv, quast")
    parser.add_argument("--backend", default="auto", help="gpualign's backend (default auto)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                        help="minimap2's threads (default: every core)")
    parser.add_argument("--primary-cigar", action="append", choices=("affine", "edit"),
                        help="config.MAP_PRIMARY_CIGAR of gpualign's run (repeatable: one run "
                             f"each; default {config.MAP_PRIMARY_CIGAR})")
    parser.add_argument("--show", type=int, default=8,
                        help="disagreeing reads listed per workload (default 8)")
    parser.add_argument("--data-dir", type=Path, default=ROOT / "data",
                        help="the data of scripts/fetch-data.sh (default: data/ of this "
                             "checkout)")
    parser.add_argument("--commit")
    parser.add_argument("--results-dir", type=Path, default=ROOT / "benchmarks/results")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    if shutil.which("minimap2") is None:
        log("minimap2 is not on PATH: there is nothing to compare with")
        return 2
    chosen = [workloads(args.data_dir)[name] for name in dict.fromkeys(args.only or
                                                                     ("hiv", "quast"))]
    missing = [str(path) for work in chosen for path in (work.reference, work.reads, work.mates)
               if path is not None and not path.is_file()]
    if missing:
        log(f"missing {', '.join(missing)}: run scripts/fetch-data.sh (or pass --data-dir)")
        return 2
    backend = resolve_backend(args.backend)
    started = _dt.datetime.now(_dt.timezone.utc)
    rows, shown, failed = [], [], False
    for work in chosen:
        names = read_names(work.reads)
        paired = work.mates is not None
        count = len(names) * (2 if paired else 1)
        log(f"{work.name}: {count:,} reads")
        theirs_seconds, theirs = run_minimap2(work, args.threads, names)
        rows.append(engine_row(work.name, f"minimap2 -ax sr -t {args.threads}", count,
                               theirs_seconds, theirs, "FASTQ to SAM, its index included"))
        for setting in dict.fromkeys(args.primary_cigar or [config.MAP_PRIMARY_CIGAR]):
            with config.override(MAP_PRIMARY_CIGAR=setting):
                ours_seconds, ours, stages = run_gpualign(work, backend, count)
            engine = f"gpualign {backend} ({setting} CIGAR)"
            rows.append(engine_row(work.name, engine, count, ours_seconds, ours,
                                   f"FASTQ to records, its index included; stages: {stages}"))
            counts, disagree = compare(ours, theirs)
            both = counts.pop("both unique")
            fraction = counts["agree"] / both if both else float("nan")
            same_locus = (counts["agree"]
                          + counts["disagree on the ends of overlapping alignments"]
                          ) / both if both else float("nan")
            passed = both > 0 and fraction >= TARGET
            failed |= not passed
            rows.append((work.name, f"agreement ({setting} CIGAR)", f"{count:,}", "-", "-", "-",
                         f"{both:,} in both",
                         f"{fraction:.4f} ({counts['agree']:,} of {both:,}) "
                         f"{'PASS' if passed else 'FAIL'}", f">= {TARGET}",
                         f"same locus (aligned parts overlap): {same_locus:.4f}; "
                         + "; ".join(f"{key}: {value:,}" for key, value in counts.items())))
            log("  " + " | ".join(rows[-1]))
            for slot in disagree[:args.show].tolist():
                shown.append(f"- {work.name} ({setting} CIGAR) "
                             f"`{read_label(slot, names, paired)}`: gpualign "
                             f"`{ours.describe(slot)}`, minimap2 `{theirs.describe(slot)}`")
                log(shown[-1])
    info = device_info()
    command = " ".join([Path(sys.executable).name, *(sys.argv if argv is None else argv)])
    header = ("workload", "engine", "reads", "seconds", "reads/s", "placed",
              f"MAPQ >= {UNIQUE}", "agree", "target", "note")
    lines = [
        "# Read mapping on real reads: gpualign beside minimap2",
        "",
        f"- device: {info['gpu']}",
        f"- CPU: {info['cpu']}",
        f"- commit: {git_commit(args.commit)}",
        f"- date: {started.strftime('%Y-%m-%d %H:%M UTC')}",
        f"- versions: {versions()}, {minimap2_version()}",
        f"- command: `{command}`",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(row) + " |" for row in rows),
        "",
        f"Agree: among the reads (each mate counted) that both place with MAPQ >= {UNIQUE}, the "
        f"fraction on the same contig and strand with POS (first aligned base, soft clips not "
        f"counted) within {SLACK} bp; primary records only (minimap2's neither 0x100 nor "
        "0x800, gpualign's not 0x800). Reads/s: every read (and mate) of the input over the "
        "call's seconds, FASTQ and reference parsing and indexing included; gpualign after an "
        f"untimed warm-up call on the first {WARM_UP_READS:,} reads.",
        "",
        "## Data",
        "",
        *(f"- **{work.name}**: {work.about}" for work in chosen),
    ]
    if shown:
        lines += ["", f"## Disagreeing reads (the first {args.show} of each workload and "
                  "setting)", "", *shown]
    text = "\n".join(lines) + "\n"
    publish(text, 'map-real', info, started, args)
    return 1 if failed else 0


def engine_row(workload: str, engine: str, count: int, seconds: float, placements: Placements,
               note: str) -> tuple[str, ...]:
    """The table row of one engine's run (logged as it is made)."""
    placed = int(placements.placed.sum())
    unique = int((placements.placed & (placements.mapq >= UNIQUE)).sum())
    row = (workload, engine, f"{count:,}", f"{seconds:.2f}", f"{count / seconds:,.0f}",
           f"{placed:,} ({placed / count:.1%})", f"{unique:,}", "-", "-", note)
    log("  " + " | ".join(row))
    return row


def minimap2_version() -> str:
    found = subprocess.run(["minimap2", "--version"], capture_output=True, text=True)
    return f"minimap2 {found.stdout.strip() or 'unknown'}"


if __name__ == "__main__":
    sys.exit(main())
