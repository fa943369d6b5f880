"""Public API of database search: :func:`search` and :class:`SearchResult`."""

from __future__ import annotations

import math
import os
import pathlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._checks import integer
from .._progress import Progress, ProgressArg
from .._tables import available, named
from ..backend import BACKENDS, resolve_backend
from ..cigar import PackedCigars, op_counts
from ..codes import SEARCH_TASKS, check_task
from ..scoring import Scoring
from ..sequences import (
    AUTO,
    Alphabet,
    SequenceSet,
    as_sequence_set,
    get_alphabet,
    resolve_alphabet,
)
from .database import Database, as_database, input_positions, is_database_file
from .distributed import cluster_top_scores
from .engine import top_scores_for

__all__ = ["BLAST6_COLUMNS", "SEARCH_COLUMNS", "SearchResult", "default_scoring", "search"]

#: The columns of :meth:`SearchResult.table` (``gpualign search --format tsv``).
SEARCH_COLUMNS = ("query", "subject", "rank", "score", "bitscore", "evalue", "strand",
                  "identity", "query_start", "query_end", "subject_start", "subject_end",
                  "cigar")
#: BLAST's tabular columns (``-outfmt 6``), those of :meth:`SearchResult.blast6_columns`.
BLAST6_COLUMNS = ("qseqid", "sseqid", "pident", "length", "mismatch", "gapopen", "qstart",
                  "qend", "sstart", "send", "evalue", "bitscore")

#: DNA codes A, C, G, T, N -> their complement (N stays N).
_COMPLEMENT = np.array([3, 2, 1, 0, 4], dtype=np.uint8)


@dataclass
class SearchResult:
    """Hits of :func:`search`, one entry per hit; rows ordered by query, then rank.

    Coordinates are 0-based, half-open; the query's are on its given (plus) strand, also for a
    hit on the minus strand (DNA), whose alignment is the reverse complement of the query
    against the subject as it is (as SAM writes reverse-strand reads).

    Attributes
    ----------
    query_index : np.ndarray of int64
        The query (0-based, in the order given).
    subject_index : np.ndarray of int64
        The database sequence (0-based, in input order: the FASTA file's).
    rank : np.ndarray of int64
        1 for the query's best hit, then 2, 3 ...: higher score first; ties: the subject
        first in the input, then the plus strand.
    score : np.ndarray of int64
        Smith-Waterman score (local alignment, affine gaps).
    bitscore, evalue : np.ndarray of float64
        Karlin-Altschul bit score and E-value (:mod:`gpualign.search.statistics`, BLAST's
        effective lengths); NaN where no published parameters exist for the scoring.
    query_start, query_end, subject_start, subject_end : np.ndarray of int64
        The alignment's extent (``task`` "locations" or "path"; -1 with "score").
    strand : np.ndarray of str
        ``"+"``, or ``"-"`` for the query's reverse complement (DNA only).
    identity : np.ndarray of float64 or None
        ``=`` columns / alignment columns (``task="path"``).
    mismatches, gap_opens, alignment_length : np.ndarray of int64 or None
        ``X`` columns, gaps (runs of ``I`` or ``D``) and columns (``task="path"``).
    cigar : PackedCigars or None
        Extended CIGAR of the alignment (``task="path"``): ``I`` consumes the query (its
        reverse complement on the minus strand), ``D`` the subject. Arrays of runs that read
        as a sequence of str (:class:`gpualign.cigar.PackedCigars`), made into text when
        read.
    """

    query_index: np.ndarray
    subject_index: np.ndarray
    rank: np.ndarray
    score: np.ndarray
    bitscore: np.ndarray
    evalue: np.ndarray
    query_start: np.ndarray
    query_end: np.ndarray
    subject_start: np.ndarray
    subject_end: np.ndarray
    strand: np.ndarray
    identity: np.ndarray | None
    mismatches: np.ndarray | None
    gap_opens: np.ndarray | None
    alignment_length: np.ndarray | None
    cigar: PackedCigars | None
    task: str = "score"
    scoring: Scoring = field(default_factory=Scoring, repr=False)
    #: Name of the alphabet the search ran in.
    alphabet: str = "protein"
    #: The Karlin-Altschul parameters of the scoring (a ``KarlinAltschul``), or None.
    statistics: Any = field(default=None, repr=False)
    #: DP cells computed by the search (both strands for DNA), for throughput figures.
    cells: int = 0

    def __len__(self) -> int:
        return len(self.score)

    def table(self, query_names: Sequence[str],
              subject_names: Sequence[str]) -> tuple[tuple[str, ...], list[Any]]:
        """The hits as a table: the header and columns that ``gpualign search`` writes.

        Parameters
        ----------
        query_names, subject_names : sequence of str
            Names of the queries and of the database sequences in input order (e.g.
            :meth:`Database.input_names <gpualign.search.Database.input_names>`).

        Returns
        -------
        header : tuple of str
            :data:`SEARCH_COLUMNS`.
        columns : list
            One per header entry: bit score with one decimal, E-value as ``%.2e``, identity
            with four decimals; None (written ``*``) where a value is not available.

        Examples
        --------
        >>> r = search(["ACGTACGTAC"], ["GTACGTACGTTT"], n=1, task="path", backend="cpu")
        >>> header, columns = r.table(["q"], ["s"])
        >>> header[6:], [str(column[0]) for column in columns[6:]]
        ... # doctest: +NORMALIZE_WHITESPACE
        (('strand', 'identity', 'query_start', 'query_end', 'subject_start', 'subject_end',
          'cigar'), ['-', '1.0000', '0', '10', '0', '10', '10='])
        """
        missing = [None] * len(self)
        return SEARCH_COLUMNS, [
            named(query_names, self.query_index),
            named(subject_names, self.subject_index),
            self.rank,
            self.score,
            [None if math.isnan(b) else f"{b:.1f}" for b in self.bitscore.tolist()],
            [None if math.isnan(e) else f"{e:.2e}" for e in self.evalue.tolist()],
            self.strand,
            ([f"{x:.4f}" for x in self.identity.tolist()] if self.identity is not None
             else missing),
            available(self.query_start), available(self.query_end),
            available(self.subject_start), available(self.subject_end),
            self.cigar if self.cigar is not None else missing,
        ]

    def blast6_columns(self, query_names: Sequence[str],
                       subject_names: Sequence[str]) -> tuple[tuple[str, ...], list[Any]]:
        """The hits as BLAST's tabular output (``-outfmt 6``): :data:`BLAST6_COLUMNS`.

        Coordinates are 1-based and inclusive; on the minus strand the query's run forwards
        and the subject's backwards (``sstart > send``), as blastn prints them. ``pident`` is
        ``100 * identity`` with three decimals, ``length`` the alignment columns,
        ``mismatch`` its ``X`` columns and ``gapopen`` its gaps. E-value and bit score are
        formatted as BLAST formats them (:func:`blast_evalue`, :func:`blast_bitscore`; ``*``
        without statistics). Needs ``task="path"``.

        Examples
        --------
        >>> r = search(["ACGTACGTAC"], ["GTACGTACGTTT"], n=1, task="path", backend="cpu")
        >>> [str(column[0]) for column in r.blast6_columns(["q"], ["s"])[1][:10]]
        ['q', 's', '100.000', '10', '0', '0', '1', '10', '10', '1']
        """
        if self.task != "path":
            raise ValueError(f"BLAST's tabular output needs task='path' (got {self.task!r})")
        minus = self.strand == "-"
        return BLAST6_COLUMNS, [
            named(query_names, self.query_index),
            named(subject_names, self.subject_index),
            [f"{100 * x:.3f}" for x in self.identity.tolist()],
            self.alignment_length, self.mismatches, self.gap_opens,
            self.query_start + 1, self.query_end,
            np.where(minus, self.subject_end, self.subject_start + 1),
            np.where(minus, self.subject_start + 1, self.subject_end),
            [None if math.isnan(e) else blast_evalue(e) for e in self.evalue.tolist()],
            [None if math.isnan(b) else blast_bitscore(b) for b in self.bitscore.tolist()],
        ]


#: BLAST+'s formats of E-values below each bound (C's ``%2.0le`` is Python's ``2.0e``).
_EVALUE_FORMATS = ((1.0e-99, "2.0e"), (0.0009, "3.0e"), (0.1, "4.3f"), (1.0, "3.2f"),
                   (10.0, "2.1f"))


def blast_evalue(evalue: float) -> str:
    """An E-value as BLAST+ writes it in its tables (``CAlignFormatUtil::GetScoreString``).

    Examples
    --------
    >>> [blast_evalue(e) for e in (1e-200, 3.2e-120, 4.4e-5, 0.0123, 0.5, 2.5, 123.0)]
    ['0.0', '3e-120', '4e-05', '0.012', '0.50', '2.5', '  123']
    """
    if evalue < 1.0e-180:
        return "0.0"
    for bound, spec in _EVALUE_FORMATS:
        if evalue < bound:
            return format(evalue, spec)
    return format(evalue, "5.0f")


def blast_bitscore(bitscore: float) -> str:
    """A bit score as BLAST+ writes it in its tables: one decimal up to 99.9, then the
    integer part, then ``%4.3e`` above 9999 (padded to four characters, as BLAST's are).

    Examples
    --------
    >>> [blast_bitscore(b) for b in (9.46, 45.21, 285.9, 12345.0)]
    [' 9.5', '45.2', ' 285', '1.234e+04']
    """
    if bitscore > 9999:
        return format(bitscore, "4.3e")
    if bitscore > 99.9:
        return format(int(bitscore), "4d")
    return format(bitscore, "4.1f")


def default_scoring(alphabet: str | Alphabet) -> Scoring:
    """The scoring of a search given none: BLAST's defaults in gpualign's gap convention.

    BLAST charges a gap of length L ``existence + L * extension``, gpualign ``gap_open +
    (L - 1) * gap_extend``: BLAST's (E, X) is gpualign's ``gap_open = E + X``,
    ``gap_extend = X``. Proteins: BLOSUM62 with BLAST's 11/1 (``gap_open=12``,
    ``gap_extend=1``); DNA (and bytes): blastn's ``-task blastn`` defaults, +2/-3 with gaps
    5/2 (``gap_open=7``, ``gap_extend=2``), which have published Karlin-Altschul parameters
    (NCBI's table for +2/-3 lists 5/2; megablast's +1/-2 uses non-affine greedy gaps of 2.5 a
    base, which integer gap costs cannot express).

    Examples
    --------
    >>> default_scoring("protein").describe()
    'BLOSUM62, gap open 12, extend 1'
    >>> default_scoring("dna").describe()
    'match +2, mismatch -3, gap open 7, extend 2'
    """
    if get_alphabet(alphabet).name == "protein":
        return Scoring.matrix("BLOSUM62", gap_open=12, gap_extend=1)
    return Scoring(match=2, mismatch=-3, gap_open=7, gap_extend=2)


def _inputs(queries: Any, database: Any, alphabet: str | Alphabet, invalid: str,
            matrix: bool) -> tuple[SequenceSet, Database]:
    """The queries and the database, encoded in one alphabet."""
    if isinstance(database, (str, os.PathLike)) and is_database_file(database):
        database = Database.open(database)
    if isinstance(database, Database):
        if not (isinstance(alphabet, str) and alphabet.lower() == AUTO) and \
                get_alphabet(alphabet) != database.alphabet:
            raise ValueError(f"alphabet={get_alphabet(alphabet).name!r}, but the database is "
                             f"{database.alphabet.name}")
        alpha = database.alphabet
    else:
        if isinstance(database, str):
            database = pathlib.Path(database)
        alpha, (queries, database) = resolve_alphabet(alphabet, queries, database,
                                                      matrix=matrix)
        database = as_database(database, alpha, invalid=invalid)
    qset = as_sequence_set(queries, alpha, invalid=invalid, role="queries")
    if qset.alphabet != database.alphabet:
        raise ValueError(f"queries are {qset.alphabet.name}, the database is "
                         f"{database.alphabet.name}: search them in one alphabet")
    return qset, database


def reverse_complements(queries: SequenceSet) -> SequenceSet:
    """The reverse complement of every DNA sequence of ``queries``, in the same order.

    Examples
    --------
    >>> reverse_complements(SequenceSet.from_sequences(["AACGN", "GT"]))[0]
    'NCGTT'
    """
    total = int(queries.offsets[-1])
    # Reversing the whole concatenation reverses every sequence and their order ...
    backwards = SequenceSet(_COMPLEMENT[queries.codes[::-1]], total - queries.offsets[::-1],
                            queries.names[::-1], queries.alphabet)
    # ... which taking them backwards puts right.
    return backwards.take(np.arange(len(queries) - 1, -1, -1, dtype=np.int64))


def _both_strands(queries: SequenceSet) -> SequenceSet:
    """The queries followed by their reverse complements."""
    minus = reverse_complements(queries)
    offsets = np.concatenate((queries.offsets, minus.offsets[1:] + queries.offsets[-1]))
    return SequenceSet(np.concatenate((queries.codes, minus.codes)), offsets,
                       queries.names + minus.names, queries.alphabet)


def _merge_strands(score: np.ndarray, subject: np.ndarray, order: np.ndarray,
                   n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The best ``n`` of each query over both strands, from ``top_scores`` rows of the
    queries followed by those of their reverse complements: score desc, then input index,
    then ``+`` before ``-``. Returns score, subject and strand (0: plus, 1: minus)."""
    count = len(score) // 2
    score = np.concatenate((score[:count], score[count:]), axis=1)
    subject = np.concatenate((subject[:count], subject[count:]), axis=1)
    strand = np.broadcast_to(np.repeat(np.array([0, 1], dtype=np.int64), n), score.shape)
    ranked = np.lexsort((strand, input_positions(subject, order), -score), axis=-1)[:, :n]
    return tuple(np.take_along_axis(values, ranked, axis=1)
                 for values in (score, subject, strand))


def search(queries: Any, database: Any, *, scoring: Scoring | None = None, n: int = 10,
           evalue: float | None = None, task: str = "score",
           alphabet: str | Alphabet = "auto", invalid: str = "error", backend: str = "auto",
           client: Any = None, progress: ProgressArg = False) -> SearchResult:
    """The best local alignments (Smith-Waterman) of every query in a database.

    Parameters
    ----------
    queries : SequenceSet, pathlib.Path to FASTA/FASTQ, or list of str/bytes
    database : Database, path (str or os.PathLike) to a ``.gpudb`` file (``gpualign
        makedb``) or a FASTA/FASTQ file, SequenceSet, or list of sequences
    scoring : Scoring, optional
        Default (:func:`default_scoring`): BLOSUM62 with BLAST's 11/1 for proteins
        (``gap_open=12, gap_extend=1``), +2/-3 with BLAST's 5/2 for DNA (``gap_open=7,
        gap_extend=2``). gpualign's gap of length L costs ``gap_open + (L-1)*gap_extend``;
        BLAST's (existence E, extension X) is gpualign's ``gap_open = E + X``,
        ``gap_extend = X``.
    n : int
        Hits kept per query (the best ``n``; for DNA over both strands together, so a subject
        may be hit on each).
    evalue : float, optional
        Keep only the hits (of the best ``n``) with an E-value at most this. A ValueError when
        the scoring has no published Karlin-Altschul parameters.
    task : {"score", "locations", "path"}
        ``locations`` adds each hit's start and end on the query and the subject; ``path``
        also its CIGAR, identity, mismatches, gap opens and length. Both are computed for the
        reported hits only (:func:`gpualign.align`, ``mode="local"``: its tie rule picks the
        path; its score equals the search's).
    alphabet, invalid : as in :func:`gpualign.align`; a Database keeps its alphabet.
    backend : {"auto", "cpu", "cuda"}
        With a ``client``, the workers resolve it for the scores (``"auto"``: CUDA on a worker
        with a GPU), this process for the locations and paths of the hits.
    client : dask.distributed.Client, optional
        Search on this Dask cluster: the database is cut into partitions of about
        ``config.SEARCH_PARTITION_RESIDUES`` residues, each one task on a worker, and the best
        hits of each query are merged here (:mod:`gpualign.search.distributed`): the result
        equals a search here. Tasks are pure, so a worker that dies loses nothing (Dask runs
        its tasks again). The library never starts a cluster (``gpualign search --workers N``
        does).
    progress : bool or callable
        A progress bar on stderr over the DP cells of the search (``True``), or a function
        called as ``progress(done, total)``.

    Returns
    -------
    SearchResult
        Hits with a score above 0 (an empty local alignment is no hit), ordered by query,
        then rank.

    Examples
    --------
    >>> r = search(["MKVLAAGIVGAW"], ["MEEPQSDPSV", "MKVLATGIVGAWT", "GGGG"], n=2,
    ...            backend="cpu")
    >>> r.subject_index.tolist(), r.score.tolist(), r.rank.tolist()
    ([1, 0], [57, 6], [1, 2])
    """
    n = integer(n, "n", 1)
    check_task(task, SEARCH_TASKS)
    if evalue is not None and (isinstance(evalue, bool) or not isinstance(
            evalue, (int, float, np.integer, np.floating)) or not evalue > 0):
        raise ValueError(f"evalue must be a number > 0 (got {evalue!r})")
    if scoring is not None and not isinstance(scoring, Scoring):
        raise TypeError(f"scoring must be a gpualign.Scoring, got {type(scoring).__name__}")
    # Without a client, the backend is resolved (and imported) here, before any reading; with
    # one, each worker resolves it, and only its name is checked here.
    top_scores = top_scores_for(backend) if client is None else None
    if client is not None and (backend or "auto").lower() not in BACKENDS:
        raise ValueError(f"backend={backend!r}: expected one of {', '.join(BACKENDS)}")
    qset, db = _inputs(queries, database, alphabet, invalid,
                       matrix=scoring is not None and scoring.matrix_scores is not None)
    scoring = default_scoring(db.alphabet) if scoring is None else scoring
    from .statistics import bit_scores, evalues, parameters

    params = parameters(scoring, db.alphabet.name)
    if evalue is not None and params is None:
        raise ValueError(f"evalue={evalue}: no published Karlin-Altschul parameters for "
                         f"{scoring.describe()} ({db.alphabet.name}), so no E-values; leave "
                         "evalue out or choose a scoring that has them")
    scoring.check_covered(qset, "queries")
    scoring.check_covered(db.sequences, "database")
    dna = db.alphabet.name == "dna"
    searched = _both_strands(qset) if dna else qset
    table, _ = scoring.table(db.alphabet)
    cells = int(searched.lengths.sum()) * db.residues
    with Progress(cells, progress, "search", "cell") as counter:
        if client is None:
            top, subject = top_scores(searched, db, table, scoring.gap_open,
                                      scoring.gap_extend, n, counter)
        else:
            top, subject = cluster_top_scores(client, searched, db, table, scoring.gap_open,
                                              scoring.gap_extend, n, backend, counter)
    strand = np.zeros_like(top)
    if dna:
        top, subject, strand = _merge_strands(top, subject, db.order, n)
    keep = (subject >= 0) & (top > 0)
    query_index = np.nonzero(keep)[0].astype(np.int64)
    score, subject, strand = top[keep], subject[keep], strand[keep]
    lengths = qset.lengths[query_index]
    expect = None
    if evalue is not None:  # (which has parameters, checked above)
        expect = evalues(score, lengths, db.residues, len(db), params)
        passed = expect <= evalue
        query_index, score, subject, strand, lengths, expect = (
            values[passed] for values in (query_index, score, subject, strand, lengths, expect))

    def assembled() -> SearchResult:
        """The result without locations and paths."""
        if params is None:
            bits = np.full(len(score), np.nan)
            hit_evalues = np.full(len(score), np.nan)
        else:
            bits = bit_scores(score, params)
            hit_evalues = (evalues(score, lengths, db.residues, len(db), params)
                           if expect is None else expect)
        # A hit's rank: its position among its query's hits (those are consecutive, best first).
        starts = np.searchsorted(query_index, query_index, side="left")
        rank = np.arange(len(query_index), dtype=np.int64) - starts + 1
        return SearchResult(
            query_index, db.order[subject], rank, score, bits, hit_evalues,
            *(np.full(len(score), -1, dtype=np.int64) for _ in range(4)),
            np.where(strand == 1, "-", "+"), None, None, None, None, None, task, scoring,
            db.alphabet.name, params, cells)

    if task != "score" and len(score):
        # The result is assembled while the GPU aligns the hits.
        return _with_paths(assembled, searched, db, query_index + strand * len(qset), subject,
                           score, strand == 1, lengths, scoring, task, backend)
    result = assembled()
    if task == "path":  # no hits: empty paths, not missing ones
        result.cigar = PackedCigars.nones(0)
        result.identity = np.zeros(0)
        result.mismatches, result.gap_opens, result.alignment_length = (
            np.zeros(0, dtype=np.int64) for _ in range(3))
    return result


def _with_paths(assembled: Callable[[], SearchResult], searched: SequenceSet, db: Database,
                searched_index: np.ndarray, subject: np.ndarray, score: np.ndarray,
                minus: np.ndarray, query_lengths: np.ndarray, scoring: Scoring, task: str,
                backend: str) -> SearchResult:
    """The result (``assembled()``) with the locations (and, for ``task="path"``, the paths)
    of its hits: local alignments of the searched queries (``searched_index``: the plus or
    minus strand) with the hit subjects (sorted positions ``subject``) of scores ``score``."""
    from ..align.api import align_encoded

    # In the database itself where the GPU has it (the search left it there) or on the CPU:
    # no copy of the hit subjects. The CIGARs come as runs, which the counts below read
    # without parsing text.
    subjects = db.sequences
    if resolve_backend(backend) == "cuda" and not subjects.on_device():
        subjects, subject = subjects.take(subject), np.arange(len(subject), dtype=np.int64)
    made: list[SearchResult] = []
    # The hits' scores are known: a GPU fill stops once it is past the first cell of its score.
    paths = align_encoded(searched, subjects, searched_index, subject, scoring, "local", "path",
                          backend, packed=True, known_scores=score,
                          meanwhile=lambda: made.append(assembled()))
    result = made[0]
    differ = np.flatnonzero(paths.score != score)
    if len(differ):  # the search and the alignment kernels disagree: a defect, never a result
        k = differ[0]
        raise RuntimeError(f"internal error: hit {k} scored {score[k]} in the search but "
                           f"{paths.score[k]} aligned; please report it")
    # A minus-strand hit aligned the reverse complement: back to the query's plus strand.
    result.query_start = np.where(minus, query_lengths - paths.query_end, paths.query_start)
    result.query_end = np.where(minus, query_lengths - paths.query_start, paths.query_end)
    result.subject_start, result.subject_end = paths.target_start, paths.target_end
    if task == "path":
        result.cigar = paths.cigar
        result.identity = paths.identity
        columns, runs = op_counts(paths.cigar)  # in the order "=XID"
        result.mismatches = columns[:, 1]
        result.gap_opens = runs[:, 2] + runs[:, 3]
        result.alignment_length = columns.sum(axis=1)
    return result
