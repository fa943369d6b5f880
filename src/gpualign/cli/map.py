"""``gpualign map``: map single-end or paired-end reads to a reference, SAM out."""

from __future__ import annotations

import argparse
import io
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any

import numpy as np

from .. import config
from ..backend import BackendUnavailableError, resolve_backend
from ._common import (
    PROG,
    add_backend_option,
    add_cluster_options,
    add_names_option,
    api_default,
    check_output,
    dask_client,
    destination,
    non_negative_int,
    open_output,
    plural,
    positive_int,
    report,
)


def add_command(subparsers: argparse._SubParsersAction) -> None:
    """Declare ``gpualign map``."""
    parser = subparsers.add_parser(
        "map", help="map reads (single-end or pairs) to a reference, SAM output",
        description="Map DNA reads to a reference: minimizer candidates on both strands, "
                    "verified by edit distance (the whole read within -k edits), the best "
                    "placement with MAPQ, NM/AS/XS and its CIGAR (M/I/D); pairs (MATES "
                    "given, by record order, names alike but for /1 and /2) face each other "
                    "within an insert size estimated from the first reads, with proper-pair "
                    "flags, mate fields and rescue of a mate next to its partner. Unmapped "
                    "reads are written too.",
        epilog="example: gpualign map tests/data/ecoli_10kb.fasta.gz "
               "tests/data/ecoli_reads_2000.fastq.gz -o reads.sam",
        declare=_arguments)
    parser.set_defaults(run=run)


def _arguments(parser: argparse.ArgumentParser) -> None:
    from ..map import map_reads
    parser.add_argument("reference", metavar="REF",
                        help="FASTA file (.gz accepted) or an index from gpualign index "
                             "(.gpumap)")
    parser.add_argument("reads", metavar="READS", help="FASTA/FASTQ file (.gz accepted)")
    parser.add_argument("mates", metavar="MATES", nargs="?", default=None,
                        help="the second reads of the pairs, in the order of READS (names alike "
                             "but for /1 and /2)")
    parser.add_argument("-k", "--max-edits", dest="k", type=non_negative_int, default=None,
                        metavar="K",
                        help="most edits of a placement (default: "
                             f"{config.MAP_MAX_EDIT_FRACTION:.0%}% of each read's length, "
                             "rounded up)")
    parser.add_argument("--max-candidates", type=positive_int,
                        default=api_default(map_reads, "max_candidates"), metavar="N",
                        help="candidate windows verified per read, at most: the best "
                             "supported (default %(default)s)")
    add_names_option(parser)
    add_backend_option(parser)
    add_cluster_options(parser, "the batches of reads")
    parser.add_argument("-o", "--output", metavar="OUT.sam", default=None,
                        help="write the SAM here (default: standard output; '-' too)")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress bar and no summary line on standard error")


def _bytes_sink(out: IO[str]) -> IO[Any]:
    """Where the SAM records go: the byte stream under the UTF-8 text stream ``out`` (flushed
    first), so that the writer's bytes are not decoded and encoded again; else ``out``."""
    buffer = getattr(out, "buffer", None)
    encoding = (getattr(out, "encoding", None) or "").lower().replace("-", "")
    if not isinstance(buffer, io.BufferedIOBase) or encoding != "utf8":
        return out
    out.flush()
    return buffer


def run(args: argparse.Namespace) -> int:
    """Run ``gpualign map`` on the parsed ``args``; return the exit status (0; errors raise
    and :func:`gpualign.cli.main` turns them into status 2)."""
    from ..map.api import ReadsAhead, iter_mappings
    from ..map.index import as_map_index
    from ..map.sam import sam_header, write_records
    began = time.perf_counter()
    backend = _index_backend(args)
    check_output(args.output, [args.reference, args.reads, args.mates])
    mates = Path(args.mates) if args.mates is not None else None
    # The reads are read from now on, while the index is built (their first batch waits for
    # the compiled parsers to load).
    reading = ReadsAhead(Path(args.reads), mates)
    built = time.perf_counter()
    index = as_map_index(Path(args.reference), backend=backend)
    index_seconds = time.perf_counter() - built
    reads = mapped = 0
    seconds: dict[str, float] = {}
    write_seconds = 0.0
    def write(result: Any, chunk: Any, mate_chunk: Any) -> float:
        """Write a batch's SAM records; the seconds it took."""
        written = time.perf_counter()
        write_records(records, result, np.arange(len(result)), chunk, mate_chunk,
                      index.reference.names)
        return time.perf_counter() - written

    # The SAM goes to a new file that replaces -o only at the end: a READS or MATES file found
    # bad after the header was written leaves no header-only (or partial) output behind.
    # A batch's records are written on a thread while the next batch maps (the compiled writer
    # releases the GIL), one batch at a time, in order; in this thread where Numba's threading
    # layer could not take the two threads' parallel kernels (_overlap_safe).
    with dask_client(args) as client, open_output(args.output) as out, \
            ThreadPoolExecutor(1, thread_name_prefix="gpualign-writer") as writer:
        out.write(sam_header(list(index.reference.names), index.reference.lengths,
                             " ".join([PROG, *sys.argv[1:]])))
        records = _bytes_sink(out)
        writing: Future[float] | None = None
        for chunk, mate_chunk, result in iter_mappings(
                index, reading, k=args.k, max_candidates=args.max_candidates,
                # On a cluster each worker resolves --backend for its batches (CUDA where it
                # has a GPU); this process built the index with its own.
                backend=backend if client is None else args.backend, progress=not args.quiet,
                client=client):
            if writing is not None:
                write_seconds += writing.result()
                writing = None
            if _overlap_safe():
                writing = writer.submit(write, result, chunk, mate_chunk)
            else:
                write_seconds += write(result, chunk, mate_chunk)
            reads += int(result.primary.sum())  # one a read; a split read has two records
            mapped += int((result.mapped & result.primary).sum())
            for stage, value in result.stage_seconds.items():
                seconds[stage] = seconds.get(stage, 0.0) + value
        if writing is not None:
            write_seconds += writing.result()
    seconds["write"] = write_seconds
    rates = ", ".join(f"{stage} {reads / max(value, 1e-9):,.0f}"
                      for stage, value in seconds.items())
    report(args, f"{plural(reads, 'read')}{' (pairs)' if mates else ''}, {mapped} mapped"
                 f"{destination(args)} in {time.perf_counter() - began:.2f} s (index "
                 f"{index_seconds:.2f} s; reads/s by stage: {rates}; {_where(args, backend)})")
    return 0


def _overlap_safe() -> bool:
    """Whether the SAM of a batch may be written on a thread while the next one maps: both run
    Numba's parallel kernels, which its OpenMP and TBB threading layers take from two threads
    at once, but its workqueue layer (where neither loads: no libgomp, say) aborts the process
    on. False until a parallel kernel has run (the layer is chosen then)."""
    import numba

    try:
        return numba.threading_layer() != "workqueue"
    except ValueError:  # no layer chosen yet
        return False


def _index_backend(args: argparse.Namespace) -> str:
    """Where this process builds the index: ``--backend``, but the CPU where it asks for CUDA
    and this process, the client of a ``--scheduler`` whose workers map the reads (each
    resolving ``--backend`` for itself), has no GPU."""
    try:
        return resolve_backend(args.backend)
    except BackendUnavailableError:
        if args.scheduler is None:  # --workers start on this machine: they lack a GPU too
            raise
        return "cpu"


def _where(args: argparse.Namespace, backend: str) -> str:
    """Where the reads were mapped, for the summary line."""
    if args.scheduler is not None:
        return f"backend {args.backend} on the Dask cluster at {args.scheduler}"
    if args.workers is not None:
        return (f"backend {args.backend} on a local Dask cluster of "
                f"{plural(args.workers, 'worker')}")
    return f"backend {backend}"
