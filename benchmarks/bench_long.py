#!/usr/bin/env python3
"""Long pairs: genome-sized alignment and edit distance beside parasail and edlib, in one run.

Prints a Markdown table (GCUPS counting query length times target length per pair; peak host
and GPU memory of each row) and writes it, with device, commit, date and versions, to
``benchmarks/results/long-<device>-<date>.md``; then the seed paper's table for the GPU: each
tile size of the long alignment kernel, the occupancy of the kernels it ran and its GCUPS.

    python benchmarks/bench_long.py                      # everything (needs scripts/fetch-data.sh)
    python benchmarks/bench_long.py --only mt --no-save  # smoke run

Workloads (``--only``), from issue 21 (global affine: +2/-3, gaps 5 + 2 per extra base):

- ``mt``: human x orangutan mitochondrial genome (16,569 x 16,499 bp), score and CIGAR
  (``--mt-dir``: ``MT-human.fa``, ``MT-orang.fa``).
- ``ecoli-100k``: a 100 kb window of E. coli MG1655 x a copy with 6% substitutions and 2%
  deletions (seeded), score and CIGAR.
- ``ecoli-genomes``: E. coli K-12 MG1655 x DH1 (4.64 x 4.63 Mbp), score and CIGAR. DH1's file
  starts elsewhere on the circle and on the other strand: it is reverse-complemented and
  rotated to where MG1655's first 1,000 bp align.
- ``edit-1m``: edit distance of the first 1 Mbp of MG1655 x a copy with 6% substitutions and 2%
  deletions, distance and CIGAR.
- ``reads``: 2,000 E. coli PacBio reads of 10-50 kb against their reference windows,
  semi-global score and CIGAR. The windows come from mappy (minimap2) when it is installed,
  else from gpualign's own MEMs: the strand and diagonal with the most bases in MEMs of 20 or
  more, the window spanning those MEMs' diagonals and 2% of the read more on each side.
- ``tiles``: the tile table (no peers).

Every row runs in a process of its own, so that its peak host memory (the process's maximum
resident set) is its own; GPU memory is the peak that CuPy's memory pool held. CPU engines
(gpualign-cpu on all cores, parasail and edlib on one) run single pairs up to a cell limit
(``--cpu-max-cells``; parasail's traceback up to ``--trace-max-cells``: it stores a byte a
cell) and a prefix of the read pairs sized to ``--cpu-seconds``.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import (
    ROOT,
    BenchBase,
    Row,
    base_parser,
    import_optional,
    log,
    parse,
    run_benchmark,
    sanitize,
    shown,
)

import gpualign
from gpualign import SequenceSet, config
from gpualign.cigar import cigar_edit_cost, parse_cigar
from gpualign.cli import tune as tune_cli

WORKLOADS = ("mt", "ecoli-100k", "ecoli-genomes", "edit-1m", "reads", "tiles")
ENGINES = ("cuda", "cpu", "parasail", "edlib")
SCORING = tune_cli.SCORING
#: Files of --data-dir, as scripts/fetch-data.sh names them.
MG1655, DH1 = "ecoli_MG1655.fasta.gz", "ecoli_DH1.fasta.gz"
PACBIO, PACBIO_REFERENCE = "ecoli_pacbio.fastq.gz", "ecoli_pacbio_reference.fasta"
READ_PAIRS, READ_MIN, READ_MAX = 2_000, 10_000, 50_000
MEM_MIN_LENGTH = 20


def one_record(path: Path) -> np.ndarray:
    """The DNA codes (0-3, other symbols as random bases) of the first record of ``path``."""
    _, sequence = next(iter(gpualign.io.read_records(path)))
    return sanitize(sequence, np.random.default_rng(0))


def save_pairs(path: Path, queries: list[np.ndarray], targets: list[np.ndarray],
               source: str) -> None:
    lengths = np.array([[len(q), len(t)] for q, t in zip(queries, targets, strict=True)])
    # Compressed, with where the pairs came from: the folder alone can travel to a GPU host.
    np.savez_compressed(path, queries=np.concatenate(queries), targets=np.concatenate(targets),
                        lengths=lengths, source=np.array(source))


def load_pairs(path: Path) -> tuple[SequenceSet, SequenceSet]:
    data = np.load(path)
    lengths = data["lengths"]
    sets = []
    for side, column in (("queries", 0), ("targets", 1)):
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths[:, column], out=offsets[1:])
        sets.append(SequenceSet(data[side], offsets, [str(n) for n in range(len(lengths))],
                                "dna"))
    return sets[0], sets[1]


def reverse_complement(codes: np.ndarray) -> np.ndarray:
    return (3 - codes[::-1]).astype(np.uint8)


def same_origin(reference: np.ndarray, genome: np.ndarray) -> tuple[np.ndarray, str]:
    """The circular ``genome`` on the strand and from the position where the first 1,000 bp of
    ``reference`` align best (edlib, infix): the two chromosomes of a global alignment then
    start at the same locus."""
    import edlib

    head = "".join("ACGT"[c] for c in reference[:1000])
    best = None
    for strand, codes in (("+", genome), ("-", reverse_complement(genome))):
        doubled = np.concatenate([codes, codes[:1000]])  # a start near the end wraps
        hit = edlib.align(head, "".join("ACGT"[c] for c in doubled), mode="HW",
                          task="locations")
        if best is None or hit["editDistance"] < best[0]:
            best = hit["editDistance"], strand, codes, hit["locations"][0][0]
    distance, strand, codes, start = best
    return (np.concatenate([codes[start:], codes[:start]]),
            f"rotated to start on strand {strand} at {start:,}, where the reference's first "
            f"1,000 bp align with {distance} edits")


def read_windows(reads: list[np.ndarray], reference: np.ndarray
                 ) -> tuple[list[np.ndarray], list[np.ndarray], str]:
    """Each read (reverse-complemented when it maps to the reverse strand) and its reference
    window; reads without a place are left out."""
    mappy = import_optional("mappy")
    alphabet = "ACGT"
    queries, windows = [], []
    if mappy is not None:
        aligner = mappy.Aligner(seq="".join(alphabet[c] for c in reference), preset="map-pb")
        for read in reads:
            hit = next(iter(aligner.map("".join(alphabet[c] for c in read))), None)
            if hit is not None:
                queries.append(read if hit.strand > 0 else reverse_complement(read))
                windows.append(reference[hit.r_st:hit.r_en])
        return queries, windows, f"mappy {getattr(mappy, '__version__', '')} (map-pb)"
    reference_set = SequenceSet.from_codes([reference], ["reference"], "dna")
    read_set = SequenceSet.from_codes(reads, [str(n) for n in range(len(reads))], "dna")
    mems = gpualign.find_mems(reference_set, read_set, min_length=MEM_MIN_LENGTH)
    for number, read in enumerate(reads):
        mine = mems.query_index == number
        if not mine.any():
            continue
        strand_bases = [int(mems.length[mine & (mems.reverse == r)].sum()) for r in (False, True)]
        reverse = strand_bases[1] > strand_bases[0]
        chosen = mine & (mems.reverse == reverse)
        diagonal = mems.reference_pos[chosen] - mems.query_pos[chosen]
        weights = mems.length[chosen]
        middle = np.sort(np.repeat(diagonal, weights))[int(weights.sum()) // 2]
        near = np.abs(diagonal - middle) <= 0.15 * len(read)
        pad = int(0.02 * len(read))
        start = max(0, int(diagonal[near].min()) - pad)
        end = min(len(reference), int(diagonal[near].max()) + len(read) + pad)
        queries.append(reverse_complement(read) if reverse else read)
        windows.append(reference[start:end])
    return queries, windows, (f"gpualign MEMs of >= {MEM_MIN_LENGTH} (mappy not installed): "
                              "the best strand and diagonal, 2% of the read as margin")


def prepare(workload: str, args, folder: Path) -> tuple[Path, str]:
    """Write the pairs of ``workload`` to ``folder`` (once); returns the file and where the data
    came from."""
    path = folder / f"{workload}.npz"
    if path.is_file():
        with np.load(path) as saved:
            if "source" in saved.files:
                return path, str(saved["source"])
    data = args.data_dir
    rng = np.random.default_rng(args.seed)
    if workload == "mt":
        human, orang = args.mt_dir / "MT-human.fa", args.mt_dir / "MT-orang.fa"
        queries, targets = [one_record(human)], [one_record(orang)]
        source = f"{shown(human)} x {shown(orang)} (from the minimap2 repository, MIT)"
    elif workload in ("ecoli-100k", "edit-1m"):
        genome = one_record(data / MG1655)
        size = 100_000 if workload == "ecoli-100k" else 1_000_000
        start = 1_000_000 if workload == "ecoli-100k" else 0
        window = genome[start:start + size]
        queries, targets = [window], [tune_cli.mutated(rng, window, 0.06, 0.02)]
        source = (f"{shown(data / MG1655)}[{start:,}:{start + size:,}] x a copy with 6% "
                  f"substitutions and 2% deletions (seed {args.seed})")
    elif workload == "ecoli-genomes":
        mg1655 = one_record(data / MG1655)
        dh1, how = same_origin(mg1655, one_record(data / DH1))
        queries, targets = [mg1655], [dh1]
        source = f"{shown(data / MG1655)} x {shown(data / DH1)} ({how})"
    else:
        reference = one_record(data / PACBIO_REFERENCE)
        reads = []
        for _, sequence in gpualign.io.read_records(data / PACBIO):
            if READ_MIN <= len(sequence) <= READ_MAX:
                reads.append(sanitize(sequence, rng))
                if len(reads) == READ_PAIRS:
                    break
        queries, targets, how = read_windows(reads, reference)
        source = (f"the first {len(reads):,} reads of {READ_MIN:,}-{READ_MAX:,} bp of "
                  f"{shown(data / PACBIO)} ({len(queries):,} placed) against "
                  f"{shown(data / PACBIO_REFERENCE)}; windows by {how}")
    save_pairs(path, queries, targets, source)
    return path, source


#: (kind, mode, tasks) of each workload.
SETUPS = {"mt": ("align", "global", ("score", "path")),
          "ecoli-100k": ("align", "global", ("score", "path")),
          "ecoli-genomes": ("align", "global", ("score", "path")),
          "edit-1m": ("edit", "global", ("distance", "path")),
          "reads": ("align", "semi-global", ("score", "path"))}


def cigar_score(query: np.ndarray, target: np.ndarray, cigar: str) -> int:
    """The affine score of ``cigar`` for the global alignment of ``query`` with ``target``;
    raises ValueError where an ``=`` or ``X`` is false or the sequences are not consumed."""
    runs = parse_cigar(cigar)
    lengths = np.array([n for n, _ in runs], dtype=np.int64)
    ops = np.array([op for _, op in runs])
    on_query, on_target = np.isin(ops, list("=XI")), np.isin(ops, list("=XD"))
    q_start = np.concatenate([[0], np.cumsum(lengths * on_query)[:-1]])
    t_start = np.concatenate([[0], np.cumsum(lengths * on_target)[:-1]])
    if lengths[on_query].sum() != len(query) or lengths[on_target].sum() != len(target):
        raise ValueError("the CIGAR does not consume both sequences")
    paired = np.isin(ops, list("=X"))
    runs_of = np.repeat(np.flatnonzero(paired), lengths[paired])
    within = np.arange(len(runs_of)) - np.repeat(np.cumsum(lengths[paired]) - lengths[paired],
                                                 lengths[paired])
    equal = query[q_start[runs_of] + within] == target[t_start[runs_of] + within]
    if not np.array_equal(equal, ops[runs_of] == "="):
        raise ValueError("an '=' or 'X' of the CIGAR is false")
    gaps = lengths[np.isin(ops, list("ID"))]
    return int(SCORING.match * (lengths[ops == "="].sum())
               + SCORING.mismatch * (lengths[ops == "X"].sum())
               - (SCORING.gap_open * len(gaps) + SCORING.gap_extend * (gaps - 1).sum()))


def without_end_gaps(cigar: str, target_length: int) -> tuple[str, tuple[int, int]]:
    """``cigar`` without its leading and trailing runs of D (parasail's semi-global CIGARs
    spell the target's free ends out), and the part of the target it aligns.

    >>> without_end_gaps("5D7=1X4D", 17)
    ('7=1X', (5, 13))
    """
    runs = parse_cigar(cigar)
    start = runs[0][0] if runs and runs[0][1] == "D" else 0
    end = target_length - (runs[-1][0] if len(runs) > 1 and runs[-1][1] == "D" else 0)
    kept = runs[1 if start else 0:len(runs) - (1 if end < target_length else 0)]
    return "".join(f"{count}{op}" for count, op in kept), (start, end)


def gpu_peak() -> int | None:
    """Bytes CuPy's default memory pool holds: it keeps what it freed, so at the end of a
    process this is the most it held at once."""
    if "cupy" not in sys.modules:
        return None
    import cupy

    return int(cupy.get_default_memory_pool().total_bytes())


def child(spec: dict) -> dict:
    """One row, in a process of its own: time the engine on the pairs (or their first
    ``spec['count']``); returns the answers and their checks."""
    queries, targets = load_pairs(Path(spec["pairs"]))
    count = spec.get("count") or len(queries)
    index = np.arange(count)
    queries, targets = queries.take(index), targets.take(index)
    kind, mode, task, engine = spec["kind"], spec["mode"], spec["task"], spec["engine"]
    out: dict = {"pairs": count, "cells": int(np.dot(queries.lengths.astype(np.float64),
                                                      targets.lengths.astype(np.float64)))}
    if engine in ("cuda", "cpu"):
        # Compile the kernels (CUDA, or Numba's on the CPU) of long pairs and of the task
        # first, untimed, on a pair just above the size that takes the long-pair path.
        sizes = ([config.LONG_ALIGN_MIN_CELLS, config.ALIGN_LINEAR_MIN_CELLS,
                  config.ALIGN_CPU_WAVEFRONT_MIN_CELLS] if kind == "align"
                 else [config.LONG_EDIT_MIN_CELLS])
        side = math.isqrt(int(max(sizes))) + 2
        short = [SequenceSet.from_codes([s.codes_of(0)[:side]], ["w"], "dna")
                 for s in (queries, targets)]
        call(kind, mode, task, engine, *short)
        # The median of `repeats` calls: on a fresh machine the first call of a batch still
        # compiles CuPy's own kernels that a single warm-up pair does not use.
        seconds = []
        for _ in range(max(1, spec["repeats"])):
            began = time.perf_counter()
            answers, cigars, spans = call(kind, mode, task, engine, queries, targets)
            seconds.append(time.perf_counter() - began)
        out["seconds"] = float(np.median(seconds))
    elif engine == "parasail":
        import parasail

        matrix = parasail.matrix_create("ACGT", SCORING.match, SCORING.mismatch)
        prefix = "nw" if mode == "global" else "sg_dx"
        function = getattr(parasail, f"{prefix}_trace_striped_32" if task == "path"
                           else f"{prefix}_striped_32")
        texts = [(queries[n], targets[n]) for n in range(count)]
        began = time.perf_counter()
        results = [function(q, t, SCORING.gap_open, SCORING.gap_extend, matrix) for q, t in texts]
        out["seconds"] = time.perf_counter() - began
        answers = [int(r.score) for r in results]
        cigars = [r.cigar.decode.decode() if task == "path" else None for r in results]
        cigars = [c.replace("M", "=") if c else c for c in cigars]
        spans = [None] * count
        if task == "path" and mode != "global":  # its CIGARs have the free end gaps as D's
            for n in range(count):
                cigars[n], spans[n] = without_end_gaps(cigars[n], len(texts[n][1]))
    else:
        import edlib

        texts = [(queries[n], targets[n]) for n in range(count)]
        edlib_mode = "NW" if mode == "global" else "HW"
        began = time.perf_counter()
        results = [edlib.align(q, t, mode=edlib_mode, task="path" if task == "path" else
                               "distance") for q, t in texts]
        out["seconds"] = time.perf_counter() - began
        answers = [int(r["editDistance"]) for r in results]
        cigars = [None] * count
        spans = [None] * count
    out["answers"] = answers
    if task == "path" and cigars[0]:
        try:
            if kind == "align":  # the target's aligned part where its ends are free
                rescored = [cigar_score(queries.codes_of(n),
                                        targets.codes_of(n)[slice(*(spans[n] or (None,)))],
                                        cigars[n])
                            for n in range(count)]
            else:
                rescored = [cigar_edit_cost(queries.codes_of(n), targets.codes_of(n), cigars[n])
                            for n in range(count)]
            out["cigar"] = "CIGAR rescored = answer" if rescored == list(answers) else \
                "FAIL: CIGAR rescored != answer"
        except ValueError as exc:
            out["cigar"] = f"FAIL: {exc}"
    out["gpu_bytes"] = gpu_peak()
    return out


def call(kind: str, mode: str, task: str, engine: str, queries: SequenceSet,
         targets: SequenceSet) -> tuple[list[int], list[str | None], list[tuple | None]]:
    """The engine's answers, CIGARs (path) and, for alignments whose target ends are free,
    the aligned part of each target (``(start, end)``; else None)."""
    if kind == "align":
        result = gpualign.align(queries, targets, mode=mode, scoring=SCORING, task=task,
                                backend=engine)
        if task != "path":
            return result.score.tolist(), [None], [None]
        spans = list(zip(result.target_start.tolist(), result.target_end.tolist(), strict=True)) \
            if mode != "global" else [None] * len(result.score)
        return result.score.tolist(), list(result.cigar), spans
    result = gpualign.edit_distance(queries, targets, mode=mode, task=task, backend=engine)
    return (result.distance.tolist(), list(result.cigar) if task == "path" else [None],
            [None] * len(result.distance))


def run_child(spec: dict, timeout: float) -> tuple[dict, int]:
    """Run :func:`child` in a new process; returns its answer and its peak resident set
    (bytes)."""
    # Files, not pipes: a child that fills a pipe nobody reads until it exits would hang.
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        process = subprocess.Popen([sys.executable, __file__, "--child", json.dumps(spec)],
                                   stdout=stdout, stderr=stderr, text=True)
        began = time.monotonic()
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - began > timeout:
                process.kill()
                pid, status, usage = os.wait4(process.pid, 0)
                return {"error": f"stopped after {timeout:.0f} s"}, usage.ru_maxrss * 1024
            time.sleep(0.05)
        process.returncode = os.waitstatus_to_exitcode(status)
        stdout.seek(0)
        stderr.seek(0)
        lines = stdout.read().strip().splitlines()
        if process.returncode != 0 or not lines:
            last = (stderr.read().strip().splitlines() or ["no output"])[-1]
            return {"error": f"exit {process.returncode}: {last}"}, usage.ru_maxrss * 1024
    return json.loads(lines[-1]), usage.ru_maxrss * 1024


def gib(count: int | None) -> str:
    return "-" if count is None else f"{count / 2**30:.2f} GiB"


class LongBench(BenchBase):
    def __init__(self, args):
        super().__init__(args)
        self.folder = args.data_dir / "long-pairs"  # the pairs, written once
        self.folder.mkdir(parents=True, exist_ok=True)
        self.tiles: list[str] = []

    def run(self) -> None:
        for workload in self.args.only:
            if workload == "tiles":
                self.tile_table()
                continue
            log(f"{workload}: preparing")
            try:
                path, source = prepare(workload, self.args, self.folder)
            except (OSError, gpualign.io.SequenceFileError) as exc:
                self.add(Row(workload, "-", note=f"skipped: {exc} (run scripts/fetch-data.sh)"))
                continue
            self.sources[workload] = source
            kind, mode, tasks = SETUPS[workload]
            for task in tasks:
                self.rows_of(workload, path, kind, mode, task)

    def engines_for(self, kind: str, task: str) -> list[str]:
        engines = [e for e in ENGINES if e in self.engines]
        if "cuda" in engines and not self.cuda_ok:
            engines.remove("cuda")
        if kind == "edit" and "parasail" in engines:
            engines.remove("parasail")
        return engines

    def rows_of(self, workload: str, path: Path, kind: str, mode: str, task: str) -> None:
        queries, targets = load_pairs(path)
        cells = queries.lengths.astype(np.float64) * targets.lengths.astype(np.float64)
        name = f"{workload} {task}"
        reference: dict | None = None
        for engine in self.engines_for(kind, task):
            label = f"gpualign-{engine}" if engine in ("cuda", "cpu") else f"{engine} (1 core)"
            count = len(queries)
            limit = self.args.trace_max_cells if engine == "parasail" and task == "path" \
                else self.args.cpu_max_cells * (64 if kind == "edit" else 1)  # 64 cells a word
            if engine not in ("cuda", "edlib"):  # edlib's bands make long similar pairs cheap
                count = self.cpu_count(cells, limit)
                if count == 0:
                    self.add(Row(name, label, note=f"skipped: {cells[0]:.3g} cells a pair, "
                                                    f"over {limit:.3g}"))
                    continue
            spec = {"pairs": str(path), "kind": kind, "mode": mode, "task": task,
                    "engine": engine, "count": count,
                    "repeats": {"cuda": self.args.repeats,
                                "cpu": self.args.cpu_repeats}.get(engine, 1)}
            log(f"  {name}: {engine} on {count:,} pairs")
            out, host_bytes = run_child(spec, self.args.timeout)
            memory = f"peak host {gib(host_bytes)}, GPU {gib(out.get('gpu_bytes'))}"
            if "error" in out:
                self.add(Row(name, label, note=f"{out['error']}; {memory}"))
                continue
            check = self.check(engine, kind, out, reference)
            if engine == "cuda" or reference is None and engine != "edlib":
                reference = out
            note = "edit distance (edlib: unit costs)" if engine == "edlib" and kind == "align" \
                else ""
            self.add(Row(name, label, out["pairs"], out["cells"], out["seconds"], check,
                         note=f"{memory}; {out.get('cigar', '')} {note}".strip()))

    def cpu_count(self, cells: np.ndarray, limit: float) -> int:
        """Pairs from the start whose cells stay within ``limit`` and the CPU-seconds budget
        (at 1 GCUPS)."""
        budget = min(limit, self.args.cpu_seconds * 1e9)
        within = np.cumsum(cells) <= max(budget, cells[0] if cells[0] <= limit else 0)
        return int(within.sum())

    @staticmethod
    def check(engine: str, kind: str, out: dict, reference: dict | None) -> str:
        if engine == "edlib" and kind == "align":
            return "-"
        if reference is None:
            return "reference"
        count = min(len(out["answers"]), len(reference["answers"]))
        same = out["answers"][:count] == reference["answers"][:count]
        return f"{'=' if same else 'FAIL: !='} reference on {count:,}"

    def tile_table(self) -> None:
        """Tile size -> occupancy -> GCUPS of the long alignment kernel on 16 pairs of 100 kb."""
        if not self.cuda_ok:
            self.tiles = [f"(no GPU: {self.cuda_why})"]
            return
        family = next((tune_cli.FAMILIES[name] for name in ("long-align-tiles", "align-strip")
                       if tune_cli.FAMILIES[name].available), None)
        setting = family.settings[0]
        workload = family.workload()
        self.sources["tiles"] = f"{family.name}: {workload.description}"
        self.tiles = [f"Family {family.name}, {workload.description}: each value of {setting} "
                      f"(the others at their defaults)", "",
                      f"| {setting} | kernels: registers, blocks/SM, occupancy | seconds | GCUPS |",
                      "|---|---|---|---|"]
        start = {name: getattr(config, name) for name in family.settings}
        reference = None
        for value in family.candidates[setting](start[setting]):
            entry, answers = tune_cli.measure(family, workload, {**start, setting: value},
                                              reference)
            reference = answers if reference is None else reference
            rate = "-" if entry.error else f"{entry.gcups:,.1f}"
            self.tiles.append(f"| {value} | {tune_cli.describe_kernels(entry.kernels)} | "
                              f"{entry.seconds:.4g} | {rate} {entry.error or ''} |")
            log(self.tiles[-1])


def method(bench: LongBench) -> str:
    return "\n".join([
        "GCUPS count query length x target length per pair. Every row is one process: its "
        "seconds are one call through the public API (or the peer's), from encoded sequences "
        "to the answer (with CIGARs for path); gpualign's rows first run the task on a prefix pair "
        "large enough for the long-pair path, untimed, so that compilation is not counted, then "
        f"report the median of {bench.args.repeats} calls (--repeats; on the CPU "
        f"{bench.args.cpu_repeats}, --cpu-repeats). Peak "
        "host memory is the process's largest resident set (sequences included); GPU memory "
        "the most CuPy's pool held. Checks: scores and distances equal the reference row's "
        "(gpualign-cuda when it ran), on the pairs both ran; CIGARs "
        "are verified column by column and rescored to the score. edlib computes edit "
        "distance (unit costs), not the affine score: its rows of the alignment workloads are "
        "a speed reference only. CPU engines run pairs up to the cell limits of the command.",
        "", "## Tile size, occupancy and GCUPS", "", *(bench.tiles or ["(not run)"])])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        print(json.dumps(child(json.loads(argv[1]))))
        return 0
    parser = base_parser(__doc__, WORKLOADS, ENGINES)
    shared = next((folder for folder in (ROOT / "shared" / "data", ROOT.parent / "shared" / "data")
                   if folder.is_dir()), ROOT.parent / "shared" / "data")
    parser.add_argument("--mt-dir", type=Path, default=shared,
                        help="folder of MT-human.fa and MT-orang.fa (default: shared/data or "
                             "../shared/data of the checkout)")
    parser.add_argument("--cpu-max-cells", type=float, default=2e10,
                        help="largest pair (cells) a CPU engine runs (default 2e10)")
    parser.add_argument("--trace-max-cells", type=float, default=2e9,
                        help="largest pair parasail traces back (a byte a cell; default 2e9)")
    parser.add_argument("--timeout", type=float, default=3600,
                        help="seconds a row may take before it is stopped (default 3600)")
    args = parse(parser, argv, WORKLOADS, ENGINES)
    return run_benchmark("long", "Long pairs: gpualign beside parasail and edlib", args, argv,
                         lambda: LongBench(args), method)


if __name__ == "__main__":
    sys.exit(main())
