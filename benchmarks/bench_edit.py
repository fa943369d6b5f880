#!/usr/bin/env python3
"""Edit-distance throughput of gpualign beside its peers, on the same pairs, in one run.

Prints a Markdown table (GCUPS/TCUPS counting m*n cells per pair, and pairs/s) and writes it,
with device, commit, date and versions, to ``benchmarks/results/edit-<device>-<date>.md``.

    python benchmarks/bench_edit.py                      # full sizes (meant for a GPU host)
    python benchmarks/bench_edit.py --scale 0.0005 --no-save   # CPU smoke run, under a minute
    python benchmarks/bench_edit.py --only global-1k --only kernel-choice

Workloads, engines and columns are described in benchmarks/README.md. GPU engines run every
pair (warm-up calls for 0.5 s first, then the median of ``--repeats`` timed calls, the device
synchronized before each clock read). CPU engines run a random subset of the pairs sized to
take about ``--cpu-seconds`` per call; their rate is the rate on that subset, and the seconds
column is the time of the pairs actually run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from _common import (
    ROOT,
    BenchBase,
    Row,
    base_parser,
    gpu_note,
    import_optional,
    log,
    parse,
    run_benchmark,
    sanitize,
    shown,
    time_cpu,
    time_gpu,
)
from _gaps import strip_gaps

import gpualign
from gpualign import SequenceSet
from gpualign.cigar import cigar_edit_cost

WORKLOADS = ("infix-reads", "global-1k", "global-10k", "infix-path", "kernel-choice")
ENGINES = ("cuda", "stringzillas", "cpu", "edlib", "rapidfuzz")
BASE_PAIRS = {"infix-reads": 1_000_000, "global-1k": 100_000, "global-10k": 4_000,
              "infix-path": 200_000, "kernel-choice": 100_000}
# Targets of issue 2 (TCUPS on one H100) for the gpualign-cuda rows.
CUDA_TARGET_TCUPS = {"infix-reads": 30.0, "global-1k": 25.0, "global-10k": 20.0}
PATH_TARGET_RATIO = 0.20  # task path >= 20% of the distance-only rate (infix-reads)
CPU_TARGET_RATIO = 0.50  # gpualign-cpu >= 50% of edlib's single-core rate
KERNEL_CHOICES = {  # (query length, bins in 32-bit words to force); None = the shipped bins
    256: [None, ((8, 1, 8),), ((8, 2, 4),), ((8, 4, 2),)],
    1000: [None, ((32, 2, 16),), ((32, 4, 8),), ((32, 8, 4),)],
}
# Real data, as scripts/fetch-data.sh names it in --data-dir (first choice) or --examples-dir
# holds it.
FILES = {
    "reads": ("hiv_reads_1.fq.gz", "hiv_reads.fa", "hiv_reads.fa.gz"),
    "hiv": ("hiv_reference.fasta", "hiv_reference.fa", "hiv_reference.fa.gz"),
    "16s": ("core_rdp.fasta.gz", "core_rdp.fasta"),
    "ecoli": ("ecoli_MG1655.fasta.gz", "ecoli_mg1655.fa.gz", "ecoli_mg1655.fasta.gz"),
}


# --------------------------------------------------------------------------------------------
# Data


@dataclass
class Pairs:
    """One workload's pairs: ``qset[i]`` against ``tset[i]``."""

    name: str
    mode: str
    task: str
    qset: SequenceSet
    tset: SequenceSet
    source: str
    cells: np.ndarray = field(init=False)  # m*n per pair, int64

    def __post_init__(self) -> None:
        self.cells = self.qset.lengths * self.tset.lengths

    @property
    def mean_cells(self) -> float:
        return float(self.cells.mean()) if len(self.cells) else 1.0

    def __len__(self) -> int:
        return len(self.qset)

    def subset(self, index: np.ndarray) -> tuple[SequenceSet, SequenceSet]:
        return self.qset.take(index), self.tset.take(index)

    def strings(self, index: np.ndarray) -> tuple[list[str], list[str]]:
        return [self.qset[int(i)] for i in index], [self.tset[int(i)] for i in index]


def make_set(codes: np.ndarray, lengths: np.ndarray) -> SequenceSet:
    """A SequenceSet over already encoded, concatenated codes."""
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return SequenceSet(codes, offsets, [str(i) for i in range(len(lengths))], "dna")


def cycle(base: SequenceSet, index: np.ndarray) -> SequenceSet:
    """``base.take(index)``, without int64 temporaries when all sequences are equally long."""
    lengths = base.lengths
    if len(lengths) and np.all(lengths == lengths[0]) and lengths[0] > 0:
        rows = base.codes.reshape(len(lengths), int(lengths[0]))
        return make_set(rows[index].ravel(), np.full(len(index), lengths[0], dtype=np.int64))
    return base.take(index)


def windows(genome: np.ndarray, starts: np.ndarray, width: int) -> SequenceSet:
    """Windows ``genome[s:s+width]`` for every start, packed in chunks (bounded temporaries)."""
    out = np.empty(len(starts) * width, dtype=np.uint8)
    step = max(1, (1 << 24) // width)
    span = np.arange(width, dtype=np.int64)
    for lo in range(0, len(starts), step):
        part = starts[lo:lo + step]
        out[lo * width:(lo + len(part)) * width] = genome[part[:, None] + span].ravel()
    return make_set(out, np.full(len(starts), width, dtype=np.int64))


def mutate(sset: SequenceSet, rng: np.random.Generator, rate: float = 0.10) -> SequenceSet:
    """A copy with ~``rate`` edits per base: 60% substitutions, 20% insertions, 20% deletions."""
    codes = sset.codes.copy()
    u = rng.random(len(codes), dtype=np.float32)
    p_sub, p_ins = 0.6 * rate, 0.2 * rate  # deletions: the remaining 0.2 * rate
    sub = u < p_sub
    ins = (u >= p_sub) & (u < p_sub + p_ins)
    dele = (u >= p_sub + p_ins) & (u < rate)
    codes[sub] = (codes[sub] + rng.integers(1, 4, int(sub.sum()), dtype=np.uint8)) % 4
    counts = 1 + ins.astype(np.int64) - dele.astype(np.int64)
    out = np.repeat(codes, counts)
    ends = np.cumsum(counts)
    out[ends[ins] - 1] = rng.integers(0, 4, int(ins.sum()), dtype=np.uint8)
    starts = sset.offsets[:-1]
    assert np.all(sset.lengths > 0), "mutate() expects non-empty sequences"
    lengths = np.add.reduceat(counts, starts) if len(starts) else np.zeros(0, dtype=np.int64)
    return make_set(out, lengths)


class Data:
    """Finds the real data files and builds each workload's pairs (seeded)."""

    def __init__(self, data_dir: Path, examples_dir: Path, seed: int):
        self.data_dir = data_dir
        self.examples_dir = examples_dir
        self.seed = seed
        self._genomes: dict[str, tuple[np.ndarray, str]] = {}

    def rng(self, name: str) -> np.random.Generator:
        return np.random.default_rng([self.seed, sum(name.encode())])

    def find(self, *names: str) -> Path | None:
        for folder in (self.data_dir, self.examples_dir):
            for name in names:
                path = folder / name
                if path.is_file() and path.stat().st_size > 0:
                    return path
        return None

    @staticmethod
    def records(path: Path):
        from gpualign.io import read_records

        return read_records(path)

    def genome(self, kind: str) -> tuple[np.ndarray, str] | None:
        """Codes and a description of the E. coli (``ecoli``) or HIV (``hiv``) reference."""
        if kind not in self._genomes:
            path = self.find(*FILES[kind])
            if path is None:
                return None
            rng = self.rng(kind)
            name, sequence = next(iter(self.records(path)))
            self._genomes[kind] = (sanitize(sequence, rng), f"{path} ({name})")
        return self._genomes[kind]

    def genome_chain(self, min_length: int) -> tuple[np.ndarray, str]:
        for kind in ("ecoli", "hiv"):
            found = self.genome(kind)
            if found is not None and len(found[0]) >= min_length:
                return found
        rng = self.rng("synthetic")
        return (rng.integers(0, 4, max(min_length, 1 << 20), dtype=np.uint8),
                "SYNTHETIC uniform random DNA (no real data found: run scripts/fetch-data.sh)")

    # -- workloads --

    def infix(self, name: str, n: int, task: str) -> Pairs:
        """64-150 bp pieces of real HIV MiSeq reads vs 1,024 bp windows of the HIV reference
        that contain the read's locus (found by a 16-mer seed) when it is found."""
        rng = self.rng("infix")  # same pairs for infix-reads and infix-path (prefix)
        ref = self.genome("hiv")
        reads_path = self.find(*FILES["reads"])
        if ref is None:
            genome, gsource = self.genome_chain(4096)
        else:
            genome, gsource = ref
        if reads_path is not None:
            reads = [sanitize(seq, rng) for _, seq in self.records(reads_path)]
            reads = [r for r in reads if len(r) >= 64][:n]  # only those the pairs use
            rsource = f"real reads {reads_path} ({len(reads):,} reads >= 64 bp used)"
        else:
            sim = mutate(windows(genome, rng.integers(0, len(genome) - 250, 20_000), 250),
                         rng, 0.05)
            reads = [sim.codes_of(i) for i in range(min(n, len(sim)))]
            rsource = "SIMULATED reads (250 bp windows of the reference, 5% edits)"
        loci, strands = self._seed_loci(reads, genome)
        reads = [r if s >= 0 else (3 - r)[::-1] for r, s in zip(reads, strands, strict=True)]
        found = float(np.mean(loci >= 0))
        read_len = np.array([len(r) for r in reads], dtype=np.int64)
        read_off = np.zeros(len(reads) + 1, dtype=np.int64)
        np.cumsum(read_len, out=read_off[1:])
        read_codes = np.concatenate(reads)
        # Queries: read i % R trimmed to a random length 64..150 at a random offset.
        which = np.arange(n, dtype=np.int64) % len(reads)
        q_len = rng.integers(64, 151, n)
        q_len = np.minimum(q_len, read_len[which])
        q_off = (rng.random(n) * (read_len[which] - q_len + 1)).astype(np.int64)
        q_start = read_off[which] + q_off
        q_offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(q_len, out=q_offsets[1:])
        gather = np.repeat(q_start - q_offsets[:-1], q_len) + np.arange(q_offsets[-1])
        qset = make_set(read_codes[gather], q_len)
        # Windows: 1,024 bp holding the piece's locus at a random place, else a random window.
        width = 1024
        locus = loci[which] + q_off
        slack = (rng.random(n) * (width - q_len + 1)).astype(np.int64)
        w_start = np.where(loci[which] >= 0, locus - slack,
                           rng.integers(0, len(genome) - width + 1, n))
        w_start = np.clip(w_start, 0, len(genome) - width)
        distinct, which_window = np.unique(w_start, return_inverse=True)
        tset = cycle(windows(genome, distinct, width), which_window.ravel())
        source = (f"{rsource}, trimmed to 64-150 bp at random offsets; 1,024 bp windows of "
                  f"{gsource} around the read's 16-mer seed hit ({found:.0%} of reads placed, "
                  "reverse strand flipped; the rest get random windows)")
        return Pairs(name, "infix", task, qset, tset, source)

    @staticmethod
    def _seed_loci(reads: list[np.ndarray], genome: np.ndarray,
                   k: int = 16) -> tuple[np.ndarray, np.ndarray]:
        """Reference position of each read's first base (or -1) and its strand (+1/-1), from
        the first of its 16-mers at offsets 0, 37, 74, ... found exactly in the reference."""
        n = len(reads)
        loci = np.full(n, -1, dtype=np.int64)
        strands = np.ones(n, dtype=np.int64)
        if n == 0 or len(genome) > 1 << 22 or len(genome) < k:  # meant for a small reference
            return loci, strands
        weights = 4 ** np.arange(k - 1, -1, -1, dtype=np.int64)
        span = np.arange(k, dtype=np.int64)
        genome_keys = np.lib.stride_tricks.sliding_window_view(genome.astype(np.int64), k) @ weights
        keys, first = np.unique(genome_keys, return_index=True)  # first occurrence of each
        lengths = np.array([len(r) for r in reads], dtype=np.int64)
        starts = np.zeros(n, dtype=np.int64)
        np.cumsum(lengths[:-1], out=starts[1:])
        codes = np.concatenate(reads).astype(np.int64)
        for strand, seq in ((-1, 3 - codes[::-1]), (1, codes)):  # forward last: it wins
            # read i reversed and complemented starts at total - end_i in seq
            read_start = starts if strand == 1 else len(codes) - starts - lengths
            for off in range(((int(lengths.max()) - k) // 37) * 37, -1, -37):  # first wins
                ok = lengths >= off + k
                seeds = seq[(read_start[ok] + off)[:, None] + span] @ weights
                where = np.minimum(np.searchsorted(keys, seeds), len(keys) - 1)
                hit = keys[where] == seeds
                rows = np.flatnonzero(ok)[hit]
                loci[rows] = np.maximum(0, first[where[hit]] - off)
                strands[rows] = strand
        return loci, strands

    def global_1k(self, n: int) -> Pairs:
        rng = self.rng("global-1k")
        width = 1000
        path = self.find(*FILES["16s"])
        if path is not None:
            seqs = []
            for _, seq in self.records(path):
                seq = strip_gaps(seq).upper()
                if len(seq) >= width:
                    seqs.append(sanitize(seq[:width], rng))
                if len(seqs) > n:
                    break
            if len(seqs) >= 2:
                base = make_set(np.concatenate(seqs), np.full(len(seqs), width, dtype=np.int64))
                i = np.arange(n, dtype=np.int64) % (len(seqs) - 1)
                source = (f"16S rRNA {path}: first 1,000 bp of {len(seqs)} sequences (gaps "
                          "stripped), sequence i vs i+1, cycled")
                return Pairs("global-1k", "global", "distance", cycle(base, i),
                             cycle(base, i + 1), source)
        genome, gsource = self.genome_chain(width + 1)
        pool = min(n, 20_000)
        base_q = windows(genome, rng.integers(0, len(genome) - width + 1, pool), width)
        base_t = mutate(base_q, rng)
        i = np.arange(n, dtype=np.int64) % pool
        source = (f"FALLBACK (no {shown(self.data_dir / FILES['16s'][0])}): {pool} 1,000 bp "
                  f"windows of {gsource} vs a copy with ~10% seeded edits, cycled")
        return Pairs("global-1k", "global", "distance", cycle(base_q, i), base_t.take(i), source)

    def global_10k(self, n: int) -> Pairs:
        rng = self.rng("global-10k")
        width = 10_000
        found = self.genome("ecoli")
        genome, gsource = found if found is not None else self.genome_chain(width + 1)
        if len(genome) <= width:
            genome, gsource = self.genome_chain(width + 1)
        qset = windows(genome, rng.integers(0, len(genome) - width + 1, n), width)
        source = (f"10 kb windows of {gsource} vs a copy with ~10% seeded edits (6% sub, "
                  "2% ins, 2% del)")
        return Pairs("global-10k", "global", "distance", qset, mutate(qset, rng), source)

    def kernel_choice(self, n: int, q_len: int) -> Pairs:
        rng = self.rng(f"kernel-{q_len}")
        width = 1024
        genome, gsource = self.genome_chain(width + 1)
        pool = min(n, 20_000)
        starts = rng.integers(0, len(genome) - width + 1, pool)
        base_t = windows(genome, starts, width)
        inner = starts + (rng.random(pool) * (width - q_len + 1)).astype(np.int64)
        mutated = mutate(windows(genome, inner, q_len), rng)
        # Insertions may lengthen a piece past q_len, i.e. into the next kernel bin; cut them
        # back so that every query has the word count the forced kernels are made for.
        keep = np.minimum(mutated.lengths, q_len)
        base_q = make_set(np.concatenate([mutated.codes_of(j)[:keep[j]] for j in range(pool)]),
                          keep)
        i = np.arange(n, dtype=np.int64) % pool
        source = (f"{q_len} bp pieces (~10% edits, cut to {q_len}) of {gsource} vs the 1,024 bp "
                  "window holding "
                  f"them, {pool} distinct pairs cycled")
        return Pairs(f"kernel-choice-{q_len}", "global", "distance", base_q.take(i),
                     cycle(base_t, i), source)


# --------------------------------------------------------------------------------------------
# Checks


def cigar_problem(cigar: str | None, query: np.ndarray, target: np.ndarray, start: int,
                  end: int, distance: int) -> str | None:
    """None when the CIGAR aligns query with target[start:end] at cost ``distance`` (every
    ``=`` a match of A, C, G or T, every ``X`` a mismatch), else what is wrong."""
    if cigar is None:
        return "no CIGAR"
    try:
        cost = cigar_edit_cost(query, target[start:end], cigar, match_codes=4)
    except ValueError as exc:
        return str(exc)
    return None if cost == distance else f"cost {cost} != distance {distance}"


def run_cpu_reference(pairs: Pairs, index: np.ndarray, task: str):
    q, t = pairs.subset(index)
    return gpualign.edit_distance(q, t, mode=pairs.mode, task=task, backend="cpu")


def check_result(pairs: Pairs, index: np.ndarray, result, reference=None) -> str:
    """Compare ``result`` (for the pairs ``index``) with the CPU backend on up to 200 of them;
    for task path, also validate the CIGARs and ends."""
    rng = np.random.default_rng(7)
    n_check = min(CHECK_PAIRS, len(index))
    pick = np.sort(rng.choice(len(index), n_check, replace=False))
    sample = index[pick]
    ref = reference if reference is not None else run_cpu_reference(pairs, sample, pairs.task)
    got = np.asarray(result.distance)[pick]
    bad = int(np.sum(got != ref.distance))
    problems = []
    if bad:
        problems.append(f"{bad}/{n_check} distances differ")
    if pairs.task == "path":
        ends = np.asarray(result.target_end)[pick]
        if np.any(ends != ref.target_end):
            problems.append(f"{int(np.sum(ends != ref.target_end))} ends differ")
        starts = np.asarray(result.target_start)[pick]
        wrong = 0
        for j, i in enumerate(sample):
            why = cigar_problem(result.cigar[pick[j]], pairs.qset.codes_of(int(i)),
                                pairs.tset.codes_of(int(i)), int(starts[j]), int(ends[j]),
                                int(got[j]))
            wrong += why is not None
        if wrong:
            problems.append(f"{wrong}/{n_check} bad CIGARs")
    if problems:
        return "**FAIL** " + "; ".join(problems)
    return f"ok ({n_check} vs cpu)" if pairs.task != "path" else f"ok ({n_check}, CIGARs valid)"


def check_distances(pairs: Pairs, index: np.ndarray, distances: np.ndarray) -> str:
    """Peers' distances against the gpualign CPU backend on up to 200 of their pairs."""
    n_check = min(CHECK_PAIRS, len(index))
    ref = run_cpu_reference(pairs, index[:n_check], "distance")
    bad = int(np.sum(np.asarray(distances[:n_check]) != ref.distance))
    return f"**FAIL** {bad}/{n_check} differ from gpualign" if bad else f"ok ({n_check} vs cpu)"


CHECK_PAIRS = 200


# --------------------------------------------------------------------------------------------
# Engines and timing


def subset_note(n_run: int, n_total: int, extra: str = "") -> str:
    part = ("all pairs" if n_run >= n_total
            else f"subset of {n_run:,} of {n_total:,} pairs (rate only)")
    return f"{part}{'; ' + extra if extra else ''}"


class Bench(BenchBase):
    def order(self, pairs: Pairs) -> np.ndarray:
        return np.random.default_rng(11).permutation(len(pairs))

    # -- engines --

    def gpualign_cuda(self, pairs: Pairs, engine: str = "gpualign-cuda",
                      note: str = "") -> Row:
        if not self.cuda_ok:
            return self.add(Row(pairs.name, engine, note=f"skipped: {self.cuda_why}"))

        def call():
            return gpualign.edit_distance(pairs.qset, pairs.tset, mode=pairs.mode,
                                          task=pairs.task, backend="cuda")

        try:
            times, result = time_gpu(call, self.args.repeats)
        except Exception as exc:  # report and go on with the other rows
            traceback.print_exc()
            return self.add(Row(pairs.name, engine, check="**FAIL** (error)",
                                note=f"error: {type(exc).__name__}: {exc}"[:300]))
        check = check_result(pairs, np.arange(len(pairs)), result)
        note = f"{note}; {gpu_note(times)}" if note else gpu_note(times)
        return self.add(Row(pairs.name, engine, len(pairs), int(pairs.cells.sum()),
                            statistics.median(times), check, note=note))

    def gpualign_cuda_kernels(self, pairs: Pairs) -> Row:
        """The GPU side of a call alone: sequences and pair indices already on the GPU, the
        binning, the kernels (bins side by side on their streams) and the results left on the
        GPU, timed with CUDA events."""
        engine = "gpualign-cuda kernels only"
        if not self.cuda_ok:
            return self.add(Row(pairs.name, engine, note=f"skipped: {self.cuda_why}"))
        import cupy

        from gpualign.codes import edit_mode
        from gpualign.edit import _cuda

        mode = edit_mode(pairs.mode)
        sequences = (*pairs.qset.to_device(), *pairs.tset.to_device())
        index = _cuda.positional_index(0)

        def run():
            (distance, _, _), _ = _cuda.gpu_results(sequences, pairs.qset.alphabet, index,
                                                    len(pairs), mode, -1, False)
            return distance

        distance = run().get()
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        times = []
        for _ in range(self.args.repeats):
            start.record()
            run()
            stop.record()
            stop.synchronize()
            times.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3)
        check = check_distances(pairs, np.arange(len(pairs)), distance)
        return self.add(Row(pairs.name, engine, len(pairs), int(pairs.cells.sum()),
                            statistics.median(times), check,
                            note="inputs and results resident, CUDA events; "
                                 + gpu_note(times)))

    def gpualign_cpu(self, pairs: Pairs) -> Row:
        import numba

        def call(data):
            q, t = data
            return gpualign.edit_distance(q, t, mode=pairs.mode, task=pairs.task,
                                          backend="cpu")

        order = self.order(pairs)
        index, seconds, result = time_cpu(pairs.subset, call, pairs.mean_cells, order,
                                          self.args.cpu_seconds, self.args.cpu_repeats)
        check = "-"
        if "edlib" in self.engines and import_optional("edlib") is not None:
            check = self._check_cpu_with_edlib(pairs, index, result)
        note = subset_note(len(index), len(pairs), f"{numba.get_num_threads()} threads")
        return self.add(Row(pairs.name, "gpualign-cpu (all cores)", len(index),
                            int(pairs.cells[index].sum()), seconds, check, note=note))

    def _check_cpu_with_edlib(self, pairs: Pairs, index: np.ndarray, result) -> str:
        import edlib

        n_check = min(CHECK_PAIRS, len(index))
        qs, ts = pairs.strings(index[:n_check])
        mode = {"global": "NW", "infix": "HW"}[pairs.mode]
        want = np.array([edlib.align(q, t, mode=mode, task="locations")["editDistance"]
                         for q, t in zip(qs, ts, strict=True)])
        got = np.asarray(result.distance)[:n_check]
        problems = []
        if np.any(got != want):
            problems.append(f"{int(np.sum(got != want))}/{n_check} distances differ from edlib")
        if pairs.task == "path":
            wrong = sum(
                cigar_problem(result.cigar[j], pairs.qset.codes_of(int(i)),
                              pairs.tset.codes_of(int(i)), int(result.target_start[j]),
                              int(result.target_end[j]), int(got[j])) is not None
                for j, i in enumerate(index[:n_check]))
            if wrong:
                problems.append(f"{wrong}/{n_check} bad CIGARs")
        if problems:
            return "**FAIL** " + "; ".join(problems)
        return f"ok ({n_check} vs edlib)"

    def edlib(self, pairs: Pairs) -> Row:
        edlib = import_optional("edlib")
        if edlib is None:
            return self.add(Row(pairs.name, "edlib (1 core)", note="skipped: edlib not installed"))
        mode = {"global": "NW", "infix": "HW"}[pairs.mode]
        task = "path" if pairs.task == "path" else "distance"

        def call(data):
            qs, ts = data
            align = edlib.align
            return np.array([align(q, t, mode=mode, task=task)["editDistance"]
                             for q, t in zip(qs, ts, strict=True)], dtype=np.int32)

        order = self.order(pairs)
        index, seconds, result = time_cpu(pairs.strings, call, pairs.mean_cells, order,
                                          self.args.cpu_seconds, self.args.cpu_repeats)
        check = check_distances(pairs, index, result)
        return self.add(Row(pairs.name, "edlib (1 core)", len(index),
                            int(pairs.cells[index].sum()), seconds, check,
                            note=subset_note(len(index), len(pairs), f"task {task}")))

    def rapidfuzz(self, pairs: Pairs) -> Row | None:
        if pairs.mode != "global":
            return None  # rapidfuzz computes global Levenshtein only
        if import_optional("rapidfuzz") is None:
            return self.add(Row(pairs.name, "rapidfuzz (all cores)",
                                note="skipped: rapidfuzz not installed"))
        from rapidfuzz.distance import Levenshtein
        from rapidfuzz.process import cpdist

        def call(data):
            qs, ts = data
            return cpdist(qs, ts, scorer=Levenshtein.distance, workers=-1)

        order = self.order(pairs)
        index, seconds, result = time_cpu(pairs.strings, call, pairs.mean_cells, order,
                                          self.args.cpu_seconds, self.args.cpu_repeats)
        check = check_distances(pairs, index, np.asarray(result))
        return self.add(Row(pairs.name, "rapidfuzz (all cores)", len(index),
                            int(pairs.cells[index].sum()), seconds, check,
                            note=subset_note(len(index), len(pairs), "cpdist, workers=-1")))

    def stringzillas(self, pairs: Pairs) -> Row | None:
        if pairs.mode != "global":
            return None  # global Levenshtein only
        szs = import_optional("stringzillas")
        sz = import_optional("stringzilla")
        if szs is None or sz is None:
            return None  # not installed: no row (it is optional)
        name = "stringzillas-cuda"
        try:
            if "cuda" not in getattr(szs, "__capabilities__", ()):
                return self.add(Row(pairs.name, name, note="skipped: built without CUDA"))
            scope = szs.DeviceScope(gpu_device=0)
            engine = szs.LevenshteinDistances(capabilities=scope)
            # StringZillas returns the cross-product matrix of two collections, not paired
            # distances: time a square block of the same sequences (every cell of it is
            # computed and counted) and check its diagonal, which holds the real pairs.
            side = max(1, int(np.sqrt(len(pairs))))
            qs, ts = pairs.strings(np.arange(side))
            a, b = sz.Strs(qs), sz.Strs(ts)
            times, result = time_gpu(lambda: engine(a, b, device=scope), self.args.repeats)
        except Exception as exc:
            traceback.print_exc()
            return self.add(Row(pairs.name, name, note=f"error: {type(exc).__name__}: {exc}"[:300]))
        check = check_distances(pairs, np.arange(side), np.asarray(result).diagonal())
        cells = int(pairs.qset.lengths[:side].sum()) * int(pairs.tset.lengths[:side].sum())
        note = (f"cross-product of the first {side} queries x {side} targets ({side * side:,} "
                "pairs; this version returns matrices only), diagonal checked; "
                + gpu_note(times))
        return self.add(Row(pairs.name, name, side * side, cells, statistics.median(times),
                            check, note=note))

    # -- workloads --

    def run_pairs(self, pairs: Pairs) -> None:
        self.sources[pairs.name] = pairs.source
        log(f"{pairs.name}: {len(pairs):,} pairs, {int(pairs.cells.sum()):.3e} cells, mode "
            f"{pairs.mode}, task {pairs.task}; {pairs.source}")
        if "cuda" in self.engines:
            self.gpualign_cuda(pairs)
            if pairs.task == "distance":
                self.gpualign_cuda_kernels(pairs)
        if "stringzillas" in self.engines:
            self.stringzillas(pairs)
        if "cpu" in self.engines:
            self.gpualign_cpu(pairs)
        if "edlib" in self.engines:
            self.edlib(pairs)
        if "rapidfuzz" in self.engines:
            self.rapidfuzz(pairs)

    def kernel_choice(self, data: Data, n: int) -> None:
        from gpualign import config

        for q_len, choices in KERNEL_CHOICES.items():
            if "cuda" not in self.engines:
                continue
            if not self.cuda_ok:  # CUDA only: do not even build the pairs
                self.add(Row(f"kernel-choice-{q_len}", "gpualign-cuda",
                             note=f"skipped: {self.cuda_why}"))
                continue
            pairs = data.kernel_choice(n, q_len)
            self.sources[pairs.name] = pairs.source
            words = -(-q_len // 32)
            log(f"{pairs.name}: {len(pairs):,} pairs, {words} words per query; {pairs.source}")
            shipped = config.EDIT_KERNEL_BINS
            first = len(self.rows)
            for bins in choices:
                if bins is None:
                    chosen = next((b for b in shipped if b[0] >= words), shipped[-1])
                    label = "gpualign-cuda shipped bins"
                    note = f"EDIT_KERNEL_BINS as shipped: {words} words -> {chosen}"
                else:
                    [(_, lanes, per_lane)] = bins
                    kind = "task-parallel" if lanes == 1 else "thread-cooperative"
                    label = f"gpualign-cuda {kind} {lanes}x{per_lane}"
                    note = f"EDIT_KERNEL_BINS={bins}"
                with config.override(EDIT_KERNEL_BINS=bins or shipped):
                    self.gpualign_cuda(pairs, label, note)
            ran = [r for r in self.rows[first:] if r.ran and "FAIL" not in r.check]
            if ran:
                best = max(ran, key=lambda r: r.gcups)
                best.note += " <- fastest"

    def run(self) -> None:
        args = self.args
        data = Data(args.data_dir, args.examples_dir, args.seed)
        for name in args.only:
            n = max(2, round(BASE_PAIRS[name] * args.scale))
            t0 = time.perf_counter()
            if name == "infix-reads":
                pairs = data.infix(name, n, "distance")
            elif name == "infix-path":
                pairs = data.infix(name, n, "path")
            elif name == "global-1k":
                pairs = data.global_1k(n)
            elif name == "global-10k":
                pairs = data.global_10k(n)
            else:
                self.kernel_choice(data, n)
                continue
            log(f"  (built in {time.perf_counter() - t0:.1f} s)")
            self.run_pairs(pairs)
        self.judge()

    # -- targets --

    def judge(self) -> None:
        def find(workload: str, engine: str) -> Row | None:
            for row in self.rows:
                if row.workload == workload and row.engine == engine and row.ran:
                    return row
            return None

        for row in self.rows:
            if not row.ran:
                continue
            if row.engine == "gpualign-cuda" and row.workload in CUDA_TARGET_TCUPS:
                goal = CUDA_TARGET_TCUPS[row.workload]
                tcups = row.gcups / 1e3
                row.target = (f">= {goal:g} TCUPS: {'met' if tcups >= goal else 'MISSED'} "
                              f"({tcups / goal:.0%})")
            if row.workload == "infix-path":
                base = find("infix-reads", row.engine)
                if base is None:
                    ratio = "run infix-reads too for the ratio"
                else:
                    share = row.gcups / base.gcups
                    ratio = f"{share:.0%} of infix-reads rate"
                    if row.engine == "gpualign-cuda":
                        verdict = "met" if share >= PATH_TARGET_RATIO else "MISSED"
                        ratio = (f">= {PATH_TARGET_RATIO:.0%} of distance rate: {verdict} "
                                 f"({share:.0%})")
                row.target = ratio if row.target == "-" else f"{row.target}; {ratio}"
            if row.engine.startswith("gpualign-cpu"):
                peer = find(row.workload, "edlib (1 core)")
                if peer is not None:
                    share = row.gcups / peer.gcups
                    verdict = (f">= {CPU_TARGET_RATIO:.0%} of edlib 1-core: "
                               f"{'met' if share >= CPU_TARGET_RATIO else 'MISSED'} "
                               f"({share:.0%})")
                    row.target = verdict if row.target == "-" else f"{verdict}; {row.target}"


# --------------------------------------------------------------------------------------------
# Report


def method(bench: Bench) -> str:
    return (
        "Cells are m*n per pair (query length times target length), summed over the pairs run. "
        "GPU rows run every pair: warm-up calls for 0.5 s, then the median of "
        f"{bench.args.repeats} calls, the device synchronized before each clock read; the call "
        "starts from encoded SequenceSets and returns host NumPy arrays. CPU rows run a random "
        f"subset sized to take about {bench.args.cpu_seconds:g} s per call (median of "
        f"{bench.args.cpu_repeats}); their rate extrapolates, their seconds do not. 'check' "
        f"compares up to {CHECK_PAIRS} pairs with the gpualign CPU backend (and that with "
        "edlib); for task path the CIGARs are also replayed against the sequences.")


def check_data(data_dir: Path) -> int:
    """Say which real data files the benchmark would read from ``data_dir``; 2 if any is missing."""
    missing = 0
    for key, names in FILES.items():
        path = next((data_dir / n for n in names if (data_dir / n).is_file()), None)
        if path is None:
            missing += 1
        print(f"{key:<6} {path if path else 'MISSING (' + ' or '.join(names) + ')'}")
    if missing:
        print(f"{missing} data file(s) missing in {data_dir}: create them with "
              "`bash scripts/fetch-data.sh` (needs apt-get and the internet; data/ is git-ignored,"
              " so carry it to a GPU host). Without them the benchmark falls back to examples/ or"
              " synthetic sequences and says so in its Data section.")
        return 2
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = base_parser(__doc__, WORKLOADS, ENGINES)
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply every workload's pair count (default 1.0)")
    parser.add_argument("--examples-dir", type=Path, default=ROOT / "examples")
    parser.add_argument("--check-data", action="store_true",
                        help="list the real data files found in --data-dir and exit (2: missing)")
    args = parse(parser, argv, WORKLOADS, ENGINES)
    if args.scale <= 0:
        parser.error("--scale must be > 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.check_data:
        return check_data(args.data_dir)
    return run_benchmark("edit", "gpualign edit-distance benchmark", args, argv,
                         lambda: Bench(args), method)


if __name__ == "__main__":
    sys.exit(main())
