"""The ``gpualign`` command line.

One subcommand per capability. Each subcommand is two functions: ``_add_<name>_command`` declares
its arguments (from the shared helpers ``_add_pair_inputs`` or ``_add_encoding_options``,
``_add_backend_option`` and ``_add_output_options``) and ``run_<name>`` runs it and returns the
exit status. To add a subcommand, write both and list the first in :data:`_COMMANDS`.

Coordinates in the TSV output are 0-based, half-open, as in the Python API; ``*`` marks a value
that is not available (SAM's convention).

Exit status: 0 on success, 2 on bad input (unreadable or malformed files, invalid symbols,
mismatched record counts, bad options, CUDA asked for but absent), 130 when interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TextIO

import numpy as np

from . import __version__
from ._progress import progress_bar
from .backend import BackendUnavailableError, resolve_backend
from .io import SequenceFileError, read_records, write_mummer, write_sam, write_tsv
from .scoring import MATRICES, Scoring
from .sequences import InvalidSymbolError, SequenceSet

__all__ = ["build_parser", "main"]

PROG = "gpualign"

#: Errors reported as ``gpualign: error: ...`` with exit status 2 and no traceback.
USER_ERRORS = (InvalidSymbolError, SequenceFileError, ValueError, BackendUnavailableError,
               OSError)

EDIT_COLUMNS = ("query", "target", "distance", "target_start", "target_end", "cigar")
ALIGN_COLUMNS = ("query", "target", "identity", "score", "query_start", "query_end",
                 "target_start", "target_end", "cigar")
MEM_COLUMNS = ("query", "strand", "reference", "reference_pos", "query_pos", "length")
LCS_TOP_COLUMNS = ("query", "subject", "rank", "lcs_length", "query_length", "subject_length",
                   "lcs")
LCS_ALL_COLUMNS = ("query", "subject", "lcs_length", "query_length", "subject_length")

#: Rows of ``gpualign lcs --all`` formatted and written at a time.
_LCS_ALL_CHUNK = 1 << 16


# --------------------------------------------------------------------------- shared helpers


def _non_negative_int(text: str) -> int:
    """argparse type: an integer >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def _positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    value = _non_negative_int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _device_list(text: str) -> list[int]:
    """argparse type: a comma-separated list of GPU ordinals, e.g. ``0,1``."""
    try:
        return [_non_negative_int(item.strip()) for item in text.split(",")]
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"expected GPU ids such as 0,1 ({exc})") from None


def _add_pair_inputs(parser: argparse.ArgumentParser) -> None:
    """QUERIES and TARGETS files plus the options that control how they are encoded."""
    parser.add_argument("queries", metavar="QUERIES",
                        help="FASTA/FASTQ file of queries (.gz, .bz2, .xz accepted)")
    parser.add_argument("targets", metavar="TARGETS",
                        help="FASTA/FASTQ file of targets (.gz, .bz2, .xz accepted)")
    _add_encoding_options(parser)


def _add_encoding_options(parser: argparse.ArgumentParser) -> None:
    """--alphabet and --invalid: how the symbols of every input file are encoded."""
    parser.add_argument("--alphabet", choices=("dna", "protein", "bytes"), default="dna",
                        help="sequence alphabet (default: dna; in DNA, N matches nothing)")
    parser.add_argument("--invalid", choices=("error", "wildcard"), default="error",
                        help="symbols outside the alphabet: stop with an error naming the record "
                             "and position (default), or read them as the wildcard N/X")


def _add_backend_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", choices=("auto", "cpu", "cuda"), default="auto",
                        help="where to compute (default: auto = $GPUALIGN_BACKEND if set, else "
                             "CUDA when CuPy and a GPU are present, else CPU)")


def _add_output_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", metavar="OUT.tsv", default=None,
                        help="write the table here (default: standard output)")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress bar and no summary line on standard error")


def _symbol_error(path: str, exc: InvalidSymbolError) -> InvalidSymbolError:
    """``exc`` with the file name in front and the command-line options in its hint (the
    library's hint names Python keywords)."""
    message = (str(exc).replace("invalid='wildcard'", "--invalid wildcard")
               .replace("alphabet='protein'/'bytes'", "--alphabet protein/bytes"))
    return InvalidSymbolError(f"{path}: {message}")


@contextlib.contextmanager
def _reading(path: str) -> Iterator[None]:
    """Invalid-symbol errors met while reading ``path`` (at once or streamed) get the file name
    and the CLI options."""
    try:
        yield
    except InvalidSymbolError as exc:
        raise _symbol_error(path, exc) from exc


def _read_sequences(path: str, args: argparse.Namespace) -> SequenceSet:
    """Encode one FASTA/FASTQ file; errors name the file and the CLI options."""
    with _reading(path):
        return SequenceSet.from_file(path, args.alphabet, invalid=args.invalid)


def _read_pair_inputs(args: argparse.Namespace) -> tuple[SequenceSet, SequenceSet]:
    """Encode QUERIES and TARGETS (once when both name the same file)."""
    queries = _read_sequences(args.queries, args)
    if os.path.exists(args.targets) and os.path.samefile(args.queries, args.targets):
        return queries, queries
    return queries, _read_sequences(args.targets, args)


def _check_output(path: str | None) -> None:
    """Fail before any work when ``path`` cannot be written (its folder is missing or locked)."""
    if path is None or path == "-":
        return
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(2, "no such folder for the output file", path)
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise PermissionError(13, "output file not writable", path)


def _plural(count: int, noun: str, plural: str | None = None) -> str:
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


@contextlib.contextmanager
def _open_output(path: str | None) -> Iterator[TextIO]:
    """Yield standard output, or ``path`` opened for writing (``-`` means standard output)."""
    if path is None or path == "-":
        yield sys.stdout
        sys.stdout.flush()
        return
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        yield handle


def _report(args: argparse.Namespace, message: str) -> None:
    """Print a summary line on standard error unless ``--quiet``."""
    if not args.quiet:
        print(f"{PROG} {args.command}: {message}", file=sys.stderr)


def _destination(args: argparse.Namespace) -> str:
    """`` -> FILE`` for the summary line when the output goes to a file."""
    return f" -> {args.output}" if args.output not in (None, "-") else ""


def _star(values: np.ndarray) -> list[int | None]:
    """Coordinates with -1 (not available) turned into None, written as ``*``."""
    return [None if v < 0 else v for v in values.tolist()]


def _record_pairs(args: argparse.Namespace, n_q: int,
                  n_t: int) -> tuple[np.ndarray, np.ndarray, str]:
    """The pairs of a pairwise command: records by order, or every query with every target
    (``--all-vs-all``); returns the index arrays and a description for the summary."""
    if args.all_vs_all:
        return (np.repeat(np.arange(n_q, dtype=np.int64), n_t),
                np.tile(np.arange(n_t, dtype=np.int64), n_q), f"{n_q} x {n_t} all-vs-all")
    if n_q != n_t:
        raise ValueError(f"{args.queries} has {_plural(n_q, 'record')} but {args.targets} "
                         f"has {_plural(n_t, 'record')}: "
                         "pairs are formed by record order; use --all-vs-all to compare "
                         "every query with every target")
    index = np.arange(n_q, dtype=np.int64)
    return index, index, _plural(n_q, "pair")


# --------------------------------------------------------------------------- edit


def _add_edit_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "edit", help="edit (Levenshtein) distance, locations and CIGARs",
        description="Edit distance of query/target pairs (by record order), or of every query "
                    "with every target (--all-vs-all). Writes a TSV table: query, target, "
                    "distance, target_start, target_end (0-based, half-open), cigar "
                    "(=/X/I/D, I consumes the query); '*' where not available.",
        epilog="example: gpualign edit examples/hiv_reads.fa examples/hiv_reference.fa "
               "--all-vs-all --mode infix -k 25 --task path --invalid wildcard -o hits.tsv")
    _add_pair_inputs(parser)
    parser.add_argument("--all-vs-all", action="store_true",
                        help="compare every query with every target instead of pairing records "
                             "by order; with -k only the pairs within k are written")
    parser.add_argument("--mode", choices=("global", "infix", "prefix"), default="global",
                        help="global: whole query vs whole target (edlib NW); infix: the query "
                             "anywhere in the target (HW); prefix: the query vs a prefix of the "
                             "target (SHW) (default: global)")
    parser.add_argument("-k", "--max-distance", dest="k", type=_non_negative_int, default=None,
                        metavar="K",
                        help="cutoff: pairs over K are reported with distance -1 (pairwise) or "
                             "left out (--all-vs-all); smaller K is faster")
    parser.add_argument("--task", choices=("distance", "locations", "path"), default="distance",
                        help="distance only; locations adds the target range of an optimal "
                             "alignment; path adds its CIGAR (default: distance)")
    _add_backend_option(parser)
    _add_output_options(parser)
    parser.set_defaults(run=run_edit)


def run_edit(args: argparse.Namespace) -> int:
    """Run ``gpualign edit`` on the parsed ``args``; return the exit status (0;
    errors raise and :func:`main` turns them into status 2)."""
    from .edit import edit_distance, edit_distance_matrix
    began = time.perf_counter()
    backend = resolve_backend(args.backend)  # fail early, before reading large files
    _check_output(args.output)
    progress = not args.quiet
    queries, targets = _read_pair_inputs(args)
    n_q, n_t = len(queries), len(targets)

    if args.all_vs_all:
        if args.k is not None:  # a distance pass finds the pairs within k
            sparse = edit_distance_matrix(queries, targets, mode=args.mode, k=args.k,
                                          backend=args.backend, progress=progress)
            q_index, t_index = sparse.query_index, sparse.target_index
        else:
            q_index, t_index, _ = _record_pairs(args, n_q, n_t)
        if args.k is not None and args.task == "distance":
            distance = sparse.distance
            start = end = np.full(len(distance), -1, dtype=np.int32)
            cigar: list[str | None] | None = None
        else:
            result = edit_distance(queries, targets, mode=args.mode, k=args.k, task=args.task,
                                   backend=args.backend, progress=progress,
                                   pairs=(q_index, t_index))
            distance, start, end, cigar = (result.distance, result.target_start,
                                           result.target_end, result.cigar)
        compared = n_q * n_t
        shape = f"{n_q} x {n_t} all-vs-all"
    else:
        q_index, t_index, shape = _record_pairs(args, n_q, n_t)
        result = edit_distance(queries, targets, mode=args.mode, k=args.k, task=args.task,
                               backend=args.backend, progress=progress)
        distance, start, end, cigar = (result.distance, result.target_start, result.target_end,
                                       result.cigar)
        compared = n_q

    with _open_output(args.output) as out:
        write_tsv(out, EDIT_COLUMNS, [
            [queries.names[i] for i in q_index.tolist()],
            [targets.names[i] for i in t_index.tolist()],
            distance,
            _star(start),
            _star(end),
            cigar if cigar is not None else [None] * len(distance),
        ])

    within = int(np.count_nonzero(distance >= 0))
    cutoff = f", {within} within k={args.k}" if args.k is not None else ""
    where = _destination(args)
    _report(args, f"{shape}, mode {args.mode}, task {args.task}: {compared} compared{cutoff}, "
                  f"{_plural(len(distance), 'row')} written{where} in "
                  f"{time.perf_counter() - began:.2f} s (backend {backend})")
    return 0


# --------------------------------------------------------------------------- align


def _add_align_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "align", help="NW / SW / semi-global / overlap alignment with scores, ends and CIGARs",
        description="Align query/target pairs (by record order), or every query with every "
                    "target (--all-vs-all), with match/mismatch scores or a substitution "
                    "matrix and affine gaps (a gap of length L costs gap-open + "
                    "(L-1)*gap-extend). Writes a TSV table (query, target, identity, score, "
                    "query_start, query_end, target_start, target_end: 0-based, half-open; "
                    "cigar: =/X/I/D, I consumes the query; '*' where not available), or SAM "
                    "(-o *.sam or --format sam: targets are the references, task path).",
        epilog="example: gpualign align reads.fa windows.fa --mode semi-global --task path "
               "-o reads.sam")
    _add_pair_inputs(parser)
    parser.add_argument("--all-vs-all", action="store_true",
                        help="align every query with every target instead of pairing records "
                             "by order")
    parser.add_argument("--mode", choices=("global", "local", "semi-global", "overlap"),
                        default="global",
                        help="global: end to end (NW); local: best local alignment (SW); "
                             "semi-global: the query end to end, target ends free; overlap: "
                             "all four ends free (default: global)")
    parser.add_argument("--task", choices=("score", "end", "path"), default="score",
                        help="score only; end adds where the alignment ends; path adds where "
                             "it starts, the CIGAR and the identity (default: score)")
    _add_scoring_options(parser)
    parser.add_argument("--format", choices=("tsv", "sam"), default=None,
                        help="output format (default: sam when -o ends in .sam, else tsv)")
    _add_backend_option(parser)
    _add_output_options(parser)
    parser.set_defaults(run=run_align)


def _add_scoring_options(parser: argparse.ArgumentParser) -> None:
    """--match/--mismatch or --matrix, and the gap costs (see :func:`_scoring`)."""
    parser.set_defaults(alphabet=None)  # dna, or protein with --matrix
    parser.add_argument("--match", type=int, default=2, help="match score (default 2)")
    parser.add_argument("--mismatch", type=int, default=-3, help="mismatch score (default -3)")
    parser.add_argument("--matrix", metavar="NAME|FILE", default=None,
                        help=f"substitution matrix instead of --match/--mismatch: one of "
                             f"{', '.join(MATRICES)} or an NCBI-format file; implies "
                             "--alphabet protein unless given")
    parser.add_argument("--gap-open", type=int, default=None,
                        help="cost of a gap's first symbol (default 5; 11 with --matrix)")
    parser.add_argument("--gap-extend", type=int, default=None,
                        help="cost of each further symbol (default 2; 1 with --matrix)")


def _alignment_columns(queries: SequenceSet, targets: SequenceSet, result) -> list:
    """The columns of :data:`ALIGN_COLUMNS` for an AlignResult or AllPairs (values that were
    not computed, such as starts without ``task="path"``, are written as ``*``)."""
    missing = [None] * len(result)
    return [
        [queries.names[i] for i in result.query_index.tolist()],
        [targets.names[i] for i in result.target_index.tolist()],
        ([f"{x:.4f}" for x in result.identity.tolist()] if result.identity is not None
         else missing),
        result.score,
        _star(result.query_start), _star(result.query_end),
        _star(result.target_start), _star(result.target_end),
        result.cigar if result.cigar is not None else missing,
    ]


def _scoring(args: argparse.Namespace) -> Scoring:
    """The Scoring the options describe; also settles the alphabet (protein with a matrix)."""
    if args.alphabet is None:
        args.alphabet = "protein" if args.matrix is not None else "dna"
    if args.matrix is None:
        return Scoring(match=args.match, mismatch=args.mismatch,
                       gap_open=5 if args.gap_open is None else args.gap_open,
                       gap_extend=2 if args.gap_extend is None else args.gap_extend)
    gaps = {"gap_open": 11 if args.gap_open is None else args.gap_open,
            "gap_extend": 1 if args.gap_extend is None else args.gap_extend}
    if os.path.isfile(args.matrix):
        return Scoring.from_file(args.matrix, **gaps)
    return Scoring.matrix(args.matrix, **gaps)


def run_align(args: argparse.Namespace) -> int:
    """Run ``gpualign align`` on the parsed ``args``; return the exit status (0;
    errors raise and :func:`main` turns them into status 2)."""
    from .align import align
    began = time.perf_counter()
    scoring = _scoring(args)  # bad matrices and gap costs fail before any reading
    backend = resolve_backend(args.backend)
    sam = args.format == "sam" or (args.format is None and str(args.output).endswith(".sam"))
    task = "path" if sam else args.task
    _check_output(args.output)
    queries, targets = _read_pair_inputs(args)
    q_index, t_index, shape = _record_pairs(args, len(queries), len(targets))
    result = align(queries, targets, mode=args.mode, scoring=scoring, task=task,
                   backend=args.backend, pairs=(q_index, t_index))
    with _open_output(args.output) as out:
        if sam:
            write_sam(out, queries, targets, q_index, t_index, result,
                      " ".join([PROG, *sys.argv[1:]]))
        else:
            write_tsv(out, ALIGN_COLUMNS, _alignment_columns(queries, targets, result))
    where = _destination(args)
    _report(args, f"{shape}, mode {args.mode}, {scoring.describe()}, task {task}: "
                  f"{_plural(len(result), 'row')} written{where} in "
                  f"{time.perf_counter() - began:.2f} s "
                  f"(backend {'cpu' if task == 'path' else backend})")  # CIGARs: CPU only yet
    return 0


# --------------------------------------------------------------------------- allpairs


def _add_allpairs_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "allpairs", help="every pair of a set at or above a percent identity",
        description="Every unordered pair of SEQS (or every pair of SEQS x OTHERS) whose "
                    "identity in its optimal global alignment reaches --min-identity. A "
                    "lossless cascade (length bound, edit-distance bound) spares most pairs "
                    "the alignment. Writes a TSV table: query, target, identity, score, "
                    "query_start, query_end, target_start, target_end (0-based, half-open), "
                    "cigar (=/X/I/D, I consumes the query).",
        epilog="example: gpualign allpairs tests/data/rdp16s_200.fasta.gz --min-identity 0.9 "
               "--invalid wildcard -o pairs.tsv")
    parser.add_argument("seqs", metavar="SEQS",
                        help="FASTA/FASTQ file (.gz, .bz2, .xz accepted)")
    parser.add_argument("others", metavar="OTHERS", nargs="?", default=None,
                        help="optional second file: compare SEQS x OTHERS instead of the pairs "
                             "within SEQS")
    _add_encoding_options(parser)
    parser.add_argument("--min-identity", type=float, default=0.97,
                        help="keep pairs with at least this identity (default 0.97)")
    parser.add_argument("--identity", choices=("columns", "shorter"), default="columns",
                        help="columns: matches / alignment columns; shorter: matches / length "
                             "of the shorter sequence (default: columns)")
    parser.add_argument("--no-align", action="store_true",
                        help="leave out the cigar column")
    _add_scoring_options(parser)
    parser.add_argument("--checkpoint", metavar="DIR", default=None,
                        help="keep finished tiles in DIR; a rerun with the same DIR resumes")
    cluster = parser.add_mutually_exclusive_group()
    cluster.add_argument("--scheduler", metavar="ADDRESS", default=None,
                         help="run the tiles on the Dask cluster at ADDRESS "
                              "(e.g. tcp://host:8786); needs gpualign[distributed]")
    cluster.add_argument("--workers", type=_positive_int, default=None, metavar="N",
                         help="start a local Dask cluster of N worker processes for this run: "
                              "one per GPU (pinned to it, resource GPU=1), the others on the "
                              "CPU")
    _add_backend_option(parser)
    _add_output_options(parser)
    parser.set_defaults(run=run_allpairs)


@contextlib.contextmanager
def _dask_client(args: argparse.Namespace) -> Iterator[object]:
    """The Dask client of ``--scheduler``/``--workers`` (None without either)."""
    if args.scheduler is None and args.workers is None:
        yield None
        return
    if args.scheduler is not None:
        try:
            import distributed
        except ImportError:
            raise ValueError("--scheduler needs Dask: pip install 'gpualign[distributed]'") \
                from None
        with distributed.Client(args.scheduler) as client:
            yield client
        return
    from .allpairs.cluster import local_cluster
    with local_cluster(args.workers, args.backend) as client:
        yield client


def run_allpairs(args: argparse.Namespace) -> int:
    """Run ``gpualign allpairs`` on the parsed ``args``; return the exit status (0;
    errors raise and :func:`main` turns them into status 2)."""
    from .allpairs import allpairs
    began = time.perf_counter()
    scoring = _scoring(args)
    backend = resolve_backend(args.backend)
    _check_output(args.output)
    seqs = _read_sequences(args.seqs, args)
    others = _read_sequences(args.others, args) if args.others is not None else None
    with _dask_client(args) as client:
        hits = allpairs(seqs, others, min_identity=args.min_identity, scoring=scoring,
                        identity=args.identity, align=not args.no_align,
                        checkpoint=args.checkpoint, client=client, alphabet=args.alphabet,
                        invalid=args.invalid, backend=args.backend, progress=not args.quiet)
    targets = seqs if others is None else others
    with _open_output(args.output) as out:
        write_tsv(out, ALIGN_COLUMNS, _alignment_columns(seqs, targets, hits))
    stages = hits.stages
    where = _destination(args)
    _report(args, f"{stages['pairs']} pairs; after the length bound {stages['length']}, after "
                  f"the edit-distance bound {stages['edit']}, aligned {stages['aligned']}, "
                  f"identity >= {args.min_identity:g} ({args.identity}): "
                  f"{_plural(len(hits), 'row')} written{where} in "
                  f"{time.perf_counter() - began:.2f} s (stages: "
                  + ", ".join(f"{k} {v:.2f} s" for k, v in hits.seconds.items())
                  + f"; backend {backend})")
    return 0


# --------------------------------------------------------------------------- index, mems


def _add_index_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "index", help="index a reference for gpualign mems",
        description="Build the MEM index of a DNA reference (suffix array and k-mer table; "
                    "symbols other than A/C/G/T are read as N, which matches nothing) and "
                    "write it to a file that gpualign mems reads instead of the FASTA.",
        epilog="example: gpualign index examples/hiv_reference.fa -o hiv.gpuidx")
    parser.add_argument("reference", metavar="REF", help="FASTA file (.gz accepted)")
    parser.add_argument("-o", "--output", required=True, metavar="REF.gpuidx",
                        help="where to write the index")
    _add_backend_option(parser)
    parser.add_argument("-q", "--quiet", action="store_true", help="no summary line")
    parser.set_defaults(run=run_index)


def run_index(args: argparse.Namespace) -> int:
    """Run ``gpualign index`` on the parsed ``args``; return the exit status (0;
    errors raise and :func:`main` turns them into status 2)."""
    from .mems import build_index
    began = time.perf_counter()
    _check_output(args.output)
    index = build_index(Path(args.reference), backend=args.backend)
    index.save(args.output)
    _report(args, f"{_plural(len(index.names), 'record')}, {int(index.lengths.sum())} bp -> "
                  f"{args.output} in {time.perf_counter() - began:.2f} s")
    return 0


def _add_mems_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "mems", help="maximal exact matches between reads and a reference (MUMmer format)",
        description="All maximal exact matches of at least -l bases between every read and "
                    "the reference, every occurrence (mummer -maxmatch). Only A/C/G/T match, "
                    "in any case (N and IUPAC codes match nothing: as mummer -maxmatch -n). "
                    "Output: MUMmer's format (> read, > read Reverse; ref_id ref_pos "
                    "query_pos length, 1-based; ref_id only for several reference records "
                    "or -F), or a TSV table (0-based).",
        epilog="example: gpualign mems examples/hiv_reference.fa examples/hiv_reads.fa -l 20 -b")
    parser.add_argument("reference", metavar="REF",
                        help="FASTA file (.gz accepted) or an index from gpualign index")
    parser.add_argument("reads", metavar="READS", help="FASTA/FASTQ file (.gz accepted)")
    parser.add_argument("-l", "--min-length", type=_positive_int, default=20, metavar="L",
                        help="minimum match length (default 20)")
    strands = parser.add_mutually_exclusive_group()
    strands.add_argument("-b", "--both", action="store_true",
                         help="forward and reverse-complement matches")
    strands.add_argument("-r", "--reverse", action="store_true",
                         help="reverse-complement matches only")
    parser.add_argument("-c", dest="forward_positions", action="store_true",
                        help="reverse matches: query position relative to the forward read")
    parser.add_argument("-F", dest="four_columns", action="store_true",
                        help="always write the ref_id column")
    parser.add_argument("-L", dest="lengths", action="store_true",
                        help="read lengths on the header lines")
    parser.add_argument("--format", choices=("mummer", "tsv"), default="mummer",
                        help="output format (default: mummer)")
    _add_backend_option(parser)
    _add_output_options(parser)
    parser.set_defaults(run=run_mems)


def run_mems(args: argparse.Namespace) -> int:
    """Run ``gpualign mems`` on the parsed ``args``; return the exit status (0;
    errors raise and :func:`main` turns them into status 2)."""
    from .mems import MemIndex, find_mems
    began = time.perf_counter()
    _check_output(args.output)
    try:
        reference = MemIndex.load(args.reference)
    except (ValueError, OSError, KeyError):  # not an index: a FASTA file, indexed by find_mems
        reference = Path(args.reference)
    strands = "both" if args.both else "reverse" if args.reverse else "forward"
    backend = resolve_backend(args.backend)
    with _reading(args.reads):
        mems = find_mems(reference, Path(args.reads), min_length=args.min_length,
                         strands=strands, backend=backend)
    with _open_output(args.output) as out:
        if args.format == "tsv":
            write_tsv(out, MEM_COLUMNS, [
                [mems.query_names[i] for i in mems.query_index.tolist()],
                ["-" if r else "+" for r in mems.reverse.tolist()],
                [mems.reference_names[i] for i in mems.reference_index.tolist()],
                mems.reference_pos, mems.query_pos, mems.length])
        else:
            write_mummer(out, mems, strands, four_columns=args.four_columns or None,
                         forward_positions=args.forward_positions, lengths=args.lengths,
                         backend=backend)
    where = _destination(args)
    _report(args, f"{_plural(len(mems.query_names), 'read')} ({strands}) against "
                  f"{_plural(len(mems.reference_names), 'reference record')}, l = "
                  f"{args.min_length}: {_plural(len(mems), 'MEM')}{where} in "
                  f"{time.perf_counter() - began:.2f} s (backend {backend})")
    return 0


# --------------------------------------------------------------------------- lcs


def _add_lcs_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "lcs", help="longest common subsequence: the best subjects of each query",
        description="LCS of every query with every subject; the subjects are streamed from "
                    "their file in batches, so the collection may be larger than memory. Writes "
                    "a TSV table: by default the --top N subjects of each query (query, subject, "
                    "rank, lcs_length, query_length, subject_length, lcs), longer LCS first and "
                    "ties in subject file order; with --all the LCS length of every subject "
                    "(query, subject, lcs_length, query_length, subject_length), subjects in "
                    "file order, the rows of one query together.",
        epilog="example: gpualign lcs query.fa tests/data/rdp16s_200.fasta.gz --top 5 "
               "--invalid wildcard -o best.tsv")
    parser.add_argument("query", metavar="QUERY",
                        help="FASTA/FASTQ file whose every record is a query, usually one "
                             "(.gz, .bz2, .xz accepted)")
    parser.add_argument("subjects", metavar="SUBJECTS",
                        help="FASTA/FASTQ file of subjects, streamed (.gz, .bz2, .xz accepted)")
    _add_encoding_options(parser)
    report = parser.add_mutually_exclusive_group()
    report.add_argument("--top", type=_positive_int, default=10, metavar="N",
                        help="write the N subjects with the longest LCS for each query "
                             "(default: 10)")
    report.add_argument("--all", action="store_true",
                        help="write the LCS length of every subject instead of the top N")
    parser.add_argument("--no-strings", action="store_true",
                        help="leave out the lcs column (one longest common subsequence per "
                             "reported subject, computed on the CPU)")
    _add_backend_option(parser)
    parser.add_argument("--devices", type=_device_list, default=None, metavar="IDS",
                        help="GPUs to split the subjects over, e.g. 0,1 (CUDA backend only; "
                             "default: the current GPU)")
    _add_output_options(parser)
    parser.set_defaults(run=run_lcs)


def _changed(path: str, detail: str) -> SequenceFileError:
    return SequenceFileError(f"{path}: changed while being read ({detail}); read it again")


def _write_rows(out: TextIO, columns: Sequence[object]) -> None:
    """Rows as :func:`~gpualign.io.write_tsv` formats them, without its header line (for tables
    written in chunks)."""
    buffer = io.StringIO()
    write_tsv(buffer, (), columns)  # an empty header is one bare newline
    out.write(buffer.getvalue()[1:])


def _write_all_rows(out: TextIO, path: str, query: str, query_length: int,
                    lengths: np.ndarray, progress: bool) -> None:
    """Rows of ``gpualign lcs --all`` for one query: the subject names and lengths come from a
    second streamed pass over ``path`` (the length API returns lengths only)."""
    names: list[str] = []
    sizes: list[int] = []
    count = len(lengths)
    bar = progress_bar(count, progress, "write", unit="subject")

    def flush(end: int) -> None:
        start = end - len(names)
        _write_rows(out, [[query] * len(names), names, lengths[start:end],
                          [query_length] * len(names), sizes])
        bar.update(len(names))
        names.clear()
        sizes.clear()

    index = -1
    try:
        with contextlib.closing(read_records(path)) as records:
            for index, (name, sequence) in enumerate(records):
                if index >= count:
                    raise _changed(path, f"more than {_plural(count, 'record')}")
                names.append(name)
                sizes.append(len(sequence))
                if len(names) == _LCS_ALL_CHUNK:
                    flush(index + 1)
        if index + 1 != count:
            raise _changed(path, f"{_plural(index + 1, 'record')}, was {count}")
        flush(count)
    finally:
        bar.close()


def run_lcs(args: argparse.Namespace) -> int:
    """Run ``gpualign lcs`` on the parsed ``args``; return the exit status (0;
    errors raise and :func:`main` turns them into status 2)."""
    from .lcs import lcs_length_matrix, lcs_top
    began = time.perf_counter()
    backend = resolve_backend(args.backend)  # fail early, before reading large files
    _check_output(args.output)
    progress = not args.quiet
    queries = _read_sequences(args.query, args)
    n_q = len(queries)
    if n_q == 0:
        raise ValueError(f"{args.query}: no records: QUERY must hold at least one sequence")
    # A Path, not a list: the API streams the file in batches.
    subjects = Path(args.subjects)
    options = {"alphabet": args.alphabet, "invalid": args.invalid, "backend": args.backend,
               "devices": args.devices, "progress": progress}

    if args.all:
        with _reading(args.subjects):
            matrix = lcs_length_matrix(queries, subjects, **options)
        n_s = matrix.shape[1]
        with _open_output(args.output) as out, _reading(args.subjects):
            write_tsv(out, LCS_ALL_COLUMNS, [])
            # One pass over the subjects per query keeps the rows of a query together without
            # holding every subject name in memory (QUERY usually holds one record).
            for q in range(n_q):
                _write_all_rows(out, args.subjects, queries.names[q],
                                int(queries.lengths[q]), matrix[q], progress)
        rows = n_q * n_s
        task = "all lengths"
    else:
        with_lcs = not args.no_strings
        with _reading(args.subjects):
            # lcs_top takes one query; each query streams the subjects once.
            tops = [lcs_top(queries.take(np.array([q])), subjects, args.top, with_lcs=with_lcs,
                            **options) for q in range(n_q)]
            n_s = tops[0].subjects
        columns = [
            [queries.names[q] for q, top in enumerate(tops) for _ in range(len(top))],
            [name for top in tops for name in top.name],
            [rank for top in tops for rank in range(1, len(top) + 1)],
            np.concatenate([top.length for top in tops]),
            [top.query_length for top in tops for _ in range(len(top))],
            np.concatenate([top.subject_length for top in tops]),
        ]
        header = LCS_TOP_COLUMNS
        if with_lcs:
            columns.append([text for top in tops for text in top.lcs])
        else:
            header = header[:-1]
        with _open_output(args.output) as out:
            write_tsv(out, header, columns)
        rows = len(columns[0])
        task = f"top {args.top}{'' if with_lcs else ' without strings'}"

    where = _destination(args)
    _report(args, f"{_plural(n_q, 'query', 'queries')} x {_plural(n_s, 'subject')}, {task}: "
                  f"{n_q * n_s} compared, {_plural(rows, 'row')} written{where} in "
                  f"{time.perf_counter() - began:.2f} s (backend {backend})")
    return 0


# --------------------------------------------------------------------------- entry point

#: Subcommand declarations, in the order ``gpualign --help`` lists them.
_COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (
    _add_edit_command, _add_align_command, _add_allpairs_command, _add_lcs_command,
    _add_index_command, _add_mems_command)


def build_parser() -> argparse.ArgumentParser:
    """Return the ``gpualign`` argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="GPU sequence comparison (CPU fallback): edit distance, alignment, LCS "
                    "and more. "
                    "Run 'gpualign COMMAND --help' for a command's options.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add_command in _COMMANDS:
        add_command(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (the console script exits with it).

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments without the program name (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success, 2 on bad usage or bad input, 130 when interrupted.

    Examples
    --------
    >>> main(["--version"])  # doctest: +SKIP
    gpualign 0.1.0
    0
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors: keep argparse's status
        if exc.code is None:
            return 0
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return args.run(args)
    except BrokenPipeError:  # pragma: no cover - e.g. piped into head (before OSError)
        # Python flushes stdout at exit; point it at devnull so that flush does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except USER_ERRORS as exc:
        message = str(exc) or type(exc).__name__
        if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
            message = f"{exc.filename}: {exc.strerror}"
        print(f"{PROG}: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # pragma: no cover - interactive
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
