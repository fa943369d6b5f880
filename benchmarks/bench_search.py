#!/usr/bin/env python3
"""Protein database search: gpualign beside CUDASW++4.0, in one run.

Prints a Markdown table (GCUPS counting the sum of the query lengths times the database's
residues) and writes it, with device, commit, date and versions, to
``benchmarks/results/search-<device>-<date>.md``.

    python benchmarks/bench_search.py --bigdb ../bigdb.fa          # both databases, GPU rows
    python benchmarks/bench_search.py --cpu --only uniprot-20k     # with the CPU rows

Workloads (``--only``), from issue 22: the first 20 queries of mmseqs2-examples'
``QUERY.fasta.gz`` (``--queries``, ``--query-count``) against

- ``uniprot-20k``: mmseqs2-examples' ``DB.fasta.gz``, 20,000 UniProt proteins (``--database``);
- ``bigdb``: the 290 M-residue database that ``cudasw4-peer bigdb DB.fasta.gz OUT.fa`` makes
  from it, 32 copies with 10% substitutions (``--bigdb OUT.fa``; skipped without it).

Smith-Waterman, BLOSUM62 with BLAST's gap costs 11/1 (gpualign ``gap_open=12,
gap_extend=1``), the best 10 hits of each query. Rows (``--engines``):

- ``cudasw4``: CUDASW++4.0 with DPX (``cudasw4-peer run QUERIES DB --dpx``, its defaults
  BLOSUM62 11/1 and the top 10); its own "Total time" (the database loaded beforehand).
- ``cuda``: gpualign ``search(..., task="score")`` on a database opened with
  ``Database.open`` from a ``.gpudb`` file (written once, as ``gpualign makedb`` does), the
  load timed apart; then ``task="path"`` (the hits' alignments too), its rate as a fraction of
  the score-only rate; then ``align_one_to_many`` (the per-query API): one call per query, the
  queries in a loop, against the same database as a ``SequenceSet`` in input order (encoded
  beforehand), ``n=10``, ``task="score"``, its rate as a fraction of ``search``'s; and
  ``search`` streamed in partitions, as a database larger than the GPU is
  (``config.GPU_MEMORY_FRACTION`` lowered to the database's size).
- ``cpu``, ``parasail`` (``--cpu``): gpualign's CPU backend on all cores and on one (Numba's
  threads set to 1), and parasail's ``sw_striped_profile_16`` (a profile per query) on one
  core and on all cores (a forked process per core, each on every core-th subject: parasail's
  rate per core when every core works, as gpualign's is), on the same prefix of the database,
  sized to ``--cpu-seconds``.
"""

from __future__ import annotations

import gzip
import multiprocessing
import os
import re
import subprocess
import sys
import time
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

import gpualign
from gpualign import Scoring, SequenceSet
from gpualign.search import Database, search

WORKLOADS = ("uniprot-20k", "bigdb")
ENGINES = ("cudasw4", "cuda", "cpu", "parasail")
SCORING = Scoring.matrix("BLOSUM62", gap_open=12, gap_extend=1)  # BLAST's 11/1
TOP = 10
#: Files of --data-dir, as scripts/fetch-data.sh names them (mmseqs2-examples).
DATABASE, QUERIES = "uniprot_db.fasta.gz", "uniprot_queries.fasta.gz"
#: What the forked parasail workers read (set before the fork, so nothing is pickled).
_PARASAIL_JOB: dict = {}
#: The line of CUDASW++4.0's --verbose output that cudasw4-peer keeps.
TOTAL_TIME = re.compile(r"Total time:\s*([0-9.eE+-]+)\s*s,\s*([0-9.eE+-]+)\s*GCUPS")


def plain_fasta(records: SequenceSet, path: Path) -> Path:
    """Write ``records`` (canonical symbols) as plain FASTA, once: the peer reads it."""
    if not path.is_file():
        part = path.with_suffix(".part")
        with open(part, "w") as handle:
            for i in range(len(records)):
                handle.write(f">{records.names[i]}\n{records[i]}\n")
        part.rename(path)
    return path


def first_records(path: Path, count: int) -> SequenceSet:
    """The first ``count`` records of a FASTA file (plain or gzip) as a protein set."""
    opener = gzip.open if path.suffix == ".gz" else open
    names, sequences = [], []
    with opener(path, "rt") as handle:
        for line in handle:
            if line.startswith(">"):
                if len(names) == count:
                    break
                names.append(line[1:].split()[0])
                sequences.append([])
            elif names:
                sequences[-1].append(line.strip())
    return SequenceSet.from_sequences(["".join(parts) for parts in sequences], "protein",
                                      names=names)


def top_scores(result, queries: int) -> list[list[int]]:
    """Each query's hit scores, best first (ties in any order have the same list)."""
    rows: list[list[int]] = [[] for _ in range(queries)]
    for query, score in zip(result.query_index.tolist(), result.score.tolist(), strict=True):
        rows[query].append(score)
    return rows


class SearchBench(BenchBase):
    def __init__(self, args):
        super().__init__(args)
        self.work = args.work_dir
        self.work.mkdir(parents=True, exist_ok=True)
        self.queries: SequenceSet | None = None
        self.query_file: Path | None = None

    def run(self) -> None:
        try:
            self.queries = first_records(self.args.queries, self.args.query_count)
        except OSError as exc:
            self.add(Row("-", "-", note=f"skipped: {exc} (run scripts/fetch-data.sh)"))
            return
        self.query_file = plain_fasta(self.queries, self.work / f"queries-{len(self.queries)}.fa")
        for workload in self.args.only:
            source = self.args.database if workload == "uniprot-20k" else self.args.bigdb
            if source is None or not source.is_file():
                self.add(Row(workload, "-", note=f"skipped: no database {source} ("
                             + ("run scripts/fetch-data.sh" if workload == "uniprot-20k" else
                                "make it with cudasw4-peer bigdb and pass --bigdb") + ")"))
                continue
            log(f"{workload}: preparing")
            gpudb = self.work / f"{workload}.gpudb"
            if not gpudb.is_file():
                began = time.perf_counter()
                Database.from_file(source, "protein").save(gpudb)
                log(f"  wrote {gpudb} in {time.perf_counter() - began:.1f} s")
            opened = Database.open(gpudb)
            cells = int(self.queries.lengths.sum()) * opened.residues
            self.sources[workload] = (
                f"the first {len(self.queries)} queries of {shown(self.args.queries)} "
                f"({int(self.queries.lengths.sum()):,} residues) against {shown(source)} "
                f"({len(opened):,} sequences, {opened.residues:,} residues)")
            rows = (("cudasw4", self.cudasw4, (source, cells)),
                    ("cuda", self.gpualign_cuda, (gpudb, cells)),
                    ("cpu", self.cpu_rows, (opened,)))
            for engine, measure, inputs in rows:
                if engine in self.engines or engine == "cpu" and "parasail" in self.engines:
                    try:
                        measure(workload, *inputs)
                    except Exception as exc:  # one engine's error is its row; the rest run
                        self.add(Row(workload, engine, check=f"FAIL: {type(exc).__name__}: "
                                                             f"{exc}"))

    def cudasw4(self, workload: str, source: Path, cells: int) -> None:
        engine = "CUDASW++4.0 DPX"
        tool = self.args.cudasw4_peer
        if not tool.is_file() or not self.cuda_ok:
            why = f"no {tool}" if not tool.is_file() else f"no GPU ({self.cuda_why})"
            self.add(Row(workload, engine, note=f"skipped: {why}"))
            return
        # The peer's makedb reads plain FASTA; the 20k file comes gzipped.
        database = source if source.suffix != ".gz" else plain_fasta(
            SequenceSet.from_file(source, "protein"), self.work / f"{workload}.fa")
        log(f"  {workload}: {engine} (builds the peer on its first run)")
        try:
            done = subprocess.run(["bash", str(tool), "run", str(self.query_file), str(database),
                                   "--dpx"], capture_output=True, text=True,
                                  timeout=self.args.timeout)
        except subprocess.TimeoutExpired:
            self.add(Row(workload, engine, note=f"stopped after {self.args.timeout:.0f} s"))
            return
        found = TOTAL_TIME.search(done.stdout)
        if done.returncode != 0 or found is None:
            last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
            self.add(Row(workload, engine, note=f"failed (exit {done.returncode}): {last}"))
            return
        seconds, own_gcups = float(found.group(1)), float(found.group(2))
        self.add(Row(workload, engine, len(self.queries), cells, seconds,
                     note=f"its own count: {own_gcups:,.1f} GCUPS; BLOSUM62 11/1, top {TOP}"))

    def gpualign_cuda(self, workload: str, gpudb: Path, cells: int) -> None:
        if not self.cuda_ok:
            self.add(Row(workload, "gpualign-cuda", note=f"skipped: no GPU ({self.cuda_why})"))
            return
        began = time.perf_counter()
        database = Database.open(gpudb)
        for array in (database.sequences.codes, database.sequences.offsets, database.order):
            np.asarray(array).sum()  # read the mapped pages: the load, not the first search
        load = time.perf_counter() - began
        rates, scores = {}, {}
        for task in ("score", "path"):
            times, result = time_gpu(lambda task=task: search(
                self.queries, database, scoring=SCORING, n=TOP, task=task, backend="cuda"),
                self.args.repeats)
            seconds = float(np.median(times))
            rates[task] = cells / seconds
            scores[task] = top_scores(result, len(self.queries))
            if task == "score":
                self.add(Row(workload, "gpualign-cuda score", len(self.queries), cells, seconds,
                             note=f"{gpu_note(times)}; database load apart: {load:.3g} s"))
                self.add(Row(workload, "gpualign-cuda score + load", len(self.queries), cells,
                             seconds + load, note="one search's median plus the load"))
            else:
                same = scores["path"] == scores["score"]
                self.add(Row(workload, "gpualign-cuda path", len(self.queries), cells, seconds,
                             "= score-only" if same else "FAIL: != score-only",
                             f"{rates['path'] / rates['score']:.0%} of score-only",
                             gpu_note(times)))
        self.streamed(workload, gpudb, cells, scores["score"], rates["score"])
        self.one_to_many(workload, database, cells, scores["score"], rates["score"])

    def streamed(self, workload: str, gpudb: Path, cells: int,
                 reference: list[list[int]], resident_rate: float) -> None:
        """gpualign-cuda's search of the database streamed through the GPU in partitions, as
        a database larger than the GPU is: ``config.GPU_MEMORY_FRACTION`` lowered to the
        database's own size, below what its layout takes on the device, on a database opened
        anew (the one of the rows before stays on the GPU, kept for later searches)."""
        from gpualign.cuda.memory import free_bytes

        database = Database.open(gpudb)
        size = database.residues + 16 * len(database)
        fraction = size / free_bytes()
        with gpualign.config.override(GPU_MEMORY_FRACTION=fraction):
            times, result = time_gpu(lambda: search(
                self.queries, database, scoring=SCORING, n=TOP, task="score", backend="cuda"),
                self.args.repeats)
        seconds = float(np.median(times))
        same = top_scores(result, len(self.queries)) == reference
        self.add(Row(workload, "gpualign-cuda streamed", len(self.queries), cells, seconds,
                     "= score-only" if same else "FAIL: != score-only",
                     f"{cells / seconds / resident_rate:.0%} of resident",
                     f"GPU_MEMORY_FRACTION={fraction:.3g} (the database's {size / 2**20:.0f} MiB "
                     f"of the free memory): partitions copied while the one before is "
                     f"searched; {gpu_note(times)}"))

    def one_to_many(self, workload: str, database: Database, cells: int,
                    reference: list[list[int]], search_rate: float) -> None:
        """gpualign-cuda's ``align_one_to_many``, a call per query, on the database as a
        SequenceSet in input order: the first loop (which sorts the set's batches and copies
        them to the GPU) apart, then the median of repeated loops."""
        records = database.sequences.take(np.argsort(database.order))  # input order

        def each_query() -> list[list[int]]:
            rows = []
            for q in range(len(self.queries)):
                hits = gpualign.align_one_to_many(self.queries.view(q, q + 1), records,
                                                  scoring=SCORING, n=TOP, task="score",
                                                  backend="cuda")
                rows.append([score for score in hits.score.tolist() if score > 0])
            return rows

        began = time.perf_counter()
        each_query()
        first = time.perf_counter() - began
        times, found = time_gpu(each_query, self.args.repeats, warm_up=False)
        seconds = float(np.median(times))
        self.add(Row(workload, "gpualign-cuda align_one_to_many", len(self.queries), cells,
                     seconds, "= search" if found == reference else "FAIL: != search",
                     f"{cells / seconds / search_rate:.0%} of search",
                     f"a call per query; {gpu_note(times)}; first loop (sorts and copies the "
                     f"set): {first:.3g} s"))

    def cpu_rows(self, workload: str, database: Database) -> None:
        """gpualign-cpu (all cores) and parasail (one core) on one prefix of the database in
        input order, sized by gpualign-cpu to --cpu-seconds."""
        records = database.sequences.take(np.argsort(database.order))  # input order
        query_residues = int(self.queries.lengths.sum())

        def subset(index: np.ndarray) -> Database:
            return Database.from_sequences([records[i] for i in index.tolist()], "protein",
                                           names=[records.names[i] for i in index.tolist()])

        def cpu_search(part: Database):
            return search(self.queries, part, scoring=SCORING, n=TOP, task="score",
                          backend="cpu")

        order = np.arange(len(records))
        mean_cells = query_residues * float(records.lengths.mean())
        index, seconds, result = time_cpu(subset, cpu_search, mean_cells, order,
                                          self.args.cpu_seconds, self.args.cpu_repeats)
        cells = query_residues * int(records.lengths[index].sum())
        part = subset(index)
        reference = top_scores(result, len(self.queries))
        check = "-"
        if self.cuda_ok:
            cuda = search(self.queries, part, scoring=SCORING, n=TOP, backend="cuda")
            check = ("= gpualign-cuda" if top_scores(cuda, len(self.queries)) == reference
                     else "FAIL: != gpualign-cuda")
        cpu_rate = cells / seconds
        one_core_rate = None
        if "cpu" in self.engines:
            cores = len(os.sched_getaffinity(0))
            self.add(Row(workload, "gpualign-cpu", len(self.queries), cells, seconds, check,
                         note=f"the first {len(index):,} database sequences; median of "
                              f"{self.args.cpu_repeats}; {cores} cores, "
                              f"{cpu_rate / cores / 1e9:.2f} GCUPS per core; first pass in "
                              f"{gpualign.config.SEARCH_CPU_FIRST_BITS}-bit lanes"))
            import numba  # here: the GPU rows run without it

            threads = numba.get_num_threads()
            numba.set_num_threads(1)  # Numba's parallel loops on this thread alone
            try:
                times = []
                for _ in range(self.args.cpu_repeats):
                    began = time.perf_counter()
                    cpu_search(part)
                    times.append(time.perf_counter() - began)
            finally:
                numba.set_num_threads(threads)
            one_core_rate = cells / float(np.median(times))
            self.add(Row(workload, "gpualign-cpu (1 core)", len(self.queries), cells,
                         float(np.median(times)), note=f"the same sequences on one Numba "
                                                      f"thread; median of {len(times)}"))
        if "parasail" in self.engines:
            self.parasail(workload, part, index, cells, reference, cpu_rate, one_core_rate)

    def parasail(self, workload: str, part: Database, index: np.ndarray, cells: int,
                 reference: list[list[int]], cpu_rate: float,
                 one_core_rate: float | None) -> None:
        parasail = import_optional("parasail")
        if parasail is None:
            self.add(Row(workload, "parasail", note="skipped: not installed"))
            return
        from gpualign.align import _parasail

        table, _ = SCORING.table("protein")
        symbols = gpualign.get_alphabet("protein").symbols[:len(table)].decode()
        _PARASAIL_JOB.update(
            matrix=_parasail._matrix(symbols, table.astype(np.int32).tobytes(), len(table)),
            queries=[self.queries[q] for q in range(len(self.queries))],
            subjects=[part.sequences[i] for i in range(len(part))])
        began = time.perf_counter()
        best = parasail_scores((0, 1))
        seconds = time.perf_counter() - began
        rate = cells / seconds
        tops = [sorted((s for s in row if s > 0), reverse=True)[:TOP] for row in best]
        check = "= gpualign-cpu" if tops == reference else "FAIL: != gpualign-cpu"
        cores = len(os.sched_getaffinity(0))
        self.add(Row(workload, "parasail (1 core)", len(self.queries), cells, seconds, check,
                     "-" if one_core_rate is None else
                     f"gpualign-cpu (1 core) = {one_core_rate / rate:.2f}x",
                     f"sw_striped_profile_16, a profile per query; the same "
                     f"{len(index):,} sequences; one timed pass; gpualign-cpu on all {cores} "
                     f"cores = {cpu_rate / rate:.1f}x, {cpu_rate / cores / rate:.2f}x per core"))
        with multiprocessing.get_context("fork").Pool(cores) as pool:
            pool.map(int, range(cores))  # the workers are up before the clock starts
            began = time.perf_counter()
            parts = pool.map(parasail_scores, [(k, cores) for k in range(cores)])
            seconds = time.perf_counter() - began
        best = [[0] * len(_PARASAIL_JOB["subjects"]) for _ in best]
        for k, scores in enumerate(parts):
            for q, row in enumerate(scores):
                best[q][k::cores] = row
        _PARASAIL_JOB.clear()
        tops = [sorted((s for s in row if s > 0), reverse=True)[:TOP] for row in best]
        check = "= gpualign-cpu" if tops == reference else "FAIL: != gpualign-cpu"
        all_rate = cells / seconds
        self.add(Row(workload, f"parasail ({cores} processes)", len(self.queries), cells,
                     seconds, check,
                     f"gpualign-cpu per core = {cpu_rate / all_rate:.2f}x parasail's",
                     f"as the one-core row, a forked process per core, each on "
                     f"one in {cores} subjects; {all_rate / cores / 1e9:.2f} GCUPS per core, "
                     f"gpualign-cpu {cpu_rate / cores / 1e9:.2f}"))


def parasail_scores(share: tuple[int, int]) -> list[list[int]]:
    """parasail's scores of every query of ``_PARASAIL_JOB`` against the subjects ``first,
    first + step, ...`` for ``share = (first, step)``: 16-bit striped with a profile per query,
    the 32-bit kernel where it saturates (as gpualign's CPU backend)."""
    import parasail

    first, step = share
    matrix, subjects = _PARASAIL_JOB["matrix"], _PARASAIL_JOB["subjects"][first::step]
    best = []
    for query in _PARASAIL_JOB["queries"]:
        profile = parasail.profile_create_16(query, matrix)
        row = []
        for subject in subjects:
            hit = parasail.sw_striped_profile_16(profile, subject, SCORING.gap_open,
                                                 SCORING.gap_extend)
            if hit.saturated:
                hit = parasail.sw_striped_32(query, subject, SCORING.gap_open,
                                             SCORING.gap_extend, matrix)
            row.append(hit.score)
        best.append(row)
    return best


def method(bench: SearchBench) -> str:
    return (
        "GCUPS count the sum of the query lengths times the database's residues (CUDASW++4.0 "
        "reports its own count beside it). gpualign-cuda's seconds are the median of "
        "repeated `search()` calls after warm-up, on a database opened once with "
        "`Database.open` (a `.gpudb` file, memory-mapped); the load (opening and reading its "
        "pages) is measured apart and added in the `+ load` row. Whether a call re-sends the "
        "database to the GPU is the backend's business: a search that keeps it resident "
        "gains from the repeats, one that streams it pays in every call. The path row also "
        "aligns the reported hits (CIGARs). The align_one_to_many row calls it once per query "
        "(n=10, task='score') on the database as a SequenceSet in input order, encoded "
        "beforehand; its first loop, which sorts the set's batches and copies them to the "
        "GPU, is timed apart. The streamed row lowers `config.GPU_MEMORY_FRACTION` to the "
        "database's size (residues + 16 B a sequence), so that the search may not keep it on "
        "the GPU and streams it in partitions, each copied while the one before is searched. "
        "CUDASW++4.0 runs through `cudasw4-peer run "
        "... --dpx` (its makedb and the load of its database outside its timer). "
        "Checks: the path search's top-10 scores of every query equal the score-only "
        "search's, and so do align_one_to_many's (its hits scoring above 0, as search "
        "reports); gpualign-cpu's equal gpualign-cuda's on the CPU subset; parasail's best 10 "
        "scores of each query equal gpualign-cpu's.")


def main(argv: list[str] | None = None) -> int:
    parser = base_parser(__doc__, WORKLOADS, ENGINES)
    parser.set_defaults(engines="cudasw4,cuda")
    tools = next((folder for folder in (ROOT / "shared" / "tools", ROOT.parent / "shared" / "tools")
                  if folder.is_dir()), ROOT.parent / "shared" / "tools")
    parser.add_argument("--cpu", action="store_true",
                        help="add the CPU rows: gpualign-cpu and parasail (as --engines ...,cpu,"
                             "parasail)")
    parser.add_argument("--queries", type=Path,
                        help=f"query FASTA (default: {QUERIES} of --data-dir)")
    parser.add_argument("--query-count", type=int, default=20,
                        help="queries taken from the start of --queries (default 20)")
    parser.add_argument("--database", type=Path,
                        help=f"the uniprot-20k database (default: {DATABASE} of --data-dir)")
    parser.add_argument("--bigdb", type=Path,
                        help="the 290 M-residue database of `cudasw4-peer bigdb` (FASTA)")
    parser.add_argument("--cudasw4-peer", type=Path, default=tools / "cudasw4-peer",
                        help="the CUDASW++4.0 wrapper (default: shared/tools/cudasw4-peer or "
                             "../shared/tools/cudasw4-peer of the checkout)")
    parser.add_argument("--work-dir", type=Path,
                        help="where .gpudb files and plain FASTA copies are written once "
                             "(default: search-bench/ of --data-dir)")
    parser.add_argument("--timeout", type=float, default=1800,
                        help="seconds CUDASW++4.0 may take, its build included (default 1800)")
    args = parse(parser, argv, WORKLOADS, ENGINES)
    if args.cpu:
        args.engines = list(dict.fromkeys([*args.engines, "cpu", "parasail"]))
    args.queries = args.queries or args.data_dir / QUERIES
    args.database = args.database or args.data_dir / DATABASE
    args.work_dir = args.work_dir or args.data_dir / "search-bench"
    return run_benchmark("search", "Protein database search: gpualign beside CUDASW++4.0",
                         args, argv, lambda: SearchBench(args), method)


if __name__ == "__main__":
    sys.exit(main())
