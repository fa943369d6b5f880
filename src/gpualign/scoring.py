"""Scoring schemes for alignment: match/mismatch or a substitution matrix, linear or affine gaps.

Gaps follow parasail's convention: a gap of length ``L`` costs ``gap_open + (L - 1) *
gap_extend``; the penalties are given as positive costs. Linear gaps are ``gap_open ==
gap_extend``. The standard NCBI matrices BLOSUM45/50/62/80/90 and PAM30/70/250 are shipped as
NCBI BLAST distributes them (``gpualign/matrices``, copied from Debian's ``ncbi-data``; BLOSUM80
is in half bits, as BLAST's, where parasail ships Henikoff's third-bit original); other
NCBI-format files are read with :meth:`Scoring.from_file`. Rows of symbols outside the alphabet
are not used: the protein alphabet reads ``J`` as ``X`` (and ``U``, ``O`` as ``C``, ``K``), so
the shipped matrices' ``J`` row is not used.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from importlib import resources

import numpy as np

from .sequences import Alphabet, SequenceSet, get_alphabet

__all__ = ["DEFAULT_GAP_EXTEND", "DEFAULT_GAP_OPEN", "DEFAULT_MATCH", "DEFAULT_MATRIX_GAP_EXTEND",
           "DEFAULT_MATRIX_GAP_OPEN", "DEFAULT_MISMATCH", "MATRICES", "Scoring"]

#: Names of the shipped substitution matrices.
MATRICES = ("BLOSUM45", "BLOSUM50", "BLOSUM62", "BLOSUM80", "BLOSUM90", "PAM30", "PAM70",
            "PAM250")

#: Defaults of :class:`Scoring` (match/mismatch scores and gap costs; the command line's too).
DEFAULT_MATCH = 2
DEFAULT_MISMATCH = -3
DEFAULT_GAP_OPEN = 5
DEFAULT_GAP_EXTEND = 2
#: Default gap costs of a substitution matrix (:meth:`Scoring.matrix`, :meth:`Scoring.from_file`).
DEFAULT_MATRIX_GAP_OPEN = 11
DEFAULT_MATRIX_GAP_EXTEND = 1


@dataclass(frozen=True)
class Scoring:
    """How an alignment is scored: substitution scores and affine gap costs.

    Parameters
    ----------
    match, mismatch : int
        Score of two equal symbols and of two different ones (without a matrix). In the DNA
        alphabet ``N`` matches nothing, not even ``N``: it always scores ``mismatch``.
    gap_open, gap_extend : int
        Positive costs, ``gap_open >= gap_extend``: a gap of length ``L`` costs
        ``gap_open + (L - 1) * gap_extend`` (parasail's convention; linear gaps when they are
        equal).

    Examples
    --------
    >>> Scoring(match=2, mismatch=-3, gap_open=5, gap_extend=2).gap_cost(3)
    9
    >>> blosum = Scoring.matrix("BLOSUM62", gap_open=11, gap_extend=1)
    >>> blosum.score("W", "W"), blosum.score("W", "A")
    (11, -3)
    """

    match: int = DEFAULT_MATCH
    mismatch: int = DEFAULT_MISMATCH
    gap_open: int = DEFAULT_GAP_OPEN
    gap_extend: int = DEFAULT_GAP_EXTEND
    #: Name of the substitution matrix (None: match/mismatch).
    matrix_name: str | None = None
    #: Symbols of the matrix's rows and columns, and its scores.
    matrix_symbols: bytes = b""
    matrix_scores: np.ndarray | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("match", "mismatch", "gap_open", "gap_extend"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"{name} must be an integer, got {value!r}")
            object.__setattr__(self, name, int(value))
        if self.gap_open < 0 or self.gap_extend < 0:
            raise ValueError(
                f"gap_open={self.gap_open}, gap_extend={self.gap_extend}: gap penalties are "
                "positive costs (a gap of length L costs gap_open + (L-1)*gap_extend)")
        if self.gap_open < self.gap_extend:
            # Otherwise two adjacent gaps cost less than one long gap, and the cost of a gap
            # in a CIGAR is no longer gap_open + (L-1)*gap_extend.
            raise ValueError(f"gap_open={self.gap_open} < gap_extend={self.gap_extend}: "
                             "opening a gap must cost at least as much as extending one")

    # --- construction ---------------------------------------------------------------------------

    @classmethod
    def matrix(cls, name: str, *, gap_open: int = DEFAULT_MATRIX_GAP_OPEN,
               gap_extend: int = DEFAULT_MATRIX_GAP_EXTEND) -> Scoring:
        """A shipped substitution matrix by name (case-insensitive): one of :data:`MATRICES`."""
        key = str(name).upper()
        if key not in MATRICES:
            raise ValueError(f"unknown matrix {name!r}: expected one of {', '.join(MATRICES)} "
                             "(or Scoring.from_file for an NCBI-format file)")
        text = resources.files("gpualign").joinpath("matrices", key).read_text()
        return cls._parse(text, key, gap_open, gap_extend)

    @classmethod
    def from_text(cls, text: str, name: str, *, gap_open: int = DEFAULT_MATRIX_GAP_OPEN,
                  gap_extend: int = DEFAULT_MATRIX_GAP_EXTEND) -> Scoring:
        """A substitution matrix given as NCBI-format text (as :meth:`from_file` reads), named
        ``name`` in messages and descriptions.

        Examples
        --------
        >>> dna = Scoring.from_text("  A C\\nA 1 -2\\nC -2 1\\n", "AC", gap_open=3, gap_extend=1)
        >>> dna.score("A", "C"), dna.gap_cost(2)
        (-2, 4)
        """
        return cls._parse(text, name, gap_open, gap_extend)

    @classmethod
    def from_file(cls, path: str | os.PathLike, *, gap_open: int = DEFAULT_MATRIX_GAP_OPEN,
                  gap_extend: int = DEFAULT_MATRIX_GAP_EXTEND) -> Scoring:
        """A substitution matrix in NCBI format (``#`` comments, a header line of symbols, then
        one row per symbol: the symbol and its scores)."""
        path = os.fspath(path)
        with open(path, "rb") as handle:  # OSError (missing, unreadable) as it is
            data = handle.read()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _not_a_matrix(path, f"byte {data[exc.start]:#04x} at offset {exc.start} is "
                                      "not UTF-8 text") from None
        return cls._parse(text, os.path.basename(path), gap_open, gap_extend, path)

    @classmethod
    def _parse(cls, text: str, name: str, gap_open: int, gap_extend: int,
               where: str | None = None) -> Scoring:
        where = where or name
        lines = [line.split() for line in text.splitlines()
                 if line.strip() and not line.lstrip().startswith("#")]
        if not lines:
            raise _not_a_matrix(where, "no matrix found")
        header = lines[0]
        if (any(len(symbol) != 1 or not symbol.isascii() for symbol in header)
                or len(set(header)) != len(header)):
            raise _not_a_matrix(where, "the header must list distinct one-letter symbols (ASCII)")
        scores = np.zeros((len(header), len(header)), dtype=np.int32)
        rows = lines[1:]
        if len(rows) != len(header):
            raise _not_a_matrix(where, f"{len(rows)} rows for {len(header)} columns")
        for number, row in enumerate(rows):
            if row[0] != header[number] or len(row) != len(header) + 1:
                raise _not_a_matrix(where, f"row {number + 1} ({row[0]!r}) must be "
                                           f"{header[number]!r} followed by {len(header)} "
                                           "scores")
            try:
                scores[number] = [int(value) for value in row[1:]]
            except ValueError:
                raise _not_a_matrix(where, f"row {row[0]!r} holds a score that is not an "
                                           "integer") from None
            except OverflowError:
                raise _not_a_matrix(where, f"row {row[0]!r} holds a score beyond int32"
                                    ) from None
        return cls(gap_open=gap_open, gap_extend=gap_extend, matrix_name=name,
                   matrix_symbols="".join(header).encode("ascii"), matrix_scores=scores)

    # --- use ------------------------------------------------------------------------------------

    def gap_cost(self, length: int) -> int:
        """Cost of a gap of ``length`` symbols (0 for no gap)."""
        return 0 if length <= 0 else self.gap_open + (length - 1) * self.gap_extend

    def score(self, a: str, b: str) -> int:
        """Substitution score of the symbols ``a`` and ``b`` (protein alphabet with a matrix,
        DNA otherwise)."""
        alphabet = get_alphabet("protein" if self.matrix_scores is not None else "dna")
        table, covered = self.table(alphabet)
        codes = [int(alphabet.lookup[ord(symbol)]) for symbol in (a, b)]
        if min(codes) < 0 or not covered[codes].all():
            raise ValueError(f"{a!r} or {b!r} is not scored by {self.describe()}")
        return int(table[codes[0], codes[1]])

    def table(self, alphabet: str | Alphabet) -> tuple[np.ndarray, np.ndarray]:
        """The substitution scores over the codes of ``alphabet``: an ``(n, n)`` int32 table and
        a bool mask of the codes the scheme scores (a matrix may lack some symbols); copies of
        the ones made the first time for the alphabet (a search asks for it once per call, and
        so does the alignment of its hits)."""
        alphabet = get_alphabet(alphabet)
        made = self.__dict__.get("_tables")
        if made is None:
            made = {}
            object.__setattr__(self, "_tables", made)  # a cache, not a field
        if alphabet not in made:
            table, covered = self._table(alphabet)
            made[alphabet] = (table, covered)
        table, covered = made[alphabet]
        return table.copy(), covered.copy()

    def _table(self, alphabet: Alphabet) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`table`, made."""
        n = alphabet.size
        if self.matrix_scores is None:
            table = np.full((n, n), self.mismatch, dtype=np.int32)
            matching = np.arange(alphabet.match_codes)
            table[matching, matching] = self.match
            return table, np.ones(n, dtype=bool)
        position = {symbol: i for i, symbol in enumerate(self.matrix_symbols)}
        rows = np.array([position.get(symbol, -1) for symbol in alphabet.symbols[:n]])
        covered = rows >= 0
        table = np.zeros((n, n), dtype=np.int32)
        inside = np.flatnonzero(covered)
        table[np.ix_(inside, inside)] = self.matrix_scores[np.ix_(rows[inside], rows[inside])]
        return table, covered

    def check_covered(self, sequences: SequenceSet, role: str = "sequences") -> None:
        """Raise ValueError naming the first record and position whose symbol the scheme does
        not score (only possible with a matrix)."""
        if self.matrix_scores is None:
            return
        _, covered = self.table(sequences.alphabet)
        if covered.all():
            return
        bad = np.flatnonzero(~covered[sequences.codes])
        if not len(bad):
            return
        first = int(bad[0])
        record = int(np.searchsorted(sequences.offsets, first, side="right") - 1)
        position = first - int(sequences.offsets[record])
        symbol = chr(sequences.alphabet.symbols[sequences.codes[first]])
        raise ValueError(
            f"{role}: record {sequences.names[record]!r} (#{record}): symbol {symbol!r} at "
            f"position {position} is not in the matrix {self.matrix_name} "
            f"({self.matrix_symbols.decode()})")

    def describe(self) -> str:
        """A short description, e.g. ``BLOSUM62, gap open 11, extend 1``."""
        substitution = (self.matrix_name if self.matrix_scores is not None
                        else f"match {self.match:+d}, mismatch {self.mismatch:+d}")
        return f"{substitution}, gap open {self.gap_open}, extend {self.gap_extend}"


def _not_a_matrix(where: str, reason: str) -> ValueError:
    """The error of a matrix file that cannot be read: the file, then why."""
    return ValueError(f"{where}: not an NCBI substitution matrix ({reason})")
