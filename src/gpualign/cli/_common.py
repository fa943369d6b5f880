"""What the ``gpualign`` commands share: the parser of a command, the options several commands
take, argparse types, reading the inputs (errors name the file and the command-line options),
opening the output and the summary line."""

from __future__ import annotations

import argparse
import contextlib
import inspect
import io
import logging
import os
import secrets
import shutil
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from ..io import open_text
from ..scoring import (
    DEFAULT_GAP_EXTEND,
    DEFAULT_GAP_OPEN,
    DEFAULT_MATCH,
    DEFAULT_MATRIX_GAP_EXTEND,
    DEFAULT_MATRIX_GAP_OPEN,
    DEFAULT_MISMATCH,
    MATRICES,
    Scoring,
)
from ..sequences import AUTO, InvalidSymbolError, SequenceSet, resolve_alphabet

PROG = "gpualign"


class CommandParser(argparse.ArgumentParser):
    """The parser of one command, whose options are declared by ``declare(parser)`` when the
    parser is first used (to parse or to print help or usage).

    The declarations read defaults from the capability APIs (:func:`api_default`); declaring
    them late keeps ``gpualign --help`` from importing any API, and a run from importing those
    of the other commands (some load Numba, which a CUDA run leaves out).
    """

    def __init__(self, *args: Any,
                 declare: Callable[[argparse.ArgumentParser], None] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._declare = declare

    def _declared(self) -> None:
        if self._declare is not None:
            declare, self._declare = self._declare, None
            declare(self)

    def parse_known_args(self, args: Sequence[str] | None = None,
                         namespace: argparse.Namespace | None = None
                         ) -> tuple[argparse.Namespace, list[str]]:
        self._declared()
        return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        self._declared()
        return super().format_usage()

    def format_help(self) -> str:
        self._declared()
        return super().format_help()


def api_default(function: Callable[..., Any], parameter: str) -> Any:
    """The default of ``function``'s ``parameter``: an option that stands for an API argument
    takes its default from the API."""
    return inspect.signature(function).parameters[parameter].default


# --------------------------------------------------------------------------- argparse types


def non_negative_int(text: str) -> int:
    """argparse type: an integer >= 0."""
    return _int_at_least(text, 0)


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    return _int_at_least(text, 1)


def _int_at_least(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
    return value


def device_list(text: str) -> list[int]:
    """argparse type: a comma-separated list of GPU ordinals, e.g. ``0,1``."""
    try:
        return [non_negative_int(item.strip()) for item in text.split(",")]
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"expected GPU ids such as 0,1 ({exc})") from None


# --------------------------------------------------------------------------- shared options


def add_pair_inputs(parser: argparse.ArgumentParser) -> None:
    """QUERIES and TARGETS files plus the options that control how they are encoded."""
    parser.add_argument("queries", metavar="QUERIES",
                        help="FASTA/FASTQ file of queries (.gz, .bz2, .xz accepted)")
    parser.add_argument("targets", metavar="TARGETS",
                        help="FASTA/FASTQ file of targets (.gz, .bz2, .xz accepted)")
    add_encoding_options(parser)


def add_encoding_options(parser: argparse.ArgumentParser) -> None:
    """--alphabet and --invalid: how the symbols of every input file are encoded; and
    --rename-duplicates."""
    parser.add_argument("--alphabet", choices=(AUTO, "dna", "protein", "bytes"), default=AUTO,
                        help="sequence alphabet (default: auto = from the first records of the "
                             "inputs: dna, protein or bytes; protein with --matrix); in DNA, U "
                             "is read as T and N matches nothing; in protein U is read as C, O "
                             "as K and J as X")
    parser.add_argument("--invalid", choices=("error", "wildcard"), default="error",
                        help="symbols outside the alphabet: stop with an error naming the record "
                             "and position (default), or read them as the wildcard N/X")
    add_names_option(parser)


def add_names_option(parser: argparse.ArgumentParser) -> None:
    """--rename-duplicates: what to do about records of one file with the same name (see
    :func:`names_policy`)."""
    parser.add_argument("--rename-duplicates", action="store_true",
                        help="records of one input file with the same name (the header up "
                             "to its first white space): rename the later ones NAME.2, "
                             "NAME.3 ... with a warning, instead of stopping with an error")


def add_backend_option(parser: argparse.ArgumentParser) -> None:
    """--backend: where to compute."""
    parser.add_argument("--backend", choices=("auto", "cpu", "cuda"), default="auto",
                        help="where to compute (default: auto = $GPUALIGN_BACKEND if set, else "
                             "CUDA when CuPy and a GPU are present, else CPU)")


def add_cluster_options(parser: argparse.ArgumentParser, work: str) -> None:
    """--scheduler ADDRESS or --workers N: run ``work`` (e.g. "the tiles") on a Dask cluster
    (see :func:`dask_client`)."""
    cluster = parser.add_mutually_exclusive_group()
    cluster.add_argument("--scheduler", metavar="ADDRESS", default=None,
                         help=f"run {work} on the Dask cluster at ADDRESS "
                              "(e.g. tcp://host:8786); needs gpualign[distributed]")
    cluster.add_argument("--workers", type=positive_int, default=None, metavar="N",
                         help="start a local Dask cluster of N worker processes for this run: "
                              "one per GPU (pinned to it, resource GPU=1), the others on the "
                              "CPU")


@contextlib.contextmanager
def dask_client(args: argparse.Namespace) -> Iterator[object]:
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
    from ..allpairs.cluster import local_cluster
    # Dask's INFO lines (some 70 per run) are not for the user; --quiet drops its warnings and
    # errors too: a worker still beating its heart while the cluster shuts down logs an ERROR
    # and a traceback (seen on a loaded CI machine), and an error that matters reaches this
    # process as an exception anyway.
    with local_cluster(args.workers, args.backend,
                       logging.CRITICAL if args.quiet else logging.WARNING) as client:
        yield client


def add_output_options(parser: argparse.ArgumentParser) -> None:
    """-o/--output and -q/--quiet."""
    parser.add_argument("-o", "--output", metavar="OUT.tsv", default=None,
                        help="write the table here (default: standard output)")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress bar and no summary line on standard error")


def add_scoring_options(parser: argparse.ArgumentParser, *,
                        match: tuple[int, int] = (DEFAULT_MATCH, DEFAULT_MISMATCH),
                        gaps: tuple[int, int] = (DEFAULT_GAP_OPEN, DEFAULT_GAP_EXTEND),
                        matrix_gaps: tuple[int, int] = (DEFAULT_MATRIX_GAP_OPEN,
                                                        DEFAULT_MATRIX_GAP_EXTEND),
                        ) -> None:
    """--match/--mismatch or --matrix, and the gap costs (see :func:`scoring`); ``match``,
    ``gaps`` and ``matrix_gaps`` are the defaults of options left out (left as None in the
    parsed arguments, so that a command can tell that none was given)."""
    parser.add_argument("--match", type=int, default=None,
                        help=f"match score (default {match[0]})")
    parser.add_argument("--mismatch", type=int, default=None,
                        help=f"mismatch score (default {match[1]})")
    parser.add_argument("--matrix", metavar="NAME|FILE", default=None,
                        help=f"substitution matrix instead of --match/--mismatch: one of "
                             f"{', '.join(MATRICES)} or an NCBI-format file; implies "
                             "--alphabet protein unless given")
    parser.add_argument("--gap-open", type=int, default=None,
                        help=f"cost of a gap's first symbol (default {gaps[0]}; "
                             f"{matrix_gaps[0]} with --matrix)")
    parser.add_argument("--gap-extend", type=int, default=None,
                        help=f"cost of each further symbol (default {gaps[1]}; "
                             f"{matrix_gaps[1]} with --matrix)")
    parser.set_defaults(scoring_defaults=(match, gaps, matrix_gaps))


def scoring(args: argparse.Namespace) -> Scoring:
    """The Scoring the options describe; options left out take the defaults that
    :func:`add_scoring_options` was given (by default those of :class:`~gpualign.Scoring`
    or, with a matrix, of :meth:`Scoring.matrix <gpualign.Scoring.matrix>`)."""
    (match, mismatch), gaps, matrix_gaps = args.scoring_defaults
    gap_open, gap_extend = matrix_gaps if args.matrix is not None else gaps
    gap_open = gap_open if args.gap_open is None else args.gap_open
    gap_extend = gap_extend if args.gap_extend is None else args.gap_extend
    if args.matrix is None:
        return Scoring(match=match if args.match is None else args.match,
                       mismatch=mismatch if args.mismatch is None else args.mismatch,
                       gap_open=gap_open, gap_extend=gap_extend)
    if os.path.isfile(args.matrix):
        return Scoring.from_file(args.matrix, gap_open=gap_open, gap_extend=gap_extend)
    return Scoring.matrix(args.matrix, gap_open=gap_open, gap_extend=gap_extend)


# --------------------------------------------------------------------------- inputs


def symbol_error(path: str, exc: InvalidSymbolError) -> InvalidSymbolError:
    """``exc`` with the file name in front and the command-line options in its hint (the
    library's hint names Python keywords)."""
    message = (str(exc).replace("invalid='wildcard'", "--invalid wildcard")
               .replace("alphabet='protein'/'bytes'", "--alphabet protein/bytes"))
    return InvalidSymbolError(f"{path}: {message}")


@contextlib.contextmanager
def names_policy(args: argparse.Namespace) -> Iterator[None]:
    """Run a command with its inputs' record names checked: records of one file with the same
    name stop it with an error (exit status 2) that names both records, or with
    ``--rename-duplicates`` are renamed (:data:`gpualign.config.DUPLICATE_NAMES`) and one line
    ``gpualign: warning: ...`` per file says so, even where a file is read twice."""
    from .. import config
    from ..io import DuplicateNameError, DuplicateNameWarning

    def show(message: Warning | str, category: type[Warning], *rest: Any, **options: Any
             ) -> None:
        if issubclass(category, DuplicateNameWarning):
            print(f"{PROG}: warning: {message}", file=sys.stderr)
        else:
            shown(message, category, *rest, **options)

    with warnings.catch_warnings():
        shown = warnings.showwarning
        warnings.showwarning = show
        warnings.simplefilter("once", DuplicateNameWarning)
        try:
            with config.override(DUPLICATE_NAMES="rename" if args.rename_duplicates
                                 else "error"):
                yield
        except DuplicateNameError as exc:  # the hint names the option, not the API argument
            raise DuplicateNameError(str(exc).replace("duplicates='rename'",
                                                      "--rename-duplicates")) from exc


@contextlib.contextmanager
def reading(path: str) -> Iterator[None]:
    """Invalid-symbol errors met while reading ``path`` (at once or streamed) get the file name
    and the CLI options."""
    try:
        yield
    except InvalidSymbolError as exc:
        raise symbol_error(path, exc) from exc


def settle_alphabet(args: argparse.Namespace, *paths: str | None) -> None:
    """Turn ``--alphabet auto`` into the alphabet that the first records of the input files
    ``paths`` imply together (protein with ``--matrix``; see
    :func:`~gpualign.sequences.resolve_alphabet`), before any of them is read: queries and
    targets get one alphabet. ``args.alphabet_inferred`` tells the summary line."""
    args.alphabet_inferred = args.alphabet == AUTO
    if args.alphabet_inferred:
        sources = [Path(path) for path in paths if path is not None]
        matrix = getattr(args, "matrix", None) is not None  # only some commands take --matrix
        args.alphabet = resolve_alphabet(AUTO, *sources, matrix=matrix)[0].name


def describe_alphabet(args: argparse.Namespace) -> str:
    """The alphabet for the summary line, e.g. ``alphabet dna (inferred)``."""
    return f"alphabet {args.alphabet}{' (inferred)' if args.alphabet_inferred else ''}"


def read_sequences(path: str, args: argparse.Namespace) -> SequenceSet:
    """Encode one FASTA/FASTQ file; errors name the file and the CLI options."""
    with reading(path):
        return SequenceSet.from_file(path, args.alphabet, invalid=args.invalid)


def read_pair_inputs(args: argparse.Namespace) -> tuple[SequenceSet, SequenceSet]:
    """Encode QUERIES and TARGETS (once when both name the same file) in one alphabet."""
    settle_alphabet(args, args.queries, args.targets)
    queries = read_sequences(args.queries, args)
    if os.path.exists(args.targets) and os.path.samefile(args.queries, args.targets):
        return queries, queries
    return queries, read_sequences(args.targets, args)


def record_pairs(args: argparse.Namespace, n_q: int,
                 n_t: int) -> tuple[np.ndarray, np.ndarray, str]:
    """The pairs of a pairwise command: records by order, or every query with every target
    (``--all-vs-all``); returns the index arrays and a description for the summary."""
    if args.all_vs_all:
        return (np.repeat(np.arange(n_q, dtype=np.int64), n_t),
                np.tile(np.arange(n_t, dtype=np.int64), n_q), f"{n_q} x {n_t} all-vs-all")
    if n_q != n_t:
        raise ValueError(f"{args.queries} has {plural(n_q, 'record')} but {args.targets} "
                         f"has {plural(n_t, 'record')}: "
                         "pairs are formed by record order; use --all-vs-all to compare "
                         "every query with every target")
    index = np.arange(n_q, dtype=np.int64)
    return index, index, plural(n_q, "pair")


# --------------------------------------------------------------------------- output


def check_output(path: str | None, inputs: Sequence[str | None] = ()) -> None:
    """Fail before any work when ``path`` cannot be written (its folder is missing or locked)
    or is one of the ``inputs`` (None: an input not given): opening it for writing would empty
    that input before it is read."""
    if path is None or path == "-":
        return
    for source in inputs:
        if source is not None and os.path.exists(path) and os.path.exists(source) \
                and os.path.samefile(path, source):
            raise ValueError(f"{path}: the output file is the input {source}; writing would "
                             "destroy it (choose another -o)")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(2, "no such folder for the output file", path)
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise PermissionError(13, "output file not writable", path)


@contextlib.contextmanager
def open_output(path: str | None) -> Iterator[TextIO]:
    """Yield standard output (``path`` None or ``-``), or a file that replaces ``path`` when the
    command succeeds (:func:`replaced_on_success`): a bad input met after the first lines leaves
    no partial output."""
    with replaced_on_success(path) as target, open_text(target) as handle:
        yield handle


@contextlib.contextmanager
def replaced_on_success(path: str | None) -> Iterator[str]:
    """The name under which to write the contents of the output file ``path``: a new file in
    its folder that replaces ``path`` (the file a link names, keeping the link and the old
    file's permissions) when the block ends, and is removed when the block raises; a failed
    run (a bad input met after the first lines, an interrupt) leaves neither a partial output
    nor a damaged previous file. Standard output (None or ``-``) and what is not a regular
    file (a pipe, a device) are written directly: they cannot be replaced.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "out.sam")
    ...     with replaced_on_success(path) as partial, open(partial, "w") as handle:
    ...         _ = handle.write("@HD")
    ...     with open(path) as handle:
    ...         handle.read(), os.listdir(folder)
    ('@HD', ['out.sam'])
    """
    if path is None or path == "-" or (os.path.exists(path) and not os.path.isfile(path)):
        yield path or "-"
        return
    final = os.path.realpath(path)
    folder, name = os.path.split(final)
    partial = os.path.join(folder, f".{name}.{os.getpid()}.{secrets.token_hex(4)}.part")
    open(partial, "x").close()  # "x": a name of our own, with the user's default permissions
    try:
        if os.path.exists(final):
            shutil.copymode(final, partial)
        yield partial
        os.replace(partial, final)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(partial)
        raise


def write_rows(out: TextIO, columns: Sequence[object]) -> None:
    """Rows as :func:`~gpualign.io.write_tsv` formats them, without its header line (tables
    written in parts, and formats without one)."""
    from ..io import write_tsv

    buffer = io.StringIO()
    write_tsv(buffer, (), columns)  # an empty header is one bare newline
    out.write(buffer.getvalue()[1:])


def plural(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun``, in the plural unless ``count`` is 1 (``noun + "s"`` unless
    ``plural`` is given)."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def report(args: argparse.Namespace, message: str) -> None:
    """Print a summary line on standard error unless ``--quiet``."""
    if not args.quiet:
        print(f"{PROG} {args.command}: {message}", file=sys.stderr)


def destination(args: argparse.Namespace) -> str:
    """`` -> FILE`` for the summary line when the output goes to a file."""
    return f" -> {args.output}" if args.output not in (None, "-") else ""
