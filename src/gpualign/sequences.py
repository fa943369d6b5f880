"""Alphabets, encoding, and :class:`SequenceSet`, the packed form every capability works on.

Sequences are encoded once into small integer codes, concatenated into one ``uint8`` array with
``int64`` offsets, and moved to the GPU once (:meth:`SequenceSet.to_device`). Work is then
described by index arrays into sets, never by Python strings per pair. Every function that
reads symbols takes ``alphabet="auto"`` by default: :func:`resolve_alphabet` infers one alphabet
for all its inputs from their first records (:func:`infer_alphabet`), ``dna`` for DNA and RNA.
"""

from __future__ import annotations

import itertools
import lzma
import os
import pathlib
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "ALPHABETS",
    "AUTO",
    "Alphabet",
    "InvalidSymbolError",
    "SequenceSet",
    "as_sequence_set",
    "code_table",
    "encode_many",
    "encode_packed",
    "get_alphabet",
    "infer_alphabet",
    "name_settler",
    "read_sets",
    "resolve_alphabet",
]


#: Bytes of zeros after the codes of a set on the GPU (see :meth:`SequenceSet.to_device`).
DEVICE_PADDING = 16


class InvalidSymbolError(ValueError):
    """A sequence holds a symbol outside its alphabet; the message names record and position."""


@dataclass(frozen=True)
class Alphabet:
    """A mapping from symbols to codes ``0 .. size-1``.

    Codes below ``match_codes`` compare equal when equal. Codes from ``match_codes`` up (DNA's
    ``N``) match nothing, not even themselves. Some symbols share the code of another (DNA's
    ``U`` is ``T``; protein's ``U``, ``O``, ``J`` are ``C``, ``K``, ``X``): decoding gives the
    canonical one.
    """

    name: str
    symbols: bytes
    match_codes: int
    wildcard: int | None
    lookup: np.ndarray = field(repr=False, compare=False)

    @property
    def size(self) -> int:
        return len(self.symbols)

    def decode(self, codes: np.ndarray) -> str:
        """Return the text of ``codes`` (canonical upper-case symbols)."""
        table = np.frombuffer(self.symbols, dtype=np.uint8)
        return table[np.asarray(codes)].tobytes().decode("latin-1")


def _make_alphabet(name: str, symbols: bytes, *, match_codes: int, wildcard: int | None,
                   fold_case: bool, aliases: dict[str, str] | None = None) -> Alphabet:
    """``aliases``: further symbols read as the code of another (``{"U": "T"}``)."""
    lookup = np.full(256, -1, dtype=np.int16)
    pairs = [(chr(symbol), chr(symbol)) for symbol in symbols] + list((aliases or {}).items())
    for symbol, canonical in pairs:
        code = symbols.index(canonical.encode("latin-1"))
        lookup[ord(symbol)] = code
        if fold_case:
            lookup[ord(symbol.lower())] = code
    return Alphabet(name, symbols, match_codes, wildcard, lookup)


ALPHABETS: dict[str, Alphabet] = {
    # N is the last code so that the bit-vector match tables simply have no row for it. RNA's U
    # is T: RNA and its DNA spelling are the same sequence to every capability.
    "dna": _make_alphabet("dna", b"ACGTN", match_codes=4, wildcard=4, fold_case=True,
                          aliases={"U": "T"}),
    # The 24 symbols of the NCBI BLOSUM/PAM matrices, in their order. The other IUPAC amino
    # acids take the code of their closest relative, so that every matrix and kernel stays on
    # these 24 codes: selenocysteine U as cysteine, pyrrolysine O as lysine, and J (leucine or
    # isoleucine) as X.
    "protein": _make_alphabet("protein", b"ARNDCQEGHILKMFPSTWYVBZX*", match_codes=24,
                              wildcard=22, fold_case=True,
                              aliases={"U": "C", "O": "K", "J": "X"}),
    "bytes": _make_alphabet("bytes", bytes(range(256)), match_codes=256, wildcard=None,
                            fold_case=False),
}

#: The ``alphabet=`` that infers the alphabet from the data (:func:`resolve_alphabet`).
AUTO = "auto"


def get_alphabet(alphabet: str | Alphabet) -> Alphabet:
    """Return the :class:`Alphabet` called ``alphabet`` (``"dna"``, ``"protein"``, ``"bytes"``)."""
    if isinstance(alphabet, Alphabet):
        return alphabet
    try:
        return ALPHABETS[alphabet.lower()]
    except (KeyError, AttributeError):
        raise ValueError(
            f"unknown alphabet {alphabet!r}: expected one of {', '.join(ALPHABETS)}"
        ) from None


#: How much of each input :func:`resolve_alphabet` reads: the first records, up to this many
#: records or this many symbols.
_SAMPLE_RECORDS = 1000
_SAMPLE_SYMBOLS = 1 << 16
#: Bytes read from the start of a file to find those records (headers and qualities too).
_SAMPLE_FILE_BYTES = 1 << 20


def _byte_set(symbols: bytes) -> np.ndarray:
    """A mask over the 256 byte values: ``symbols`` in either case."""
    mask = np.zeros(256, dtype=bool)
    mask[list(symbols.upper() + symbols.lower())] = True
    return mask


_LETTERS = _byte_set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_NUCLEOTIDES = _byte_set(b"ACGTUN")
_IUPAC_NUCLEOTIDES = _byte_set(b"ACGTUNRYSWKMBDHV")
#: Alignment gaps: no symbol of any alphabet, so they do not decide one (encoding reports them).
_GAPS = _byte_set(b"-.")


def infer_alphabet(sample: bytes) -> Alphabet:
    """The alphabet that the symbols ``sample`` are written in.

    ``dna`` when at least 90% of the symbols are letters, at least 90% of the letters (any
    case) are nucleotide codes (``ACGTU``, ``N`` and the other IUPAC codes ``RYSWKMBDHV``) and
    at least half are ``ACGTUN`` (a peptide may be spelt in IUPAC nucleotide codes only,
    hardly in mostly ``ACGTUN``); else ``protein`` when every symbol is a letter or ``*``;
    else ``bytes``. Gaps (``-``, ``.``) are left out, and a sample of no symbols is ``dna``.

    Examples
    --------
    >>> [infer_alphabet(text).name for text in (b"ACGUNNNNRY", b"MEEPQSDPSV*", b"Hi, you")]
    ['dna', 'protein', 'bytes']
    """
    counts = np.bincount(np.frombuffer(sample, dtype=np.uint8), minlength=256)
    symbols = int(counts[~_GAPS].sum())
    letters = int(counts[_LETTERS].sum())
    if symbols == 0 or (10 * letters >= 9 * symbols
                        and 10 * int(counts[_IUPAC_NUCLEOTIDES].sum()) >= 9 * letters
                        and 2 * int(counts[_NUCLEOTIDES].sum()) >= letters):
        return ALPHABETS["dna"]
    if letters and letters + int(counts[ord("*")]) == symbols:
        return ALPHABETS["protein"]
    return ALPHABETS["bytes"]


def _is_auto(alphabet: str | Alphabet) -> bool:
    return isinstance(alphabet, str) and alphabet.lower() == AUTO


def resolve_alphabet(alphabet: str | Alphabet, *sources: Any,
                     matrix: bool = False) -> tuple[Alphabet, tuple[Any, ...]]:
    """The one alphabet to encode all of ``sources`` with, and the sources to read from then on.

    An ``alphabet`` other than ``"auto"`` is looked up (:func:`get_alphabet`). ``"auto"`` is
    the alphabet of the first source that is a :class:`SequenceSet` (encoded already), else
    ``protein`` when the scoring has a substitution ``matrix``, else :func:`infer_alphabet` of
    the first records of all the sources together (up to 1,000 records or 64 KiB of symbols
    of each), so that queries and targets never get two alphabets.

    Parameters
    ----------
    alphabet : ``"auto"``, an alphabet name or an :class:`Alphabet`
    *sources : SequenceSet, os.PathLike to FASTA/FASTQ (plain or compressed), or iterable of
        sequences or of ``(name, sequence)`` pairs
    matrix : bool
        The sequences are to be scored with a substitution matrix.

    Returns
    -------
    alphabet : Alphabet
    sources : tuple
        ``sources``, but a one-shot iterator is replaced by one that yields the records read
        from it first and then the rest.

    Examples
    --------
    >>> resolve_alphabet("auto", ["ACGUUGCA"], ["acgtnnnn"])[0].name
    'dna'
    >>> resolve_alphabet("auto", ["MEEPQSDPSVEPPLSQETF"])[0].name
    'protein'
    """
    if not _is_auto(alphabet):
        return get_alphabet(alphabet), sources
    encoded = [source.alphabet for source in sources if isinstance(source, SequenceSet)]
    if encoded:
        return encoded[0], sources  # a disagreeing set is reported where the sets are paired
    if matrix:
        return ALPHABETS["protein"], sources
    samples, kept = zip(*map(_sample, sources), strict=True) if sources else ((), ())
    return infer_alphabet(b"".join(samples)), tuple(kept)


def _sample(source: Any) -> tuple[bytes, Any]:
    """The symbols of the first records of ``source`` (none from what is no collection of
    sequences: encoding reports it), and ``source`` to read from then on."""
    if isinstance(source, os.PathLike):
        return _file_sample(source), source
    if isinstance(source, (str, bytes, bytearray, memoryview, np.ndarray)) or \
            not isinstance(source, Iterable):
        return b"", source
    records = iter(source)
    head, parts, budget = [], [], _SAMPLE_SYMBOLS
    for record in itertools.islice(records, _SAMPLE_RECORDS):
        head.append(record)
        symbols = _record_sample(record)
        parts.append(symbols[:budget])
        budget -= len(symbols)
        if budget <= 0:
            break
    if not isinstance(source, Sequence):  # an iterator: put back what was read
        source = itertools.chain(head, records)
    return b"".join(parts), source


def _record_sample(record: Any) -> bytes:
    """The first symbols of a sequence (or of a ``(name, sequence)`` pair) as bytes."""
    if isinstance(record, tuple) and len(record) == 2:
        record = record[1]
    if isinstance(record, (str, bytes, bytearray)) or \
            (isinstance(record, np.ndarray) and record.ndim == 1):
        record = record[:_SAMPLE_SYMBOLS]
    try:
        return _raw_bytes(record, ALPHABETS["bytes"]).tobytes()
    except TypeError:  # not a sequence: encoding reports it
        return b""


def _file_sample(path: os.PathLike) -> bytes:
    """The symbols of the first records of a FASTA or FASTQ file (plain or compressed);
    none where it cannot be read or is neither (reading it reports why)."""
    import xopen  # loads with the file readers, once a file is read

    from .io import DECOMPRESSION_ERRORS

    try:
        with xopen.xopen(os.fspath(path), "rb", threads=0) as handle:
            lines = handle.read(_SAMPLE_FILE_BYTES).lstrip().splitlines()
    except (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError, *DECOMPRESSION_ERRORS):
        return b""
    if lines and lines[0].startswith(b"@"):  # FASTQ: the second line of every four
        sequences = lines[1::4][:_SAMPLE_RECORDS]
    elif lines and lines[0].startswith(b">"):
        sequences, records = [], 0
        for line in lines:
            if not line.startswith(b">"):
                sequences.append(line)
            elif records == _SAMPLE_RECORDS:
                break
            else:
                records += 1
    else:
        return b""
    return b"".join(line.strip() for line in sequences)[:_SAMPLE_SYMBOLS]


def _raw_bytes(sequence: Any, alphabet: Alphabet) -> np.ndarray:
    if isinstance(sequence, str):
        if alphabet.name == "bytes":
            # Every byte is a symbol: keep every character distinct through UTF-8.
            return np.frombuffer(sequence.encode("utf-8"), dtype=np.uint8)
        # latin-1 keeps one byte per character, so positions in errors are character positions;
        # characters beyond latin-1 become '?', which no biological alphabet accepts.
        return np.frombuffer(sequence.encode("latin-1", errors="replace"), dtype=np.uint8)
    if isinstance(sequence, (bytes, bytearray, memoryview)):
        return np.frombuffer(bytes(sequence), dtype=np.uint8)
    if isinstance(sequence, np.ndarray):
        if sequence.dtype == np.uint8 and sequence.ndim == 1:
            return sequence
        if sequence.dtype.kind == "S" and sequence.ndim == 0:
            return np.frombuffer(sequence.tobytes(), dtype=np.uint8)
        raise TypeError(f"sequence arrays must be 1-D uint8 (ASCII bytes), got {sequence.dtype}"
                        f" with shape {sequence.shape}")
    raise TypeError(f"cannot encode a {type(sequence).__name__} as a sequence; "
                    "pass str, bytes or a uint8 array")


def encode(sequence: Any, alphabet: str | Alphabet = AUTO, *, name: str = "",
           index: int = 0, invalid: str = "error") -> np.ndarray:
    """Encode one sequence into ``uint8`` codes of ``alphabet``.

    Parameters
    ----------
    sequence : str, bytes or uint8 array of ASCII
    alphabet : ``"auto"``, an alphabet name or :class:`Alphabet`
        ``dna``: ``ACGTN`` and RNA's ``U`` (read as ``T``), any case; ``protein``: the 24
        symbols of the NCBI matrices, and ``U``/``O``/``J`` read as ``C``/``K``/``X``;
        ``bytes``: every byte; ``"auto"`` (the default): the one that the sequence is written
        in (:func:`resolve_alphabet`).
    name, index : record name and 0-based record index, used in error messages
    invalid : ``"error"`` raises :class:`InvalidSymbolError` at the first symbol outside the
        alphabet; ``"wildcard"`` maps such symbols to the wildcard (``N`` for DNA, ``X`` for
        protein).

    Examples
    --------
    >>> encode("ACGTN").tolist()
    [0, 1, 2, 3, 4]
    >>> encode("MEEPQ").tolist()  # protein
    [12, 6, 6, 14, 5]
    """
    alpha, _ = resolve_alphabet(alphabet, [sequence])
    raw = _raw_bytes(sequence, alpha)
    codes, position = _translate(raw.tobytes(), alpha, invalid)
    if position >= 0:
        symbol = sequence[position] if isinstance(sequence, str) else chr(raw[position])
        label = f"{name!r} " if name else ""
        hint = ("; use invalid='wildcard' to read it as "
                f"{chr(alpha.symbols[alpha.wildcard])}" if alpha.wildcard is not None else "")
        raise InvalidSymbolError(
            f"record {label}(#{index}): symbol {symbol!r} at position {position} is not in "
            f"the {alpha.name} alphabet ({int((codes == _INVALID_CODE).sum())} invalid "
            f"symbol(s) in this record){hint}, or choose alphabet='protein'/'bytes'"
        )
    return codes


def encode_many(sequences: Sequence[Any], alphabet: str | Alphabet = AUTO, *,
                names: Sequence[str] | None = None, first_index: int = 0,
                invalid: str = "error") -> tuple[np.ndarray, np.ndarray]:
    """Encode many sequences at once into concatenated codes and ``int64`` offsets.

    The same result and errors as :func:`encode` on each sequence, but one table lookup over
    all of them: strings are joined before encoding, so a million reads cost a few NumPy
    passes instead of a million calls. ``names`` and ``first_index`` (the index of the first
    sequence in its collection) go into error messages; ``"auto"`` infers one alphabet for all
    the sequences from the first ones (:func:`resolve_alphabet`).

    Examples
    --------
    >>> codes, offsets = encode_many(["ACG", "tn"])
    >>> codes.tolist(), offsets.tolist()
    ([0, 1, 2, 3, 4], [0, 3, 5])
    """
    alpha, _ = resolve_alphabet(alphabet, sequences)
    offsets = np.zeros(len(sequences) + 1, dtype=np.int64)
    if alpha.name != "bytes" and all(type(item) is str for item in sequences):
        # latin-1 keeps one byte per character (as encode), so the lengths are the strings'.
        np.cumsum(np.fromiter(map(len, sequences), dtype=np.int64, count=len(sequences)),
                  out=offsets[1:])
        raw = "".join(sequences).encode("latin-1", errors="replace")
    else:
        parts = [_raw_bytes(item, alpha) for item in sequences]
        np.cumsum([len(part) for part in parts], out=offsets[1:])
        raw = np.concatenate(parts).tobytes() if parts else b""
    codes, position = _translate(raw, alpha, invalid)
    if position >= 0:
        _raise_at(position, offsets, sequences.__getitem__, alpha, names, first_index)
    return codes, offsets


def encode_packed(raw: bytes, offsets: np.ndarray, alphabet: str | Alphabet = AUTO, *,
                  names: Sequence[str] | None = None, first_index: int = 0,
                  invalid: str = "error") -> np.ndarray:
    """Encode the concatenated bytes ``raw`` of sequences that ``offsets`` delimit (as
    :func:`gpualign.io.read_packed` gives them): the codes, with :func:`encode`'s errors
    (``"auto"``: the alphabet of the first symbols, :func:`infer_alphabet`).

    Examples
    --------
    >>> encode_packed(b"ACGTGG", np.array([0, 4, 6])).tolist()
    [0, 1, 2, 3, 2, 2]
    """
    alpha = infer_alphabet(raw[:_SAMPLE_SYMBOLS]) if _is_auto(alphabet) else \
        get_alphabet(alphabet)
    codes, position = _translate(raw, alpha, invalid)
    if position >= 0:
        _raise_at(position, offsets, lambda number: raw[offsets[number]:offsets[number + 1]],
                  alpha, names, first_index)
    return codes


def _raise_at(position: int, offsets: np.ndarray, record: Any, alphabet: Alphabet,
              names: Sequence[str] | None, first_index: int) -> None:
    """Encode alone the record (``record(number)``) holding the invalid symbol at ``position``
    of the joined sequences: :func:`encode` raises the error, naming record and position."""
    number = int(np.searchsorted(offsets, position, side="right")) - 1
    encode(record(number), alphabet, name=names[number] if names is not None else "",
           index=first_index + number)


#: Code of a symbol outside the alphabet in :func:`_translate` (no alphabet but bytes has 255).
_INVALID_CODE = 255


def code_table(alphabet: Alphabet, invalid: str) -> np.ndarray:
    """Every byte's code in ``alphabet`` (256 uint8): a symbol outside it the wildcard where
    ``invalid="wildcard"`` and the alphabet has one, else ``_INVALID_CODE``.

    Examples
    --------
    >>> code_table(get_alphabet("dna"), "wildcard")[list(b"AcgTR")].tolist()
    [0, 1, 2, 3, 4]
    """
    if invalid not in ("error", "wildcard"):
        raise ValueError(f"invalid={invalid!r}: expected 'error' or 'wildcard'")
    outside = alphabet.wildcard if invalid == "wildcard" and alphabet.wildcard is not None \
        else _INVALID_CODE
    return np.where(alphabet.lookup < 0, outside, alphabet.lookup).astype(np.uint8)


def _translate(raw: bytes, alphabet: Alphabet, invalid: str) -> tuple[np.ndarray, int]:
    """The codes of ``raw`` (writable), symbols outside the alphabet made wildcards when
    ``invalid="wildcard"``; and the position of the first one left (``-1`` for none)."""
    table = code_table(alphabet, invalid)
    if alphabet.name == "bytes":  # every byte is its own code
        return np.frombuffer(bytearray(raw), dtype=np.uint8), -1
    codes = np.frombuffer(bytearray(raw).translate(table.tobytes()), dtype=np.uint8)
    # _INVALID_CODE is the largest byte: a maximum finds it without a temporary array.
    if not len(codes) or codes.max() != _INVALID_CODE:
        return codes, -1
    return codes, int(np.argmax(codes == _INVALID_CODE))


class SequenceSet:
    """Encoded sequences packed into one array with offsets and names.

    Build one with :meth:`from_sequences` or :meth:`from_file`; every API also accepts plain lists
    and converts them with :func:`as_sequence_set`.

    Attributes
    ----------
    codes : np.ndarray of uint8
        All sequences' codes, concatenated.
    offsets : np.ndarray of int64
        ``codes[offsets[i]:offsets[i+1]]`` is sequence ``i``; ``len(offsets) == len(self) + 1``.
    names : list of str
        Record names: from a file, the headers up to their first white space (see
        :func:`gpualign.io.read_records`).
    descriptions : list of str
        The rest of each header (``""`` when none, and for sets not read from a file).
    alphabet : Alphabet

    Examples
    --------
    >>> s = SequenceSet.from_sequences(["ACGT", "GGN"], names=["a", "b"])
    >>> len(s), s.lengths.tolist(), s[1]
    (2, [4, 3], 'GGN')
    """

    def __init__(self, codes: np.ndarray, offsets: np.ndarray, names: Sequence[str],
                 alphabet: str | Alphabet = "dna", descriptions: Sequence[str] | None = None):
        # Codes, not symbols: nothing to infer an alphabet from, so "dna" stays the default.
        self.codes = np.ascontiguousarray(codes, dtype=np.uint8)
        self.offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        self.names = list(names)
        self.descriptions = [""] * len(self.names) if descriptions is None else list(descriptions)
        self.alphabet = get_alphabet(alphabet)
        if self.offsets.ndim != 1 or len(self.offsets) != len(self.names) + 1:
            raise ValueError("offsets must have one entry more than names")
        if len(self.descriptions) != len(self.names):
            raise ValueError(f"{len(self.descriptions)} descriptions for {len(self.names)} names")
        if self.offsets[0] != 0 or self.offsets[-1] != len(self.codes):
            raise ValueError("offsets must start at 0 and end at len(codes)")
        if np.any(np.diff(self.offsets) < 0):
            raise ValueError("offsets must be non-decreasing")
        self._device: dict[int, tuple[Any, Any]] = {}

    @classmethod
    def from_sequences(cls, sequences: Iterable[Any], alphabet: str | Alphabet = AUTO, *,
                       names: Sequence[str] | None = None, invalid: str = "error",
                       duplicates: str | None = None) -> SequenceSet:
        """Encode an iterable of str/bytes/uint8 arrays (see :func:`encode`; ``"auto"``,
        the default, infers the alphabet from the first sequences: :func:`resolve_alphabet`).
        ``names`` that repeat are kept, refused or renamed as a file's (``duplicates``: see
        :meth:`from_file`; with checks, an empty name becomes the record's number too).

        Examples
        --------
        >>> SequenceSet.from_sequences(["MEEPQSDPSV", "MKV*"]).alphabet.name
        'protein'
        """
        sequences = list(sequences)
        alpha, _ = resolve_alphabet(alphabet, sequences)
        if names is None:
            names = [str(i) for i in range(len(sequences))]
        elif len(names) != len(sequences):
            raise ValueError(f"{len(names)} names for {len(sequences)} sequences")
        else:
            settle = name_settler("names", duplicates)
            names = settle(list(names)) if settle else names
        return cls(*encode_many(sequences, alpha, names=names, invalid=invalid), names, alpha)

    @classmethod
    def from_file(cls, path: str | os.PathLike, alphabet: str | Alphabet = AUTO, *,
                  invalid: str = "error", parser: str = "cpu",
                  duplicates: str | None = None) -> SequenceSet:
        """Read a FASTA or FASTQ file (plain, .gz, .bz2, .xz), streamed record by record;
        ``parser`` ("cpu" or "cuda") is where FASTA blocks are parsed (see
        :func:`gpualign.io.read_packed`); ``"auto"``, the default, infers the alphabet from
        the first records (:func:`resolve_alphabet`). Names and descriptions are those of
        :func:`gpualign.io.read_records`; records with the same name are kept as they are,
        refused or renamed (``duplicates`` "keep", "error" or "rename"; None, the default,
        takes :data:`gpualign.config.DUPLICATE_NAMES`, which is "keep" unless changed)."""
        alpha, _ = resolve_alphabet(alphabet, pathlib.Path(path))
        whole = [sequences for _, sequences in read_sets(path, alpha, batch_residues=1 << 62,
                                                          invalid=invalid, parser=parser,
                                                          duplicates=duplicates)]
        return whole[0] if whole else cls.from_codes([], [], alpha)

    @classmethod
    def iter_file(cls, path: str | os.PathLike, alphabet: str | Alphabet = AUTO, *,
                  batch_residues: int = 1 << 26, invalid: str = "error",
                  duplicates: str | None = None) -> Iterator[SequenceSet]:
        """Yield consecutive sets of records from a file, each holding about ``batch_residues``
        symbols, so that host memory stays bounded whatever the file size; alphabet and names
        as :meth:`from_file` (repeated names are found across the sets)."""
        for _, sequences in read_sets(path, alphabet, batch_residues=batch_residues,
                                      invalid=invalid, duplicates=duplicates):
            yield sequences

    @classmethod
    def from_codes(cls, encoded: list[np.ndarray], names: Sequence[str],
                   alphabet: str | Alphabet) -> SequenceSet:
        """A set of sequences already encoded with ``alphabet`` (uint8 code arrays)."""
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(e) for e in encoded], out=offsets[1:])
        codes = np.concatenate(encoded) if encoded else np.zeros(0, dtype=np.uint8)
        return cls(codes, offsets, names, alphabet)

    def __len__(self) -> int:
        return len(self.names)

    def __repr__(self) -> str:
        return (f"SequenceSet({len(self)} sequences, {len(self.codes)} symbols, "
                f"alphabet={self.alphabet.name!r})")

    @property
    def lengths(self) -> np.ndarray:
        """Length of every sequence (int64)."""
        return self.offsets[1:] - self.offsets[:-1]  # np.diff's, without its checks

    def codes_of(self, index: int) -> np.ndarray:
        """The codes of sequence ``index`` (a view)."""
        return self.codes[self.offsets[index]:self.offsets[index + 1]]

    def __getitem__(self, index: int) -> str:
        if not -len(self) <= index < len(self):
            raise IndexError(index)
        return self.alphabet.decode(self.codes_of(index % len(self)))

    def take(self, indices: np.ndarray) -> SequenceSet:
        """A new set holding the sequences ``indices`` (in that order)."""
        indices = np.asarray(indices, dtype=np.int64)
        lengths = self.lengths[indices]
        offsets = np.zeros(len(indices) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        # Gather all residues at once: position p of the new set comes from source offset + rank.
        starts = np.repeat(self.offsets[indices] - offsets[:-1], lengths)
        codes = self.codes[starts + np.arange(offsets[-1], dtype=np.int64)]
        return SequenceSet(codes, offsets, [self.names[i] for i in indices], self.alphabet,
                           [self.descriptions[i] for i in indices])

    def to_device(self, device: int | None = None) -> tuple[Any, Any]:
        """Return ``(codes, offsets)`` as CuPy arrays on ``device``; copied once, then cached.

        ``codes`` is followed by ``DEVICE_PADDING`` zero bytes on the device."""
        import cupy

        device_id = cupy.cuda.Device().id if device is None else device
        if device_id not in self._device:
            with cupy.cuda.Device(device_id):
                # Zero padding lets kernels read aligned 16-byte words that hold the last symbol.
                # A memset and a copy into place: no kernel, no second copy on the device.
                codes = cupy.empty(len(self.codes) + DEVICE_PADDING, dtype=cupy.uint8)
                codes.data.memset_async(0, codes.nbytes)
                codes[:len(self.codes)].set(np.ascontiguousarray(self.codes))
                self._device[device_id] = (codes, cupy.asarray(self.offsets))
        return self._device[device_id]

    def pin_memory(self) -> SequenceSet:
        """A copy of the set whose codes lie in page-locked ("pinned") host memory (needs CuPy).

        Streaming backends (:func:`gpualign.lcs_top` and friends on CUDA) copy batches of a
        pinned set to the GPU directly at full bus speed, with no staging copy and no locking
        per call; worth it for a large set searched more than once. Pinned memory cannot be
        swapped out: pin only what fits comfortably in RAM. Where the system refuses to pin,
        the copy lies in ordinary memory (:func:`gpualign.cuda.host.pinned_copy`).

        Examples
        --------
        >>> subjects = SequenceSet.from_sequences(["ACGT", "GGA"])
        >>> subjects.pin_memory()  # doctest: +SKIP
        SequenceSet(2 sequences, 7 symbols, alphabet dna)
        """
        from .cuda.host import pinned_copy

        return SequenceSet(pinned_copy(self.codes), self.offsets, self.names, self.alphabet,
                           self.descriptions)

    def view(self, lo: int, hi: int) -> SequenceSet:
        """Sequences ``lo .. hi - 1`` as a set that shares this one's codes (no copy)."""
        base = self.offsets[lo]
        return SequenceSet(self.codes[base:self.offsets[hi]], self.offsets[lo:hi + 1] - base,
                           self.names[lo:hi], self.alphabet, self.descriptions[lo:hi])

    def adopt_device_copy(self, codes: Any, offsets: Any) -> None:
        """Take ``(codes, offsets)``, CuPy arrays on the current device laid out as
        :meth:`to_device` makes them (``codes`` followed by ``DEVICE_PADDING`` zero bytes), as
        this set's device copy, so that no other is made: the caller copied them itself (a
        database streamed through buffers of its own) and keeps them until
        :meth:`release_device`."""
        if len(codes) != len(self.codes) + DEVICE_PADDING or len(offsets) != len(self.offsets):
            raise ValueError("adopt_device_copy: arrays of another set's layout")
        import cupy

        self._device[cupy.cuda.Device().id] = (codes, offsets)

    def on_device(self, device: int | None = None) -> bool:
        """Whether :meth:`to_device` has a copy on ``device`` (default: the current CUDA
        device) to return, made or adopted earlier (needs CuPy)."""
        import cupy

        return (cupy.cuda.Device().id if device is None else device) in self._device

    def release_device(self, device: int | None = None) -> None:
        """Drop the device copies made by :meth:`to_device` (those of every device, or of
        ``device`` only), giving their GPU memory back."""
        if device is None:
            self._device.clear()
        else:
            self._device.pop(device, None)


def name_settler(source: str, duplicates: str | None = None,
                 ) -> Callable[[list[str]], list[str]] | None:
    """What settles names given in memory, batch after batch, as :func:`gpualign.io.read_records`
    settles a file's (``source`` names them in messages; ``duplicates`` as
    :meth:`SequenceSet.from_file`); None when they are kept as they are ("keep", the default
    setting), so that in-memory work never loads the file readers.

    Examples
    --------
    >>> name_settler("names", "keep") is None
    True
    >>> name_settler("names", "error")(["a", "b"])
    ['a', 'b']
    """
    from . import config

    if (config.DUPLICATE_NAMES if duplicates is None else duplicates) == "keep":
        return None
    from .io import _Names

    return _Names(source, duplicates).batch


def as_sequence_set(sequences: Any, alphabet: str | Alphabet = AUTO, *,
                    invalid: str = "error", role: str = "sequences",
                    parser: str = "cpu") -> SequenceSet:
    """Accept a :class:`SequenceSet`, a :class:`os.PathLike` to a FASTA/FASTQ file (its FASTA
    parsed on the ``parser`` backend), or an iterable of str/bytes/uint8 arrays, and return a
    :class:`SequenceSet`.

    A plain ``str`` is refused because it is ambiguous (one sequence, or a file name?): wrap a
    single sequence in a list, or a file name in :class:`pathlib.Path`. A SequenceSet keeps its
    alphabet; ``"auto"`` infers the others' (:func:`resolve_alphabet`).
    """
    if not _is_auto(alphabet):
        alphabet = get_alphabet(alphabet)
    if isinstance(sequences, SequenceSet):
        return sequences
    if isinstance(sequences, (str, bytes)):
        raise TypeError(f"{role}: pass a list of sequences, a SequenceSet or a pathlib.Path, "
                        f"not a single {type(sequences).__name__}")
    if isinstance(sequences, os.PathLike):
        return SequenceSet.from_file(sequences, alphabet, invalid=invalid, parser=parser)
    return SequenceSet.from_sequences(sequences, alphabet, invalid=invalid)


def read_sets(path: str | os.PathLike, alphabet: str | Alphabet = AUTO, *,
              batch_residues: int = 1 << 26, invalid: str = "error",
              parser: str = "cpu", duplicates: str | None = None,
              ) -> Iterator[tuple[int, SequenceSet]]:
    """Consecutive sets of records of a FASTA or FASTQ file (plain, .gz, .bz2, .xz), each
    holding about ``batch_residues`` symbols, with the index of its first record in the file.

    Parameters
    ----------
    path : str or os.PathLike
    alphabet, invalid : as :func:`encode` (``"auto"``: from the first records of the file, as
        :meth:`SequenceSet.from_file`); errors name the record by its index in the file.
    batch_residues : int
        A set closes at the record that brings it to this many symbols.
    parser : {"cpu", "cuda"}
        Where FASTA blocks are parsed (see :func:`gpualign.io.read_packed`).
    duplicates : {"keep", "error", "rename"}, optional
        Records with the same name (see :meth:`SequenceSet.from_file`).
    """
    from .io import read_packed  # dnaio and xopen load only once a file is read

    alpha, _ = resolve_alphabet(alphabet, pathlib.Path(path))
    start = 0
    for names, descriptions, raw, offsets in read_packed(
            path, batch_residues, parser, descriptions=True, duplicates=duplicates):
        codes = encode_packed(raw, offsets, alpha, names=names, first_index=start,
                              invalid=invalid)
        yield start, SequenceSet(codes, offsets, names, alpha, descriptions)
        start += len(names)
