"""The codes that the Python side and the kernels share: modes, tasks and CIGAR operations.

This module is their one source. Every backend takes them from here (a CUDA run never loads a
CPU backend for a constant), and the kernels get them as enumerators that
:func:`kernel_preamble` generates and :mod:`gpualign.cuda.loader` puts before every ``.cu``
source, so a code cannot differ between Python and C++.
"""

from __future__ import annotations

__all__ = [
    "ALIGN_MODE_NAMES",
    "ALIGN_TASKS",
    "CIGAR_OPS",
    "EDIT_MODE_NAMES",
    "EDIT_TASKS",
    "SEARCH_TASKS",
    "align_mode",
    "check_task",
    "edit_mode",
    "kernel_preamble",
]

# Edit distance (edlib's NW, SHW and HW).
EDIT_GLOBAL, EDIT_PREFIX, EDIT_INFIX = 0, 1, 2
# Alignment: Needleman-Wunsch, Smith-Waterman, the query end to end with free target ends
# (parasail sg_dx), all four ends free (parasail sg).
ALIGN_GLOBAL, ALIGN_LOCAL, ALIGN_SEMI_GLOBAL, ALIGN_OVERLAP = 0, 1, 2, 3
# Operations of an extended CIGAR, in the order of CIGAR_OPS: every traceback writes these.
OP_MATCH, OP_MISMATCH, OP_INSERTION, OP_DELETION = 0, 1, 2, 3

#: CIGAR letters of the operation codes ``OP_*``. SAM convention: ``I`` consumes the query.
CIGAR_OPS = "=XID"

EDIT_TASKS = ("distance", "locations", "path")
ALIGN_TASKS = ("score", "end", "path")
SEARCH_TASKS = ("score", "locations", "path")

_EDIT_MODES = {"global": EDIT_GLOBAL, "nw": EDIT_GLOBAL, "prefix": EDIT_PREFIX,
               "shw": EDIT_PREFIX, "infix": EDIT_INFIX, "hw": EDIT_INFIX}
#: The canonical name of each edit mode code.
EDIT_MODE_NAMES = {EDIT_GLOBAL: "global", EDIT_PREFIX: "prefix", EDIT_INFIX: "infix"}

_ALIGN_MODES = {"global": ALIGN_GLOBAL, "nw": ALIGN_GLOBAL, "local": ALIGN_LOCAL,
                "sw": ALIGN_LOCAL, "semi-global": ALIGN_SEMI_GLOBAL,
                "semiglobal": ALIGN_SEMI_GLOBAL, "overlap": ALIGN_OVERLAP}
#: The canonical name of each alignment mode code.
ALIGN_MODE_NAMES = {ALIGN_GLOBAL: "global", ALIGN_LOCAL: "local",
                    ALIGN_SEMI_GLOBAL: "semi-global", ALIGN_OVERLAP: "overlap"}


def edit_mode(mode: str) -> int:
    """The code of an edit-distance mode name (edlib's names accepted, any case).

    Examples
    --------
    >>> edit_mode("HW") == EDIT_INFIX
    True
    """
    try:
        return _EDIT_MODES[mode.lower()]
    except (KeyError, AttributeError):
        raise ValueError(f"mode={mode!r}: expected global/NW, infix/HW or prefix/SHW") from None


def align_mode(mode: str) -> int:
    """The code of an alignment mode name (``NW``/``SW`` accepted, any case).

    Examples
    --------
    >>> align_mode("SW") == ALIGN_LOCAL
    True
    """
    try:
        return _ALIGN_MODES[str(mode).lower()]
    except KeyError:
        raise ValueError(f"mode={mode!r}: expected one of global (NW), local (SW), "
                         "semi-global, overlap") from None


def check_task(task: str, tasks: tuple[str, ...]) -> str:
    """``task`` if it is one of ``tasks``, else a ValueError listing them."""
    if task not in tasks:
        raise ValueError(f"task={task!r}: expected one of {', '.join(tasks)}")
    return task


#: The names the kernels see, with their values (see :func:`kernel_preamble`).
_KERNEL_CODES = {
    "EDIT_GLOBAL": EDIT_GLOBAL, "EDIT_PREFIX": EDIT_PREFIX, "EDIT_INFIX": EDIT_INFIX,
    "ALIGN_GLOBAL": ALIGN_GLOBAL, "ALIGN_LOCAL": ALIGN_LOCAL,
    "ALIGN_SEMI_GLOBAL": ALIGN_SEMI_GLOBAL, "ALIGN_OVERLAP": ALIGN_OVERLAP,
    "OP_MATCH": OP_MATCH, "OP_MISMATCH": OP_MISMATCH, "OP_INSERTION": OP_INSERTION,
    "OP_DELETION": OP_DELETION,
}


def kernel_preamble() -> str:
    """C++ definitions of every shared code, put before each kernel source: enumerators of an
    unnamed ``int`` enum (unlike ``constexpr`` variables, NVRTC does not warn about the ones a
    kernel leaves unused).

    Examples
    --------
    >>> "    OP_DELETION = 3," in kernel_preamble()
    True
    """
    lines = ["// Generated from gpualign/codes.py by the kernel loader: do not edit.",
             "enum : int {"]
    lines += [f"    {name} = {value}," for name, value in _KERNEL_CODES.items()]
    return "\n".join(lines + ["};"]) + "\n"
