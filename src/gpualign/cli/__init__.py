"""The ``gpualign`` command line.

One subcommand per capability, each in its own module (``gpualign.cli.edit``, ...) with
``add_command(subparsers)``, which declares it, and ``run(args)``, which runs it and returns the
exit status (``gpualign.cli.mems`` declares ``index`` too). A command's options are declared on
its first use (:class:`~gpualign.cli._common.CommandParser`), from the shared helpers of
``gpualign.cli._common``, with the defaults of the API they stand for. To add a subcommand, write
its module and list it in :data:`COMMANDS`.

Coordinates in the TSV output are 0-based, half-open, as in the Python API; ``*`` marks a value
that is not available (SAM's convention). The tables are those of the results' ``table``
methods.

Record names are the headers up to their first white space; a record without one is named
by its 0-based number in its file. Two records of one file with the same name are an error
unless ``--rename-duplicates`` (see :func:`~gpualign.cli._common.names_policy`).

Exit status: 0 on success, 2 on bad input (unreadable or malformed files, invalid symbols,
duplicate record names, mismatched record counts, bad options, CUDA asked for but absent),
130 when interrupted.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from .. import __version__
from .._tables import ALIGN_COLUMNS, EDIT_COLUMNS, LCS_ALL_COLUMNS, LCS_TOP_COLUMNS, MEM_COLUMNS
from ..backend import BackendUnavailableError
from ..io import SequenceFileError
from ..sequences import InvalidSymbolError
from . import align, allpairs, edit, info, lcs, makedb, map, mems, search, tune
from ._common import PROG, CommandParser, names_policy

__all__ = ["ALIGN_COLUMNS", "COMMANDS", "EDIT_COLUMNS", "LCS_ALL_COLUMNS", "LCS_TOP_COLUMNS",
           "MEM_COLUMNS", "build_parser", "main"]

#: The command modules, in the order ``gpualign --help`` lists their commands.
COMMANDS = (edit, align, allpairs, lcs, mems, map, search, makedb, info, tune)

#: Errors reported as ``gpualign: error: ...`` with exit status 2 and no traceback.
USER_ERRORS = (InvalidSymbolError, SequenceFileError, ValueError, BackendUnavailableError,
               OSError)


def build_parser() -> argparse.ArgumentParser:
    """Return the ``gpualign`` argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="GPU sequence comparison (CPU fallback): edit distance, alignment, LCS "
                    "and more. "
                    "Run 'gpualign COMMAND --help' for a command's options.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True,
                                       parser_class=CommandParser)
    for command in COMMANDS:
        command.add_command(subparsers)
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
        with names_policy(args):
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
        # One line, whatever a library put in its message (a record's text, say).
        print(f"{PROG}: error: {' '.join(message.splitlines())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # pragma: no cover - interactive
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
