#!/usr/bin/env python3
"""One-to-many LCS throughput of gpualign beside rapidfuzz, on the same subjects, in one run.

Prints a Markdown table (GCUPS/TCUPS counting query length times subject length per subject)
and writes it, with device, commit, date and versions, to
``benchmarks/results/lcs-<device>-<date>.md``.

    python benchmarks/bench_lcs.py                                # full sizes (a GPU host)
    python benchmarks/bench_lcs.py --subjects 2000 --real-residues 2e6 --no-save  # CPU smoke

Workloads (``--only``):

- ``paper``: the shape of Ozsoy et al.: one random query of 4,096 symbols (alphabet 4) against
  720,000 random subjects of 4,096. Rows: the CUDA kernels alone (subjects resident on the GPU),
  ``lcs_top`` end to end from the same subjects in host memory (with and without the LCS
  strings), the CPU backend and rapidfuzz on a subset.
- ``alphabets``: the kernels alone on the same shape with alphabets of 4 (DNA), 20 (protein)
  and 26 (bytes, A-Z) symbols: the rate must not depend on the alphabet.
- ``real-16s`` / ``real-protein``: a real 16S gene (RDP core set) or UniProt protein (MMseqs2
  examples) against the real collection, repeated to ``--real-residues`` symbols; plus
  ``lcs_top`` streaming the original gzipped FASTA file.
- ``multi-gpu``: ``lcs_top`` of the paper shape on 1..N GPUs (when more than one is present).

GPU rows: warm-up calls for 0.5 s, then the median of ``--repeats`` calls, the device synchronized
before each clock read. CPU rows run a prefix of the subjects sized to take about
``--cpu-seconds`` per call; their rate extrapolates, their seconds do not.
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import statistics
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path

import dnaio
import numba
import numpy as np
from _common import (
    BenchBase,
    Row,
    base_parser,
    gpu_note,
    import_optional,
    log,
    parse,
    run_benchmark,
    time_cpu,
    time_gpu,
)
from _gaps import strip_gaps

import gpualign
from gpualign import SequenceSet
from gpualign.sequences import get_alphabet

WORKLOADS = ("paper", "alphabets", "real-16s", "real-protein", "multi-gpu")
ENGINES = ("cuda", "cpu", "rapidfuzz")
# Issue 3's targets on one H100.
KERNEL_TARGET_TCUPS = 50.0
END_TO_END_TARGET_RATIO = 0.90
ALPHABET_SPREAD_TARGET = 0.05
TOP_N = 10
CHECK_SUBJECTS = 300
# Real data, as scripts/fetch-data.sh names it, in --data-dir.
FILES = {"16s": "core_rdp.fasta.gz", "16s-queries": "rdp_set1000.fasta.gz",
         "proteins": "uniprot_db.fasta.gz", "protein-queries": "uniprot_queries.fasta.gz"}
# Symbols of the random subjects of each alphabet size (codes of the named alphabet).
RANDOM_ALPHABETS = {4: ("dna", b"ACGT"), 20: ("protein", b"ACDEFGHIKLMNPQRSTVWY"),
                    26: ("bytes", b"ABCDEFGHIJKLMNOPQRSTUVWXYZ")}


@dataclass
class Workload:
    name: str
    alphabet: str
    query: np.ndarray  # codes
    subjects: SequenceSet
    source: str
    file: Path | None = None  # the real collection as a file, streamed by one row
    file_subjects: int = 0  # how many leading subjects of ``subjects`` the file holds
    pinned: SequenceSet | None = None  # ``subjects`` in page-locked memory, made when needed

    @property
    def query_text(self) -> str:
        return get_alphabet(self.alphabet).decode(self.query)

    @property
    def cells(self) -> int:
        return len(self.query) * len(self.subjects.codes)

    def label(self) -> str:
        residues = len(self.subjects.codes)
        return (f"{self.name}: query {len(self.query):,} vs {len(self.subjects):,} subjects "
                f"({residues:,} symbols, {self.cells:.3e} cells), alphabet {self.alphabet}; "
                f"{self.source}")


def random_set(rng: np.random.Generator, sigma: int, count: int, length: int
               ) -> tuple[np.ndarray, SequenceSet]:
    """A random query and ``count`` random subjects of ``length`` over ``sigma`` symbols."""
    name, symbols = RANDOM_ALPHABETS[sigma]
    lookup = get_alphabet(name).lookup
    codes_of = np.array([lookup[s] for s in symbols], dtype=np.uint8)
    query = codes_of[rng.integers(0, sigma, length)]
    codes = rng.integers(0, sigma, count * length, dtype=np.uint8)
    np.take(codes_of, codes, out=codes)
    offsets = np.arange(0, count * length + 1, length, dtype=np.int64)
    return query, SequenceSet(codes, offsets, [f"s{i}" for i in range(count)], name)


def repeated(base: SequenceSet, residues: float) -> SequenceSet:
    """``base`` repeated until it holds at least ``residues`` symbols (at least once)."""
    copies = max(1, int(np.ceil(residues / max(len(base.codes), 1))))
    codes = np.tile(base.codes, copies)
    step = base.offsets[-1]
    offsets = np.concatenate([base.offsets[:-1] + k * step for k in range(copies)]
                             + [np.array([copies * step], dtype=np.int64)])
    return SequenceSet(codes, offsets, base.names * copies, base.alphabet)


def stand_ins(text: str, wildcard: str, replacement: str) -> str:
    """For rapidfuzz: gpualign's DNA wildcard N matches nothing, not even N; rapidfuzz's does.
    Giving the query's and the subjects' N different symbols makes the two agree."""
    return text.replace(wildcard, replacement) if wildcard else text


# --------------------------------------------------------------------------------------------
# The benchmark


class Bench(BenchBase):
    def __init__(self, args: argparse.Namespace):
        super().__init__(args)
        self.rng = np.random.default_rng(args.seed)
        self.tmp = Path(tempfile.mkdtemp(prefix="bench-lcs-"))

    # --- engines ------------------------------------------------------------------------------

    def kernel(self, work: Workload, row_name: str | None = None) -> np.ndarray | None:
        """The kernels alone on subjects resident on the GPU; returns the lengths."""
        engine = "gpualign-cuda kernels only"
        name = row_name or work.name
        if not self.cuda_ok or "cuda" not in self.engines:
            self.add(Row(name, engine, note=f"skipped: {self.cuda_why or 'not selected'}"))
            return None
        from gpualign.lcs import _cuda

        alphabet = get_alphabet(work.alphabet)
        times, lengths = time_gpu(
            lambda: _cuda.resident_lengths([work.query], alphabet, work.subjects),
            self.args.repeats)
        lengths = lengths[0]
        check = self.check_against_cpu(work, lengths)
        work.subjects.release_device()  # GPU memory back for the next rows
        self.add(Row(name, engine, len(work.subjects), work.cells, statistics.median(times),
                     check, note="subjects resident on the GPU; " + gpu_note(times)))
        return lengths

    def end_to_end(self, work: Workload, lengths: np.ndarray | None, with_lcs: bool,
                   pinned: bool = False, devices: list[int] | None = None,
                   row_name: str | None = None) -> Row:
        """``lcs_top`` from a SequenceSet in host memory: every batch streamed to the GPU,
        straight from the set when it is pinned (``SequenceSet.pin_memory``), else staged."""
        engine = (f"gpualign-cuda lcs_top, n={TOP_N}" + (", LCS strings" if with_lcs else "")
                  + (", pinned set" if pinned else ", pageable set")
                  + (f", devices={devices}" if devices else ""))
        name = row_name or work.name
        if not self.cuda_ok or "cuda" not in self.engines:
            return self.add(Row(name, engine, note=f"skipped: {self.cuda_why or 'not selected'}"))
        if pinned and work.pinned is None:
            work.pinned = work.subjects.pin_memory()
        subjects = work.pinned if pinned else work.subjects
        query = work.query_text
        times, top = time_gpu(
            lambda: gpualign.lcs_top(query, subjects, TOP_N, with_lcs=with_lcs,
                                     alphabet=work.alphabet, backend="cuda", devices=devices),
            self.args.repeats)
        check = self.check_top(work, top, lengths, with_lcs)
        where = "pinned host memory" if pinned else "pageable host memory, staged"
        return self.add(Row(name, engine, len(work.subjects), work.cells,
                            statistics.median(times), check,
                            note=f"subjects in {where}; " + gpu_note(times)))

    def from_file(self, work: Workload, lengths: np.ndarray | None) -> Row:
        """``lcs_top`` streaming the original (gzipped) FASTA file: read, encode, compute."""
        engine = f"gpualign-cuda lcs_top, n={TOP_N}, LCS strings, from a FASTA.gz file"
        if not self.cuda_ok or "cuda" not in self.engines:
            return self.add(Row(work.name, engine,
                                note=f"skipped: {self.cuda_why or 'not selected'}"))
        query = work.query_text
        times, top = time_gpu(
            lambda: gpualign.lcs_top(query, work.file, TOP_N, alphabet=work.alphabet,
                                     invalid="wildcard", backend="cuda"),
            self.args.repeats)
        count = work.file_subjects
        cells = len(work.query) * int(work.subjects.offsets[count])
        check = self.check_top(work, top, None if lengths is None else lengths[:count], True)
        return self.add(Row(work.name, engine, count, cells, statistics.median(times), check,
                            note="gzip decompression, parsing and encoding included; "
                                 + gpu_note(times)))

    def cpu(self, work: Workload) -> np.ndarray | None:
        engine = "gpualign-cpu (all cores)"
        if "cpu" not in self.engines:
            return None
        query = work.query_text
        order = np.arange(len(work.subjects))
        mean_cells = work.cells / max(len(work.subjects), 1)

        def call(subset: SequenceSet) -> np.ndarray:
            return gpualign.lcs_length(query, subset, alphabet=work.alphabet, backend="cpu")

        index, seconds, lengths = time_cpu(lambda i: work.subjects.take(i), call, mean_cells,
                                           order, self.args.cpu_seconds, self.args.cpu_repeats)
        cells = len(work.query) * int(work.subjects.lengths[index].sum())
        self.add(Row(work.name, engine, len(index), cells, seconds,
                     note=f"first {len(index):,} subjects (rate only); "
                          f"{numba.get_num_threads()} threads"))
        return lengths

    def rapidfuzz(self, work: Workload, cpu_lengths: np.ndarray | None) -> Row | None:
        engine = "rapidfuzz (all cores)"
        if "rapidfuzz" not in self.engines:
            return None
        process = import_optional("rapidfuzz.process")
        if process is None:
            return self.add(Row(work.name, engine, note="skipped: rapidfuzz not installed"))
        from rapidfuzz.distance import LCSseq

        alphabet = get_alphabet(work.alphabet)
        wildcard = "N" if work.alphabet == "dna" else ""
        query = stand_ins(work.query_text, wildcard, "!")
        order = np.arange(len(work.subjects))
        mean_cells = work.cells / max(len(work.subjects), 1)

        def strings(index: np.ndarray) -> list[str]:
            return [stand_ins(alphabet.decode(work.subjects.codes[
                work.subjects.offsets[i]:work.subjects.offsets[i + 1]]), wildcard, "?")
                for i in index]

        def call(subjects: list[str]) -> np.ndarray:
            return process.cdist([query], subjects, scorer=LCSseq.similarity, workers=-1,
                                 dtype=np.int32)[0]

        index, seconds, lengths = time_cpu(strings, call, mean_cells, order,
                                           self.args.cpu_seconds, self.args.cpu_repeats)
        check = "-"
        if cpu_lengths is not None:
            both = min(len(index), len(cpu_lengths))
            bad = int((lengths[:both] != cpu_lengths[:both]).sum())
            check = f"ok ({both} vs cpu)" if not bad else f"**FAIL** ({bad}/{both} vs cpu)"
        cells = len(work.query) * int(work.subjects.lengths[index].sum())
        return self.add(Row(work.name, engine, len(index), cells, seconds, check,
                            note=f"first {len(index):,} subjects (rate only); process.cdist, "
                                 "LCSseq.similarity, workers=-1"))

    # --- checks -------------------------------------------------------------------------------

    def check_against_cpu(self, work: Workload, lengths: np.ndarray) -> str:
        """GPU lengths of a random sample of subjects against the CPU backend."""
        pick = np.sort(self.rng.choice(len(work.subjects), min(CHECK_SUBJECTS,
                                                               len(work.subjects)), False))
        want = gpualign.lcs_length(work.query_text, work.subjects.take(pick),
                                   alphabet=work.alphabet, backend="cpu")
        bad = int((lengths[pick] != want).sum())
        return f"ok ({len(pick)} vs cpu)" if not bad else f"**FAIL** ({bad}/{len(pick)} vs cpu)"

    def check_top(self, work: Workload, top, lengths: np.ndarray | None, with_lcs: bool) -> str:
        """The top-N against the kernels' lengths (longest first, then lower index), and each
        LCS string a common subsequence of the reported length."""
        problems = []
        if lengths is not None:
            want = np.lexsort((np.arange(len(lengths)), -lengths))[:TOP_N]
            if top.index.tolist() != want.tolist() or top.length.tolist() != \
                    lengths[want].tolist():
                problems.append("top differs from the kernels' lengths")
        if with_lcs:
            query = work.query_text
            for i, lcs, length in zip(top.index, top.lcs, top.length, strict=True):
                subject = work.subjects[int(i)]
                if len(lcs) != length or not (is_subsequence(lcs, query)
                                              and is_subsequence(lcs, subject)):
                    problems.append(f"LCS string of subject {i} is wrong")
        if problems:
            return "**FAIL** (" + "; ".join(problems) + ")"
        return "ok (top vs kernels" + (", strings" if with_lcs else "") + ")"

    # --- workloads ----------------------------------------------------------------------------

    def paper(self) -> Workload:
        args = self.args
        query, subjects = random_set(self.rng, 4, args.subjects, args.length)
        return Workload("paper", "dna", query, subjects,
                        "random (uniform ACGT), seed " + str(args.seed))

    def run_paper(self) -> None:
        work = self.paper()
        self.sources[work.name] = work.label()
        log(work.label())
        lengths = self.kernel(work)
        for pinned in (True, False):
            for with_lcs in (False, True):
                self.judge_end_to_end(self.end_to_end(work, lengths, with_lcs, pinned))
        work.pinned = None
        cpu_lengths = self.cpu(work)
        self.rapidfuzz(work, cpu_lengths)

    def judge_end_to_end(self, row: Row) -> None:
        """The end-to-end rate as a share of the kernels-only rate; the issue's targets apply
        to the paper's shape (elsewhere the share is reported without a verdict)."""
        kernel = next((r for r in self.rows if r.workload == row.workload
                       and r.engine == "gpualign-cuda kernels only" and r.ran), None)
        if kernel is None or not row.ran:
            return
        ratio = row.gcups / kernel.gcups
        if row.workload != "paper":
            row.target = f"{ratio:.0%} of kernels only"
            return
        verdict = "met" if ratio >= END_TO_END_TARGET_RATIO else "**missed**"
        row.target = f">= {END_TO_END_TARGET_RATIO:.0%} of kernels only: {verdict} ({ratio:.0%})"
        if kernel.target == "-":
            met = kernel.gcups / 1e3 >= KERNEL_TARGET_TCUPS
            kernel.target = (f">= {KERNEL_TARGET_TCUPS:g} TCUPS: "
                             + ("met" if met else "**missed**"))

    def run_alphabets(self) -> None:
        rows = []
        for sigma in RANDOM_ALPHABETS:
            query, subjects = random_set(self.rng, sigma, self.args.subjects, self.args.length)
            work = Workload(f"alphabet-{sigma}", subjects.alphabet.name, query, subjects,
                            f"random (uniform over {sigma} symbols)")
            self.sources[work.name] = work.label()
            log(work.label())
            self.kernel(work)
            rows.append(self.rows[-1])
            del work, subjects
        ran = [r for r in rows if r.ran]
        if len(ran) == len(rows) and ran:
            rates = [r.gcups for r in ran]
            spread = max(rates) / min(rates) - 1
            verdict = "met" if spread <= ALPHABET_SPREAD_TARGET else "**missed**"
            for r in ran:
                r.target = (f"alphabets within {ALPHABET_SPREAD_TARGET:.0%}: {verdict} "
                            f"(spread {spread:.1%})")

    def real(self, kind: str) -> Workload | None:
        data = self.args.data_dir
        if kind == "16s":
            path, alphabet = data / FILES["16s"], "dna"
        else:
            path, alphabet = data / FILES["proteins"], "protein"
        if not path.is_file():
            self.add(Row(f"real-{kind}", "-", note=f"skipped: {path} missing "
                                                   "(bash scripts/fetch-data.sh)"))
            return None
        base = read_collection(path, alphabet)
        # A query from a companion file (not a member of the collection), of a typical length:
        # a full-length 16S gene (~1,500 bp) or a protein of ~1,000 aa.
        queries_path, typical = ((data / FILES["16s-queries"], 1500) if kind == "16s"
                                 else (data / FILES["protein-queries"], 1000))
        queries = read_collection(queries_path, alphabet) if queries_path.is_file() else base
        pick = int(np.argmin(np.abs(queries.lengths - typical)))
        query = queries.codes_of(pick)
        query_source = (f"record {queries.names[pick]!r} of "
                        f"{queries_path.name if queries is not base else path.name}")
        # The file the streaming row reads: the collection as read here (alignment gaps
        # removed), written back as gzipped FASTA.
        streamed = self.tmp / f"{kind}.fasta.gz"
        with gzip.open(streamed, "wt", compresslevel=1) as out:
            for number, name in enumerate(base.names):
                out.write(f">{name}\n{base[number]}\n")
        subjects = repeated(base, self.args.real_residues)
        copies = len(subjects) // len(base)
        source = (f"real: {path.name} ({len(base):,} records, {len(base.codes):,} symbols; "
                  "alignment gaps removed, other non-" + alphabet + " symbols read as the "
                  f"wildcard) repeated {copies} times; query: {query_source}")
        return Workload(f"real-{kind}", alphabet, query.copy(), subjects, source, streamed,
                        len(base))

    def run_real(self, kind: str) -> None:
        work = self.real(kind)
        if work is None:
            return
        self.sources[work.name] = work.label()
        log(work.label())
        lengths = self.kernel(work)
        for pinned in (True, False):
            self.judge_end_to_end(self.end_to_end(work, lengths, True, pinned))
        work.pinned = None
        self.from_file(work, lengths)
        cpu_lengths = self.cpu(work)
        self.rapidfuzz(work, cpu_lengths)

    def run_multi_gpu(self) -> None:
        if not self.cuda_ok or "cuda" not in self.engines:
            self.add(Row("multi-gpu", "gpualign-cuda", note="skipped: no CUDA"))
            return
        import cupy

        count = cupy.cuda.runtime.getDeviceCount()
        if count < 2:
            self.add(Row("multi-gpu", "gpualign-cuda lcs_top", note=f"skipped: {count} GPU"))
            return
        work = self.paper()
        self.sources["multi-gpu"] = "the paper workload, with devices=[0..k-1]"
        rows = [self.end_to_end(work, None, True, True, list(range(k)), "multi-gpu")
                for k in range(1, count + 1)]
        for k, row in enumerate(rows, 1):
            if row.ran and rows[0].ran:
                row.target = f"scaling {row.gcups / rows[0].gcups:.2f}x on {k} GPUs"

    def run(self) -> None:
        try:
            self._run()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def _run(self) -> None:
        for name in self.args.only:
            log(f"== {name}")
            try:
                {"paper": self.run_paper, "alphabets": self.run_alphabets,
                 "real-16s": lambda: self.run_real("16s"),
                 "real-protein": lambda: self.run_real("protein"),
                 "multi-gpu": self.run_multi_gpu}[name]()
            except Exception as exc:  # a broken workload must not hide the others' rows
                traceback.print_exc()
                self.add(Row(name, "-", check="**FAIL** (error)",
                             note=f"error: {type(exc).__name__}: {exc}"[:300]))


def read_collection(path: Path, alphabet: str) -> SequenceSet:
    """A FASTA file as a SequenceSet: names cut at the first space, alignment gaps (``-``,
    ``.``: the RDP files are aligned) removed, symbols outside the alphabet read as its
    wildcard."""
    names, sequences = [], []
    with dnaio.open(path) as reader:
        for record in reader:
            names.append(record.name.split(maxsplit=1)[0] if record.name else "")
            sequences.append(strip_gaps(record.sequence))
    return SequenceSet.from_sequences(sequences, alphabet, names=names, invalid="wildcard")


def is_subsequence(needle: str, haystack: str) -> bool:
    it = iter(haystack)
    return all(symbol in it for symbol in needle)


# --------------------------------------------------------------------------------------------
# Report


def method(bench: Bench) -> str:
    return (
        "Cells are query length times subject length, summed over the subjects run; 'pairs' "
        "counts subjects. GPU rows run every subject: warm-up calls for 0.5 s, then the median of "
        f"{bench.args.repeats} calls, the device synchronized before each clock read. "
        "'kernels only' starts from subjects already on the GPU and ends with the lengths on "
        "the host; 'lcs_top' rows start from a SequenceSet in host memory (or the FASTA file) "
        f"and end with the top {TOP_N} (and their LCS strings): batches are copied from the "
        "set itself when it is pinned (SequenceSet.pin_memory, done once before the timed "
        "calls) or staged through pinned buffers, and copied and computed on several CUDA "
        "streams while the CPU merges the top-N. "
        f"CPU rows run the first subjects, sized to about {bench.args.cpu_seconds:g} s per "
        f"call (median of {bench.args.cpu_repeats}). 'check': GPU lengths of {CHECK_SUBJECTS} "
        "random subjects against the CPU backend; top-N against the kernels' lengths and each "
        "LCS string checked to be a common subsequence of its length; rapidfuzz against the "
        "CPU backend (N given distinct stand-ins on each side, since gpualign's N matches "
        "nothing).")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = base_parser(__doc__, WORKLOADS, ENGINES)
    parser.add_argument("--subjects", type=int, default=720_000,
                        help="random subjects of the paper and alphabet workloads (720,000)")
    parser.add_argument("--length", type=int, default=4096,
                        help="query and subject length of those workloads (4,096)")
    parser.add_argument("--real-residues", type=float, default=1e9,
                        help="symbols of the repeated real collections (1e9)")
    args = parse(parser, argv, WORKLOADS, ENGINES)
    if args.subjects < 1 or args.length < 1:
        parser.error("--subjects and --length must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return run_benchmark("lcs", "gpualign LCS benchmark (one query against many subjects)",
                         args, argv, lambda: Bench(args), method)


if __name__ == "__main__":
    sys.exit(main())
