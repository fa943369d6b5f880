#!/usr/bin/env python3
"""Maximal exact matches (issue 6): simulated reads against E. coli MG1655, beside MUMmer.

Prints a Markdown table and writes it, with device, commit, date and versions, to
``benchmarks/results/mems-<device>-<date>.md``.

    python benchmarks/bench_mems.py                                   # full run
    python benchmarks/bench_mems.py --reads 2000 --cpu-reads 2000 --mummer-reads 2000 --no-save

Workload ``ecoli-l20``: ``--reads`` reads (default 1,000,000) of 100-150 bp simulated from
``ecoli_MG1655.fasta.gz`` in ``--data-dir`` (4.6 Mbp; uniform start, either strand, 1%
substitutions, seed ``--seed``), MEMs of at least 20 bp on both strands. Every engine runs end
to end, as a user would, from FASTA files to MUMmer's text output, index or suffix tree built in
the run: ``gpualign mems REF READS -l 20 -b`` with ``--backend cuda`` (after a warm-up on the
check reads that compiles the kernels) or ``--backend cpu``, ``mummer -maxmatch -n -b -l 20`` in
one process, and MUMmer as ``--processes`` parallel processes over read chunks. The check
compares gpualign's output on the first ``--check-reads`` reads with MUMmer's, block by block as
sorted sets (MUMmer orders equal query positions by its tree walk). Rows count reads as "pairs"
and read bases as "cells" (GCUPS: billions of read bases a second).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from _common import BenchBase, Row, base_parser, parse, run_benchmark, shown

import gpualign

WORKLOADS = ("ecoli-l20",)
ENGINES = ("cuda", "cpu", "mummer")
DATA = "ecoli_MG1655.fasta.gz"  # in --data-dir, as scripts/fetch-data.sh names it
TARGET_ONE = 50.0  # issue 6: >= 50x mummer -maxmatch, end to end
TARGET_PARALLEL = 5.0  # and >= 5x MUMmer run as 16 parallel processes
_COMPLEMENT = str.maketrans("ACGT", "TGCA")


def simulate(reference: str, count: int, seed: int) -> list[tuple[str, str]]:
    """``count`` reads of 100-150 bp from ``reference``: uniform start, either strand, 1%
    substitutions."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(100, 151, count)
    starts = rng.integers(0, len(reference) - 150, count)
    reverse = rng.random(count) < 0.5
    reads = []
    for k in range(count):
        read = list(reference[starts[k]:starts[k] + lengths[k]])
        for position in np.flatnonzero(rng.random(len(read)) < 0.01):
            read[position] = "ACGT"[(("ACGT".find(read[position]) + rng.integers(1, 4)) % 4)]
        text = "".join(read)
        if reverse[k]:
            text = text.translate(_COMPLEMENT)[::-1]
        reads.append((f"read{k}", text))
    return reads


def write_fasta(path: Path, records) -> Path:
    with path.open("w") as out:
        for name, sequence in records:
            out.write(f">{name}\n{sequence}\n")
    return path


def blocks(text: str) -> dict[str, list[str]]:
    """MUMmer output as header -> sorted match lines."""
    found: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith(">"):
            current = line
            found[current] = []
        elif current is not None:
            found[current].append(line)
    return {header: sorted(lines) for header, lines in found.items()}


def run(command: list[str], out: Path) -> float:
    began = time.perf_counter()
    with out.open("w") as handle:
        subprocess.run(command, stdout=handle, stderr=subprocess.PIPE, check=True)
    return time.perf_counter() - began


class Bench(BenchBase):
    def __init__(self, args):
        super().__init__(args)
        self.folder = Path(tempfile.mkdtemp(prefix="bench-mems-"))
        self.mummer = args.mummer or shutil.which("mummer")
        self.seconds: dict[str, float] = {}
        self.path = args.data_dir / DATA

    def run(self) -> None:
        if not self.path.is_file():
            self.add(Row("ecoli-l20", "-",
                         note=f"skipped: {shown(self.path)} missing (scripts/fetch-data.sh)"))
            return
        (name, genome), = gpualign.io.read_records(self.path)
        self.reference = write_fasta(self.folder / "reference.fa", [(name, genome.upper())])
        size = max(self.args.reads, self.args.cpu_reads, self.args.mummer_reads,
                   self.args.check_reads)
        reads = simulate(genome.upper(), size, self.args.seed)
        self.files = {count: write_fasta(self.folder / f"reads{count}.fa", reads[:count])
                      for count in {self.args.reads, self.args.cpu_reads,
                                    self.args.mummer_reads, self.args.check_reads}}
        self.bases = {count: sum(len(s) for _, s in reads[:count]) for count in self.files}
        self.sources["ecoli-l20"] = (f"{shown(self.path)} ({len(genome):,} bp); reads simulated "
                                     f"with seed {self.args.seed}")
        self.expected = None
        if self.mummer:
            check = self.folder / "check-mummer.txt"
            run([self.mummer, "-maxmatch", "-n", "-b", "-l", "20", str(self.reference),
                 str(self.files[self.args.check_reads])], check)
            self.expected = blocks(check.read_text())
        if "mummer" in self.engines:
            self.run_mummer()
        self.run_index()
        if "cuda" in self.engines:
            self.run_gpualign("cuda", self.args.reads)
        if "cpu" in self.engines:
            self.run_gpualign("cpu", self.args.cpu_reads)

    def verdict(self, output: Path, count: int, check: Path) -> str:
        """The ``output`` of ``count`` reads against MUMmer's run of as many reads when there
        is one, else the ``check`` output of the check reads against MUMmer's."""
        if self.expected is None:
            return "- (no mummer to compare with)"
        expected = self.expected
        if count == self.args.mummer_reads and (self.folder / "mummer.txt").is_file():
            expected = blocks((self.folder / "mummer.txt").read_text())
        else:
            count, output = self.args.check_reads, check
        got = blocks(output.read_text())
        return (f"ok ({count:,} reads: every block equals MUMmer's)"
                if got == expected else "**FAIL** (differs from MUMmer)")

    def run_index(self) -> None:
        """Index build alone from the FASTA file, in this process (after one warm-up): on the
        CPU (libdivsufsort and the k-mer table) and on the GPU (prefix doubling and the k-mer
        table there, plus the copy of the index to the GPU that a search makes)."""
        from gpualign.mems import _cuda

        for backend in ("cpu", "cuda") if self.cuda_ok else ("cpu",):
            times = []
            for _ in range(4):
                began = time.perf_counter()
                index = gpualign.build_index(self.reference, backend=backend)
                if backend == "cuda":
                    _cuda.DeviceIndex(index)
                    import cupy

                    cupy.cuda.Device().synchronize()
                times.append(time.perf_counter() - began)
            seconds = float(np.median(times[1:]))
            target = ""
            if backend == "cuda":
                target = f"< 1 s: {seconds:.2f} s ({'met' if seconds < 1 else '**missed**'})"
            self.add(Row("ecoli-l20", f"index build ({backend})", 1, len(index.text), seconds,
                         target=target,
                         note=f"gpualign.build_index(backend={backend!r})"
                              f"{' + copy to the GPU' if backend == 'cuda' else ''}, from the "
                              f"FASTA file, median of 3; {len(index.pages)} page(s)"))

    def run_gpualign(self, backend: str, count: int) -> None:
        engine = f"gpualign-{backend}"
        if backend == "cuda" and not self.cuda_ok:
            self.add(Row("ecoli-l20", engine, note=f"skipped: {self.cuda_why}"))
            return
        command = [sys.executable, "-m", "gpualign.cli", "mems", str(self.reference)]
        options = ["-l", "20", "-b", "--backend", backend, "-q"]
        check = self.folder / f"check-{backend}.txt"
        run([*command, str(self.files[self.args.check_reads]), *options], check)  # warm-up
        out = self.folder / f"{backend}.txt"
        # The process's fixed costs (Python, imports, CUDA context) vary from run to run by
        # a few tenths of a second: the median of --repeats runs.
        repeats = self.args.repeats if backend == "cuda" else 1
        times = [run([*command, str(self.files[count]), *options], out) for _ in range(repeats)]
        seconds = float(np.median(times))
        runs = f"median of {repeats} runs ({', '.join(f'{t:.2f}' for t in times)} s); " \
            if repeats > 1 else ""
        row = Row("ecoli-l20", engine, count, self.bases[count], seconds,
                  self.verdict(out, count, check),
                  note=f"end to end: gpualign mems {' '.join(options)} (index build included); "
                       f"{runs}".rstrip("; "))
        one = self.seconds.get(("mummer", count))
        parallel = self.seconds.get(("mummer-parallel", count))
        if backend == "cuda" and one and parallel:
            row.target = (f">= {TARGET_ONE:g}x mummer: {one / seconds:.1f}x "
                          f"({'met' if one / seconds >= TARGET_ONE else '**missed**'}); "
                          f">= {TARGET_PARALLEL:g}x {self.args.processes} processes: "
                          f"{parallel / seconds:.1f}x ("
                          f"{'met' if parallel / seconds >= TARGET_PARALLEL else '**missed**'})")
        self.add(row)

    def run_mummer(self) -> None:
        if not self.mummer:
            self.add(Row("ecoli-l20", "mummer", note="skipped: mummer not found (--mummer)"))
            return
        count = self.args.mummer_reads
        options = ["-maxmatch", "-n", "-b", "-l", "20"]
        seconds = run([self.mummer, *options, str(self.reference), str(self.files[count])],
                      self.folder / "mummer.txt")
        self.seconds[("mummer", count)] = seconds
        self.add(Row("ecoli-l20", "mummer (1 process)", count, self.bases[count], seconds,
                     note=f"mummer {' '.join(options)}"))
        # The same reads in chunks, one process each, as a user would spread MUMmer over cores.
        chunks = self.args.processes
        lines = self.files[count].read_text().splitlines(keepends=True)
        records = [lines[k:k + 2] for k in range(0, len(lines), 2)]
        parts = [write_fasta(self.folder / f"part{k}.fa",
                             [(r[0][1:].strip(), r[1].strip()) for r in records[k::chunks]])
                 for k in range(chunks)]
        began = time.perf_counter()
        with ThreadPoolExecutor(chunks) as pool:
            list(pool.map(lambda k: run([self.mummer, *options, str(self.reference),
                                         str(parts[k])], self.folder / f"part{k}.txt"),
                          range(chunks)))
        seconds = time.perf_counter() - began
        self.seconds[("mummer-parallel", count)] = seconds
        self.add(Row("ecoli-l20", f"mummer ({chunks} processes)", count, self.bases[count],
                     seconds, note=f"{chunks} read chunks, one mummer each, all at once"))


def method(bench: Bench) -> str:
    return ("One timed run per engine, end to end from FASTA files to MUMmer's text format "
            "(gpualign: Python start, index build, search, output; MUMmer: suffix tree, "
            "search, output); gpualign-cuda after one warm-up run on the check reads, the "
            "median of --repeats runs. "
            f"Temporary files in {bench.folder} (deleted at the end).")


def parse_args(argv=None):
    parser = base_parser(__doc__, WORKLOADS, ENGINES)
    parser.add_argument("--reads", type=int, default=1_000_000, help="reads for gpualign-cuda")
    parser.add_argument("--cpu-reads", type=int, default=100_000, help="reads for gpualign-cpu")
    parser.add_argument("--mummer-reads", type=int, default=1_000_000,
                        help="reads for MUMmer (the speed-up targets need the same count as "
                             "--reads)")
    parser.add_argument("--check-reads", type=int, default=2000,
                        help="reads on which every engine's output is compared with MUMmer's")
    parser.add_argument("--processes", type=int, default=min(16, os.cpu_count() or 1),
                        help="parallel MUMmer processes (default: 16 or the cores)")
    parser.add_argument("--mummer", help="path of the mummer executable (default: PATH)")
    return parse(parser, argv, WORKLOADS, ENGINES)


def main(argv=None) -> int:
    args = parse_args(argv)
    bench = Bench(args)
    try:
        return run_benchmark("mems", "gpualign MEM benchmark", args, argv, lambda: bench, method)
    finally:
        shutil.rmtree(bench.folder, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
