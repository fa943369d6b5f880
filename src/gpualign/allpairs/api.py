"""All-vs-all comparison with an identity filter: :func:`allpairs`.

Every unordered pair of a set (or every pair of two sets) goes through a lossless cascade:

1. **length bound** — an alignment of sequences of lengths ``m <= n`` has at least ``n``
   columns and at most ``m`` matches, so (identity "columns") ``identity <= m / n``;
2. **edit-distance bound** — an alignment with ``M`` matches has at least ``d`` (the edit
   distance) other columns, so ``identity <= M / (M + d) <= m / (m + d)`` ("columns"), and
   ``identity <= 1 - max(0, d - (n - m)) / (2 m)`` ("shorter"); Myers' bit-vectors compute
   ``d`` with a cutoff at the largest distance that could still pass;
3. **alignment** — the survivors are aligned globally (``task="path"``) and their exact
   identity decides.

No stage drops a pair that meets the threshold: the bounds hold for every alignment, the
optimal one included. The pairs are cut into tiles (``config.ALLPAIRS_TILE`` sequences a
side); with ``checkpoint`` every finished tile is written to that folder (atomically, gzipped
TSV, its row count and checksum in a ledger) and a rerun skips it, unless its file does not
match its record: then it is computed again (see :class:`_Checkpoint`).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import config
from .._dask import run_pulled
from .._progress import progress_bar
from .._tables import alignment_table
from ..align import align as align_pairs
from ..cigar import op_counts
from ..edit import edit_distance
from ..pairs import pair_sets
from ..scoring import Scoring
from ..sequences import Alphabet, SequenceSet, as_sequence_set, resolve_alphabet
from ._length_bound import length_survivors

__all__ = ["AllPairs", "CheckpointWarning", "allpairs"]

_IDENTITIES = ("columns", "shorter")
_FIELDS = ("query_index", "target_index", "identity", "score", "query_start", "query_end",
           "target_start", "target_end", "cigar")


@dataclass
class AllPairs:
    """The pairs of :func:`allpairs` that reach ``min_identity``, sorted by query, then target.

    Attributes
    ----------
    query_index, target_index : np.ndarray of int64
        Positions in the set(s); for one set, ``query_index < target_index``.
    identity : np.ndarray of float64
    score : np.ndarray of int64
        Score of the optimal global alignment under the scoring scheme.
    query_start, query_end, target_start, target_end : np.ndarray of int64
        0-based, half-open (a global alignment spans both sequences).
    cigar : list of str or None
        The alignment (``align=True``).
    stages : dict
        Pairs entering each stage of the cascade: ``pairs``, ``length``, ``edit``, ``aligned``,
        ``kept`` (tiles read back from a checkpoint count as they did when computed).
    seconds : dict
        Seconds each stage took (``length``, ``edit``, ``align``), summed over the tiles this
        call computed (not those read back from a checkpoint).
    alphabet : str
        Name of the alphabet the sequences were compared in (inferred for ``"auto"``).
    """

    query_index: np.ndarray
    target_index: np.ndarray
    identity: np.ndarray
    score: np.ndarray
    query_start: np.ndarray
    query_end: np.ndarray
    target_start: np.ndarray
    target_end: np.ndarray
    cigar: list[str] | None
    stages: dict[str, int]
    seconds: dict[str, float]
    alphabet: str = "dna"

    def __len__(self) -> int:
        return len(self.query_index)

    def table(self, query_names: Sequence[str],
              target_names: Sequence[str]) -> tuple[tuple[str, ...], list[Any]]:
        """The pairs as a table: the header and columns that ``gpualign allpairs`` writes, those
        of :meth:`AlignResult.table <gpualign.AlignResult.table>`.

        Parameters
        ----------
        query_names, target_names : sequence of str
            Names of ``seqs`` and of ``others`` (``seqs`` again for the pairs within one set),
            looked up with ``query_index`` and ``target_index``.

        Returns
        -------
        header : tuple of str
        columns : list of list or np.ndarray
            The CIGAR column is None (written ``*``) without ``align=True``.

        Examples
        --------
        >>> import sys
        >>> from gpualign.io import write_tsv
        >>> hits = allpairs(["ACGTACGTAC", "ACGTACGTAA", "TTTTTTTTTT"], min_identity=0.8)
        >>> write_tsv(sys.stdout, *hits.table(["a", "b", "c"], ["a", "b", "c"]))
        ... # doctest: +NORMALIZE_WHITESPACE
        query  target  identity  score  query_start  query_end  target_start  target_end  cigar
        a      b       0.9000    15     0            10         0             10          9=1X
        """
        return alignment_table(self, query_names, target_names)

    def describe_stages(self) -> str:
        """The pairs entering each stage of the cascade, as the summary line of ``gpualign
        allpairs`` gives them.

        Examples
        --------
        >>> hits = allpairs(["ACGTACGTAC", "ACGTACGTAA", "TTTTTTTTTT"], min_identity=0.8)
        >>> hits.describe_stages()
        '3 pairs; after the length bound 3, after the edit-distance bound 1, aligned 1'
        """
        stages = self.stages
        return (f"{stages['pairs']} pairs; after the length bound {stages['length']}, after "
                f"the edit-distance bound {stages['edit']}, aligned {stages['aligned']}")

    def describe_seconds(self) -> str:
        """The seconds each stage took, as the summary line of ``gpualign allpairs`` gives
        them.

        Examples
        --------
        >>> hits = allpairs(["ACGTACGTAC", "ACGTACGTAA"], min_identity=0.8)
        >>> hits.describe_seconds()  # doctest: +ELLIPSIS
        'length ... s, edit ... s, align ... s'
        """
        return ", ".join(f"{stage} {seconds:.2f} s" for stage, seconds in self.seconds.items())


def _compute_tile(qset: SequenceSet, tset: SequenceSet, tile: tuple[int, int], side: int,
                  same: bool, min_identity: float, scoring: Scoring, kind: str, backend: str,
                  advance: Callable[[int], object]) -> tuple[dict[str, Any], dict[str, Any]]:
    """One tile through the cascade; ``advance(count)`` after each stage, with the pairs that
    stage settled (the progress bar's steps)."""
    clock = time.perf_counter()
    q_index, t_index, limit, pairs = length_survivors(
        qset.lengths, tset.lengths, *tile, side, same, min_identity, kind == "columns")
    advance(pairs - len(q_index))
    stages: dict[str, Any] = {"pairs": pairs, "length": len(q_index)}
    stages["seconds_length"], clock = time.perf_counter() - clock, time.perf_counter()
    if len(q_index):
        distance = edit_distance(qset, tset, k=int(limit.max()), backend=backend,
                                 pairs=(q_index, t_index)).distance
        keep = (distance >= 0) & (distance <= limit)
        q_index, t_index = q_index[keep], t_index[keep]
    stages["edit"] = len(q_index)
    advance(stages["length"] - stages["edit"])
    stages["seconds_edit"], clock = time.perf_counter() - clock, time.perf_counter()
    result = align_pairs(qset, tset, mode="global", scoring=scoring, task="path",
                         backend=backend, pairs=(q_index, t_index))
    stages["aligned"] = len(q_index)
    advance(stages["aligned"])
    stages["seconds_align"] = time.perf_counter() - clock
    if kind == "columns":
        identity = result.identity
    else:
        matches = op_counts(result.cigar)[0][:, 0].astype(np.float64)
        shorter = np.minimum(qset.lengths[q_index], tset.lengths[t_index])
        identity = matches / np.maximum(shorter, 1)
    keep = identity >= min_identity
    stages["kept"] = int(keep.sum())
    chosen = np.flatnonzero(keep)
    rows = {"query_index": q_index[chosen], "target_index": t_index[chosen],
            "identity": identity[chosen], "score": result.score[chosen],
            "query_start": result.query_start[chosen], "query_end": result.query_end[chosen],
            "target_start": result.target_start[chosen],
            "target_end": result.target_end[chosen],
            "cigar": [result.cigar[i] for i in chosen.tolist()]}
    return rows, stages


def _tiles(n_q: int, n_t: int, same: bool, side: int):
    """``(query block, target block)`` tiles; one set: the blocks on or above the diagonal."""
    for bi in range(0, n_q, side):
        for bj in range(bi if same else 0, n_t, side):
            yield bi, bj


class CheckpointWarning(UserWarning):
    """A tile of an :func:`allpairs` checkpoint could not be used and is computed again, or the
    checkpoint is started afresh."""


#: Version of the checkpoint layout, in the manifest. 1 (no "format" key): tiles without a
#: ledger; 2: the ledger ``tiles.tsv`` records each tile's row count and checksum.
_FORMAT = 2
_LEDGER = "tiles.tsv"
_RECORD = re.compile(r"(\d+)\t(\d+)\t(\d+)\t([0-9a-f]{64})\n")


class _Checkpoint:
    """A folder of finished tiles (``tile-<query block>-<target block>.tsv.gz``), a manifest
    (``manifest.json``) that ties it to its inputs and parameters, and a ledger (``tiles.tsv``)
    with one line per finished tile: its blocks, its row count and the SHA-256 of its file.

    A tile is read back only if its file matches its ledger line; any other tile found (file
    missing, unreadable, damaged, rows removed, not recorded) is computed again, with a
    :class:`CheckpointWarning` naming it, so that a damaged checkpoint never shortens the
    output. The ledger is appended to rather than rewritten, so that recording a tile costs as
    little at the last of a hundred thousand tiles as at the first.
    """

    def __init__(self, folder: str | os.PathLike, run: dict[str, Any]):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.ledger = self.folder / _LEDGER
        path = self.folder / "manifest.json"
        if path.exists():
            found = self._read_manifest(path)
            changed = sorted(k for k in run if found.get(k) != run[k])
            if changed:
                raise ValueError(f"checkpoint {self.folder} belongs to another run (different "
                                 f"{', '.join(changed)}); use a new folder")
            fresh = "format" not in found
            if fresh:
                # Its tiles cannot be checked: computing them again is the only way to be
                # sure of them.
                warnings.warn(CheckpointWarning(
                    f"checkpoint {self.folder} was written by an older gpualign, without tile "
                    f"checksums: its tiles are recomputed"), stacklevel=3)
                for tile in self.folder.glob("tile-*.tsv.gz"):
                    tile.unlink()
            elif found["format"] != _FORMAT:
                raise ValueError(f"checkpoint {self.folder} has format {found['format']!r}, "
                                 f"not {_FORMAT}: written by another gpualign version; use a "
                                 f"new folder")
        elif self.ledger.exists():
            raise ValueError(f"checkpoint {self.folder} is damaged (manifest.json missing); "
                             f"remove the folder to start afresh, or use a new one")
        else:
            fresh = True
        if fresh:
            # The ledger before the manifest: a manifest always has a ledger of its own run.
            _write_atomically(self.ledger, b"")
            _write_atomically(path, json.dumps({**run, "format": _FORMAT}, indent=1,
                                               sort_keys=True).encode())
        self.records = self._read_ledger()

    def _read_manifest(self, path: Path) -> dict[str, Any]:
        try:
            found = json.loads(path.read_bytes())
            if not isinstance(found, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:  # bad JSON, bad UTF-8 or not an object
            raise ValueError(f"checkpoint {self.folder} is damaged (manifest.json: {exc}); "
                             f"remove the folder to start afresh, or use a new one") from None
        return found

    def _read_ledger(self) -> dict[tuple[int, int], tuple[int, str]]:
        """``(query block, target block) -> (rows, SHA-256)``; a later line for a tile (computed
        again) wins. Lines that are not whole records are dropped from the file."""
        try:
            text = self.ledger.read_bytes().decode("ascii", errors="replace")
        except FileNotFoundError:  # lost: every tile file found counts as not recorded
            text = ""
        records, kept = {}, []
        for line in text.splitlines(keepends=True):
            record = _RECORD.fullmatch(line)
            if record is not None:
                bi, bj, rows, digest = record.groups()
                records[int(bi), int(bj)] = int(rows), digest
                kept.append(line)
        if "".join(kept) != text:
            # A line cut short by a crash, or damage: rewrite the ledger so that the next
            # record starts on a line of its own.
            _write_atomically(self.ledger, "".join(kept).encode())
        return records

    def _path(self, bi: int, bj: int) -> Path:
        return self.folder / f"tile-{bi}-{bj}.tsv.gz"

    def load(self, bi: int, bj: int) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The rows and stages of a finished tile, or None when it must be computed (with a
        :class:`CheckpointWarning` when it was there but cannot be used)."""
        record = self.records.get((bi, bj))
        try:
            data = self._path(bi, bj).read_bytes()
        except FileNotFoundError:
            return None if record is None else self._damaged(bi, bj, "file missing")
        except OSError as exc:
            return self._damaged(bi, bj, f"unreadable: {exc.strerror or exc}")
        if record is None:
            return self._damaged(bi, bj, f"not recorded in {_LEDGER}")
        if hashlib.sha256(data).hexdigest() != record[1]:
            return self._damaged(bi, bj, "checksum mismatch")
        try:
            rows, stages = _read_tile(data)
            kept = stages["kept"]
        except (OSError, EOFError, ValueError, LookupError, TypeError) as exc:
            return self._damaged(bi, bj, f"unreadable: {exc}")
        if not len(rows["query_index"]) == kept == record[0]:
            return self._damaged(bi, bj, f"{len(rows['query_index'])} rows, {kept} counted, "
                                         f"{record[0]} recorded")
        return rows, stages

    def _damaged(self, bi: int, bj: int, why: str) -> None:
        warnings.warn(CheckpointWarning(f"checkpoint {self.folder}: tile ({bi}, {bj}) damaged "
                                        f"({why}): recomputed"), stacklevel=4)

    def save(self, bi: int, bj: int, rows: dict[str, Any], stages: dict[str, Any]) -> None:
        """Write a finished tile, then record it in the ledger (a crash in between leaves a
        tile that is not recorded: computed again)."""
        lines = ["# " + json.dumps(stages, sort_keys=True), "\t".join(_FIELDS)]
        values = [rows[name] if name == "cigar" else
                  ([repr(float(x)) for x in rows[name]] if name == "identity"
                   else rows[name].tolist()) for name in _FIELDS]
        lines += ["\t".join(str(v) for v in row) for row in zip(*values, strict=True)]
        data = gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0)
        _write_atomically(self._path(bi, bj), data)
        record = (len(rows["query_index"]), hashlib.sha256(data).hexdigest())
        with open(self.ledger, "a", encoding="ascii") as handle:
            handle.write(f"{bi}\t{bj}\t{record[0]}\t{record[1]}\n")
            handle.flush()
            os.fsync(handle.fileno())
        self.records[bi, bj] = record


def _read_tile(data: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
    """The rows and stages of a tile file's bytes (as :meth:`_Checkpoint.save` writes them)."""
    lines = gzip.decompress(data).decode().splitlines()
    stages = json.loads(lines[0].lstrip("# "))
    columns = list(zip(*[line.split("\t") for line in lines[2:]], strict=True)) or \
        [()] * len(_FIELDS)
    rows: dict[str, Any] = {}
    for name, values in zip(_FIELDS, columns, strict=True):
        if name == "cigar":
            rows[name] = list(values)
        elif name == "identity":
            rows[name] = np.array(values, dtype=np.float64)
        else:
            rows[name] = np.array(values, dtype=np.int64)
    return rows, stages


def _write_atomically(path: Path, data: bytes) -> None:
    """Write a file so that a crash leaves either the old state or the whole new file."""
    partial = path.with_name(path.name + ".part")
    with open(partial, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(partial, path)


def _fingerprint(sequences: SequenceSet) -> str:
    digest = hashlib.sha256(sequences.codes.tobytes())
    digest.update(sequences.offsets.tobytes())
    return digest.hexdigest()[:32]


def _tile_task(qset: SequenceSet, tset: SequenceSet | None, tile: tuple[int, int],
               job: tuple, advance: Callable[[int], object] = lambda count: None
               ) -> tuple[dict[str, Any], dict[str, Any]]:
    """One tile, wherever it runs (here or on a Dask worker, where nothing follows its
    stages)."""
    same, side, min_identity, scoring, identity, backend = job
    return _compute_tile(qset, qset if tset is None else tset, tile, side, same, min_identity,
                         scoring, identity, backend, advance)


def _run_tiles(qset, tset, tiles, job, client, advance):
    """Yield ``(tile, result)`` for every tile: in order here, calling ``advance`` after each
    stage (see :func:`_compute_tile`), or as they finish on Dask."""
    if client is None:
        for tile in tiles:
            yield tile, _tile_task(qset, tset, tile, job, advance)
        return
    yield from run_pulled(client, _tile_task, (qset, tset), tiles, lambda tile: (tile, job),
                          "allpairs-tile", config.ALLPAIRS_TILES_IN_FLIGHT)


def allpairs(seqs: Any, others: Any = None, *, min_identity: float = 0.97,
             scoring: Scoring | None = None, identity: str = "columns", align: bool = True,
             checkpoint: str | os.PathLike | None = None, client: Any = None,
             alphabet: str | Alphabet = "auto", invalid: str = "error",
             backend: str = "auto", progress: bool = False) -> AllPairs:
    """Every pair of ``seqs`` (``i < j``), or every ``(seqs[i], others[j])``, whose identity
    reaches ``min_identity``.

    Identity comes from the optimal global alignment under ``scoring`` (ties broken as in
    :func:`gpualign.align`): ``"columns"`` = matches / alignment columns, ``"shorter"`` =
    matches / length of the shorter sequence. A match is a pair of equal symbols that can
    match (DNA's ``N`` matches nothing). The cascade of bounds in front of the alignment is
    lossless (see the module documentation).

    Parameters
    ----------
    seqs, others : SequenceSet, pathlib.Path to FASTA/FASTQ, or list of sequences
    min_identity : float in (0, 1]
    scoring : Scoring
        Default ``Scoring()``: +2/-3, gaps 5 + 2 per extra symbol.
    identity : {"columns", "shorter"}
    align : bool
        Keep the CIGARs (False: None, to save memory; identities are computed either way).
    checkpoint : path, optional
        Folder for finished tiles; a rerun with the same folder, inputs and parameters skips
        them and returns exactly the same result. A tile whose file is missing, damaged or
        does not match its recorded row count and checksum is computed again, with a
        :class:`CheckpointWarning`; a damaged manifest raises ValueError.
    client : dask.distributed.Client, optional
        Run the tiles on this Dask cluster: the encoded sets go to the cluster once (each the
        input of one task that every tile task depends on), each tile is one task
        (``backend`` is resolved on the worker: CUDA where it has a GPU), results come back as
        tiles finish (and go to the checkpoint). The library never starts a cluster. Without a
        client the tiles run here, one after the other, each on all local cores.
    alphabet, invalid, backend, progress : as in :func:`gpualign.edit_distance` ("auto": protein
        for a scoring with a substitution matrix)
        (``backend`` runs the edit-distance and the alignment stages).

    Returns
    -------
    AllPairs

    Examples
    --------
    >>> hits = allpairs(["ACGTACGTAC", "ACGTACGTAA", "TTTTGGGGCC"], min_identity=0.85)
    >>> hits.query_index.tolist(), hits.target_index.tolist(), hits.identity.tolist(), hits.cigar
    ([0], [1], [0.9], ['9=1X'])
    """
    if not (0 < float(min_identity) <= 1):
        raise ValueError(f"min_identity={min_identity!r}: expected a number in (0, 1]")
    if identity not in _IDENTITIES:
        raise ValueError(f"identity={identity!r}: expected one of {', '.join(_IDENTITIES)}")
    scoring = Scoring() if scoring is None else scoring
    if not isinstance(scoring, Scoring):
        raise TypeError(f"scoring must be a gpualign.Scoring, got {type(scoring).__name__}")
    if others is None:
        alphabet, (seqs,) = resolve_alphabet(alphabet, seqs,
                                             matrix=scoring.matrix_scores is not None)
        qset = tset = as_sequence_set(seqs, alphabet, invalid=invalid, role="sequences")
    else:
        qset, tset = pair_sets(seqs, others, alphabet, invalid,
                               matrix=scoring.matrix_scores is not None)
    same = others is None
    scoring.check_covered(qset, "sequences")
    if not same:
        scoring.check_covered(tset, "targets")
    side = max(1, int(config.ALLPAIRS_TILE))
    store = None
    if checkpoint is not None:
        store = _Checkpoint(checkpoint, {
            "sequences": _fingerprint(qset), "targets": None if same else _fingerprint(tset),
            "alphabet": qset.alphabet.name, "min_identity": float(min_identity),
            "identity": identity, "scoring": scoring.describe(), "tile": side})
    tiles = list(_tiles(len(qset), len(tset), same, side))
    results: dict[tuple[int, int], tuple[dict[str, Any], dict[str, Any]]] = {}
    missing = []
    for tile in tiles:
        done = store.load(*tile) if store is not None else None
        if done is None:
            missing.append(tile)
        else:
            results[tile] = done
    job = (same, side, float(min_identity), scoring, identity, backend)
    # The bar counts pairs settled: here stage by stage, from Dask as whole tiles.
    bar = progress_bar(len(qset) * (len(qset) - 1) // 2 if same else len(qset) * len(tset),
                       progress, "allpairs")
    bar.update(sum(int(stages["pairs"]) for _, stages in results.values()))
    seconds = dict.fromkeys(("length", "edit", "align"), 0.0)
    try:
        for tile, done in _run_tiles(qset, None if same else tset, missing, job, client,
                                     bar.update):
            if store is not None:
                store.save(*tile, *done)
            results[tile] = done
            for stage in seconds:
                seconds[stage] += float(done[1][f"seconds_{stage}"])
            if client is not None:
                bar.update(int(done[1]["pairs"]))
    finally:
        bar.close()
    parts, totals = [], dict.fromkeys(("pairs", "length", "edit", "aligned", "kept"), 0)
    for tile in tiles:
        rows, stages = results[tile]
        parts.append(rows)
        for key in totals:
            totals[key] += int(stages[key])
    columns: dict[str, Any] = {}
    for name in _FIELDS:
        if name == "cigar":
            columns[name] = [cigar for part in parts for cigar in part[name]]
        elif parts:
            columns[name] = np.concatenate([part[name] for part in parts])
        else:
            columns[name] = np.zeros(0, dtype=np.float64 if name == "identity" else np.int64)
    order = np.lexsort((columns["target_index"], columns["query_index"]))
    for name in _FIELDS:
        columns[name] = ([columns[name][i] for i in order.tolist()] if name == "cigar"
                         else columns[name][order])
    if not align:
        columns["cigar"] = None
    return AllPairs(**columns, stages=totals, seconds=seconds, alphabet=qset.alphabet.name)
