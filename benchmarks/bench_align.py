#!/usr/bin/env python3
"""Pairwise alignment throughput of gpualign beside parasail, on the same pairs, in one run.

Prints a Markdown table (GCUPS/TCUPS counting query length times target length per pair) and
writes it, with device, commit, date and versions, to
``benchmarks/results/align-<device>-<date>.md``.

    python benchmarks/bench_align.py                              # full sizes
    python benchmarks/bench_align.py --pairs 200 --cpu-seconds 0.3 --no-save   # smoke run

Workloads (``--only``), from issue 4:

- ``nw-16s``: Needleman-Wunsch, DNA +2/-3, linear gaps (3/3), score; neighbouring genes of the
  RDP 16S core set (~1.5 kb).
- ``sw-16s``: Smith-Waterman, DNA +2/-3, affine gaps 5/2, score; the same pairs.
- ``sw-protein``: Smith-Waterman, BLOSUM62, gaps 11/1, score; neighbouring UniProt proteins.
- ``path-16s``: semi-global, DNA +2/-3, gaps 5/2, task path (CIGARs); the 16S pairs.

Engines: ``gpualign-cpu`` (all cores: parasail's SIMD kernels for scores, the Numba DP for
paths), ``parasail`` on one core (striped 16-bit, the reference the issue's CPU target uses),
and, when a GPU is present, ``gpualign-cuda`` (scores; every record of the file against its
next records, enough pairs to fill the GPU; paths are checked against the CPU traceback, CIGAR
for CIGAR) and StringZillas-CUDA (NW/SW scores).
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass
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
    shown,
    time_cpu,
    time_gpu,
)
from _gaps import strip_gaps

import gpualign
from gpualign import Scoring, SequenceSet

WORKLOADS = ("nw-16s", "sw-16s", "sw-protein", "path-16s")
ENGINES = ("cuda", "cpu", "parasail", "stringzillas")
CPU_TARGET_RATIO = 0.50  # gpualign-cpu >= 50% of parasail's single-core rate
CHECK_PAIRS = 200
# Each collection in --data-dir (as scripts/fetch-data.sh names it), else the excerpt of the tests.
FILES = {"16s": ("core_rdp.fasta.gz", "rdp16s_200.fasta.gz"),
         "protein": ("uniprot_db.fasta.gz", "uniprot_200.fasta.gz")}
SETUPS = {  # workload: (data, mode, scoring, task, parasail function)
    "nw-16s": ("16s", "global", Scoring(match=2, mismatch=-3, gap_open=3, gap_extend=3),
               "score", "nw_scan_16"),
    "sw-16s": ("16s", "local", Scoring(match=2, mismatch=-3, gap_open=5, gap_extend=2),
               "score", "sw_striped_16"),
    "sw-protein": ("protein", "local", Scoring.matrix("BLOSUM62", gap_open=11, gap_extend=1),
                   "score", "sw_striped_16"),
    "path-16s": ("16s", "semi-global", Scoring(match=2, mismatch=-3, gap_open=5, gap_extend=2),
                 "path", "sg_dx_trace_striped_16"),
}


#: TCUPS targets of issue 4 on one H100.
GPU_TARGETS = {"nw-16s": 4.0, "sw-16s": 3.0, "sw-protein": 2.0, "path-16s": 0.5}


def data_file(kind: str, data_dir: Path) -> Path:
    """The ``kind`` collection in ``data_dir``, else the excerpt of it in tests/data/."""
    real, excerpt = FILES[kind]
    return data_dir / real if (data_dir / real).is_file() else ROOT / "tests" / "data" / excerpt


def window_pairs(kind: str, cells: float, data_dir: Path
                 ) -> tuple[SequenceSet, np.ndarray, np.ndarray, str]:
    """Every record of the collection against its next ``w`` records, ``w`` chosen so that
    the pairs hold about ``cells`` DP cells: enough pairs to fill a GPU (one per thread)."""
    path = data_file(kind, data_dir)
    alphabet = "dna" if kind == "16s" else "protein"
    sequences = [strip_gaps(sequence) for _, sequence in gpualign.io.read_records(path)]
    everything = SequenceSet.from_sequences(sequences, alphabet, invalid="wildcard")
    count = len(everything)
    mean_cells = float(np.mean(everything.lengths.astype(np.float64)) ** 2)
    width = int(np.clip(cells / max(mean_cells * count, 1.0), 1, count - 1))
    first = np.concatenate([np.arange(count - d) for d in range(1, width + 1)])
    second = np.concatenate([np.arange(d, count) for d in range(1, width + 1)])
    source = (f"{shown(path)}: all {count:,} records, each against its next "
              f"{width} ({len(first):,} pairs)")
    return everything, first.astype(np.int64), second.astype(np.int64), source


@dataclass
class Pairs:
    name: str
    alphabet: str
    queries: SequenceSet
    targets: SequenceSet
    source: str

    @property
    def cells(self) -> np.ndarray:
        return self.queries.lengths * self.targets.lengths

    def subset(self, index: np.ndarray) -> tuple[SequenceSet, SequenceSet]:
        return self.queries.take(index), self.targets.take(index)


def read_pairs(kind: str, count: int, data_dir: Path) -> Pairs:
    """Neighbouring records of the real collection as pairs (record 2k with 2k+1)."""
    path = data_file(kind, data_dir)
    alphabet = "dna" if kind == "16s" else "protein"
    names, sequences = [], []
    for name, sequence in gpualign.io.read_records(path):
        names.append(name)
        sequences.append(strip_gaps(sequence))  # RDP files are aligned
        if len(sequences) == 2 * count:
            break
    found = len(sequences) // 2
    sets = [SequenceSet.from_sequences(sequences[k::2][:found], alphabet,
                                       names=names[k::2][:found], invalid="wildcard")
            for k in (0, 1)]
    source = (f"{shown(path)}: {found:,} pairs of neighbouring records (alignment "
              "gaps removed, other symbols outside the alphabet read as the wildcard)")
    return Pairs(kind, alphabet, sets[0], sets[1], source)


class Bench(BenchBase):
    def __init__(self, args):
        super().__init__(args)
        self.data: dict[str, Pairs] = {}

    def run(self) -> None:
        for name in self.args.only:
            kind, mode, scoring, task, peer = SETUPS[name]
            if kind not in self.data:
                self.data[kind] = read_pairs(kind, self.args.pairs, self.args.data_dir)
            pairs = self.data[kind]
            self.sources[name] = (f"{pairs.source}; mode {mode}, {scoring.describe()}, "
                                  f"task {task}")
            log(f"== {name}: {self.sources[name]}")
            reference = gpualign.align(*pairs.subset(np.arange(min(CHECK_PAIRS, len(
                pairs.queries)))), mode=mode, scoring=scoring, task="end",
                alphabet=pairs.alphabet, backend="cpu").score
            if "cuda" in self.engines:
                self.cuda(name, kind, mode, scoring, task)
            cpu = self.cpu(name, pairs, mode, scoring, task, reference) \
                if "cpu" in self.engines else None
            one_core = self.parasail(name, pairs, mode, scoring, peer, reference) \
                if "parasail" in self.engines else None
            if cpu is not None and one_core is not None and cpu.ran and one_core.ran:
                ratio = cpu.gcups / one_core.gcups
                verdict = "met" if ratio >= CPU_TARGET_RATIO else "**missed**"
                cpu.target = f">= 50% of parasail 1-core: {verdict} ({ratio:.0%})"
            if "stringzillas" in self.engines and mode in ("global", "local"):
                self.stringzillas(name, pairs, mode, scoring, reference)

    def cuda(self, name, kind, mode, scoring, task) -> Row:
        engine = "gpualign-cuda"
        if not self.cuda_ok:
            return self.add(Row(name, engine, note=f"skipped: {self.cuda_why}"))
        everything, q_index, t_index, source = window_pairs(kind, self.args.gpu_cells,
                                                            self.args.data_dir)
        self.sources[f"{name} (GPU)"] = source

        def call():
            return gpualign.align(everything, everything, mode=mode, scoring=scoring,
                                  task=task, backend="cuda", pairs=(q_index, t_index))

        times, result = time_gpu(call, self.args.repeats)
        check_index = np.arange(min(CHECK_PAIRS, len(q_index)))
        want = gpualign.align(everything, everything, mode=mode, scoring=scoring,
                              task="path" if task == "path" else "end", backend="cpu",
                              pairs=(q_index[check_index], t_index[check_index]))
        bad = int((result.score[check_index] != want.score).sum())
        if task == "path":  # the same CIGARs and starts as the CPU traceback
            bad += sum(got != expected for got, expected in
                       zip(result.cigar[:len(check_index)], want.cigar, strict=True))
            bad += int((result.target_start[check_index] != want.target_start).sum())
        check = f"ok ({len(check_index)} vs Numba DP)" if not bad else \
            f"**FAIL** ({bad}/{len(check_index)})"
        cells = int((everything.lengths[q_index] * everything.lengths[t_index]).sum())
        row = Row(name, engine, len(q_index), cells, statistics.median(times), check,
                  note="end to end (encoded sequences in host memory to "
                       f"{'CIGAR strings' if task == 'path' else 'scores'} in host memory); "
                       + gpu_note(times))
        goal = GPU_TARGETS[name]
        row.target = (f">= {goal:g} TCUPS: "
                      f"{'met' if row.gcups >= 1000 * goal else '**missed**'}")
        return self.add(row)

    def cpu(self, name, pairs, mode, scoring, task, reference) -> Row:
        import numba

        def call(sets):
            return gpualign.align(*sets, mode=mode, scoring=scoring, task=task,
                                  alphabet=pairs.alphabet, backend="cpu")

        order = np.arange(len(pairs.queries))
        index, seconds, result = time_cpu(pairs.subset, call, float(pairs.cells.mean()),
                                          order, self.args.cpu_seconds, self.args.cpu_repeats)
        both = min(len(index), len(reference))
        bad = int((result.score[:both] != reference[:both]).sum())
        check = f"ok ({both} vs Numba DP)" if not bad else f"**FAIL** ({bad}/{both})"
        how = ("parasail SIMD kernels in threads" if task == "score" and
               gpualign.config.ALIGN_CPU_SCORES == "parasail" else "Numba DP, prange")
        return self.add(Row(name, "gpualign-cpu (all cores)", len(index),
                            int(pairs.cells[index].sum()), seconds, check,
                            note=f"{how}; {numba.get_num_threads()} threads; first "
                                 f"{len(index):,} pairs"))

    def parasail(self, name, pairs, mode, scoring, function, reference) -> Row:
        parasail = import_optional("parasail")
        if parasail is None:
            return self.add(Row(name, "parasail (1 core)", note="skipped: not installed"))
        from gpualign.align import _parasail

        table, _ = scoring.table(pairs.alphabet)
        symbols = pairs.queries.alphabet.symbols[:len(table)].decode()
        matrix = _parasail._matrix(symbols, table.astype(np.int32).tobytes(), len(table))
        align = getattr(parasail, function)

        def strings(index):
            return [(pairs.queries[i], pairs.targets[i]) for i in index.tolist()]

        def call(items):
            return np.array([align(q, t, scoring.gap_open, scoring.gap_extend, matrix).score
                             for q, t in items])

        order = np.arange(len(pairs.queries))
        index, seconds, scores = time_cpu(strings, call, float(pairs.cells.mean()), order,
                                          self.args.cpu_seconds, self.args.cpu_repeats)
        both = min(len(index), len(reference))
        bad = int((scores[:both] != reference[:both]).sum())
        check = f"ok ({both} vs Numba DP)" if not bad else f"**FAIL** ({bad}/{both})"
        return self.add(Row(name, "parasail (1 core)", len(index), int(pairs.cells[index].sum()),
                            seconds, check, note=f"{function}; first {len(index):,} pairs"))

    def stringzillas(self, name, pairs, mode, scoring, reference) -> Row | None:
        szs, sz = import_optional("stringzillas"), import_optional("stringzilla")
        engine = "stringzillas-cuda"
        if szs is None or sz is None or not self.cuda_ok:
            return self.add(Row(name, engine, note="skipped: needs stringzillas-cuda and a GPU"))
        if scoring.matrix_scores is not None or scoring.gap_open != scoring.gap_extend:
            return self.add(Row(name, engine, note="skipped: linear gaps with +/- scores only"))
        try:
            side = int(np.sqrt(min(len(pairs.queries), 4000)))
            a = szs.to_device(sz.Strs([pairs.queries[i] for i in range(side)]))
            b = szs.to_device(sz.Strs([pairs.targets[i] for i in range(side)]))
            # StringZillas 5.3 scores through 32 byte classes: byte % 32 keeps A, C, G, T and N
            # apart; N matches nothing, as in gpualign.
            classes = (np.arange(256) % 32).astype(np.uint8)
            costs = np.full((32, 32), scoring.mismatch, dtype=np.int8)
            np.fill_diagonal(costs, scoring.match)
            costs[ord("N") % 32, ord("N") % 32] = scoring.mismatch
            klass = szs.NeedlemanWunschScores if mode == "global" else szs.SmithWatermanScores
            scope = szs.DeviceScope(gpu_device=0)
            engine_obj = klass(classes, costs, open=-scoring.gap_open,
                               extend=-scoring.gap_extend, capabilities=scope)
            times, result = time_gpu(lambda: engine_obj(a, b, device=scope), self.args.repeats)
        except Exception as exc:  # the peer's API changes between versions: say so, go on
            return self.add(Row(name, engine, note=f"error: {type(exc).__name__}: {exc}"[:200]))
        cells = sum(len(pairs.queries[i]) for i in range(side)) * \
            sum(len(pairs.targets[j]) for j in range(side))
        diagonal = np.diag(np.asarray(result)).astype(np.int64)
        both = min(side, len(reference))
        bad = int((diagonal[:both] != reference[:both]).sum())
        check = f"ok ({both}, diagonal)" if not bad else f"**FAIL** ({bad}/{both})"
        return self.add(Row(name, engine, side * side, cells, statistics.median(times), check,
                            note=f"{side}x{side} cross product; " + gpu_note(times)))


def method(bench: Bench) -> str:
    return (
        "Cells are query length times target length, summed over the pairs run. CPU rows run "
        f"the first pairs, sized to about {bench.args.cpu_seconds:g} s per call (median of "
        f"{bench.args.cpu_repeats}); their rate extrapolates, their seconds do not. 'check' "
        f"compares the scores of the first {CHECK_PAIRS} pairs with gpualign's Numba DP "
        "(itself checked against the Gotoh oracle and parasail in tests/test_align.py). "
        "parasail is fed gpualign's substitution table (so DNA's N matches nothing) and the "
        "same gap convention.")


def parse_args(argv=None):
    parser = base_parser(__doc__, WORKLOADS, ENGINES)
    parser.add_argument("--pairs", type=int, default=5000,
                        help="pairs per data set for the CPU engines (neighbouring records; "
                             "default 5,000)")
    parser.add_argument("--gpu-cells", type=float, default=5e11,
                        help="DP cells of the GPU workloads (each record against its next "
                             "records; default 5e11)")
    args = parse(parser, argv, WORKLOADS, ENGINES)
    if args.pairs < 1:
        parser.error("--pairs must be >= 1")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    return run_benchmark("align", "gpualign alignment benchmark", args, argv,
                         lambda: Bench(args), method)


if __name__ == "__main__":
    sys.exit(main())
