"""The SAM writer (:func:`gpualign.map.sam.write_records`, one compiled pass a batch) against
the per-record writer it replaced, kept here as the reference: random batches (pairs and
single reads, reverse, unmapped and supplementary records with hard clips and SA tags, reads
with N and empty ones, FASTQ qualities or none, names with and without /1 and /2, non-ASCII
names) and real mapped reads, text and binary output.
"""

from __future__ import annotations

import io
import re
import tempfile
from pathlib import Path

import numpy as np
import pytest

import gpualign
from gpualign.map._reads import ReadBatch, read_batches, template_name
from gpualign.map.api import MappingResult
from gpualign.map.sam import (
    FIRST,
    NO_SCORE,
    PAIRED,
    REVERSE,
    SECOND,
    SUPPLEMENTARY,
    UNMAPPED,
    SamCigars,
    write_records,
)
from gpualign.sequences import SequenceSet

DATA = Path(__file__).parent / "data"

# --------------------------------------------------------------------------- the reference

_COMPLEMENT = str.maketrans("ACGTN", "TGCAN")
_HARD_CLIPS = re.compile(r"^(?:([0-9]+)H)?.*?(?:([0-9]+)H)?$")


def reference_write_records(out, result, records, reads, mates, reference_names):
    """The writer before the compiled one (main at dd7f605): a line a record, in Python."""
    lines = []
    flags, reads_of, mates_of = (result.flag[records].tolist(), result.read[records].tolist(),
                                 result.mate[records].tolist())
    contig, pos, mapq = (result.contig[records].tolist(), result.pos[records].tolist(),
                         result.mapq[records].tolist())
    mate_contig, mate_pos, tlen = (result.mate_contig[records].tolist(),
                                   result.mate_pos[records].tolist(),
                                   result.tlen[records].tolist())
    nm, score, xs = (result.nm[records].tolist(), result.score[records].tolist(),
                     result.xs[records].tolist())
    cigars = result.cigar.take(records).to_text()
    texts = {id(batch): _texts(batch) for batch in (reads, mates) if batch is not None}
    for slot, record in enumerate(records.tolist()):
        batch = mates if mates_of[slot] == 2 else reads
        number = reads_of[slot] - batch.start
        name = batch.sequences.names[number]
        if mates is not None:
            name = template_name(name)
        forward, backward, offsets = texts[id(batch)]
        lo, hi = offsets[number], offsets[number + 1]
        quality = batch.qualities[lo:hi].tobytes().decode() if batch.qualities is not None \
            else None
        if flags[slot] & REVERSE:
            sequence = backward[len(backward) - hi:len(backward) - lo]
            quality = quality[::-1] if quality else quality
        else:
            sequence = forward[lo:hi]
        if flags[slot] & SUPPLEMENTARY:
            sequence, quality = _hard_clipped(cigars[slot], sequence, quality)
        rname = reference_names[contig[slot]] if contig[slot] >= 0 else "*"
        if mate_contig[slot] < 0:
            rnext = "*"
        elif mate_contig[slot] == contig[slot]:
            rnext = "="
        else:
            rnext = reference_names[mate_contig[slot]]
        tags = ""
        if not flags[slot] & UNMAPPED:
            tags = f"\tNM:i:{nm[slot]}\tAS:i:{score[slot]}"
            if xs[slot] != NO_SCORE:
                tags += f"\tXS:i:{xs[slot]}"
            if result.sa[record] is not None:
                tags += f"\tSA:Z:{result.sa[record]}"
        lines.append(f"{name}\t{flags[slot]}\t{rname}\t{pos[slot] + 1}\t{mapq[slot]}\t"
                     f"{cigars[slot] or '*'}\t{rnext}\t{mate_pos[slot] + 1}\t"
                     f"{tlen[slot]}\t{sequence or '*'}\t{quality or '*'}{tags}\n")
    out.write("".join(lines))


def _hard_clipped(cigar, sequence, quality):
    left, right = (int(n or 0) for n in _HARD_CLIPS.match(cigar).groups())
    end = len(sequence) - right
    return sequence[left:end], quality[left:end] if quality else quality


def _texts(batch):
    text = batch.sequences.alphabet.decode(batch.sequences.codes)
    return text, text.translate(_COMPLEMENT)[::-1], batch.sequences.offsets.tolist()


# --------------------------------------------------------------------------- random batches


def _batch(rng, start, count, mate, qualities, names_kind):
    """``count`` random reads (lengths 0 to 40, some N) numbered from ``start``."""
    lengths = rng.integers(0, 41, count)
    lengths[rng.random(count) < 0.7] = 30
    codes = rng.integers(0, 4, int(lengths.sum())).astype(np.uint8)
    codes[rng.random(len(codes)) < 0.03] = 4
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    names = []
    for i in range(start, start + count):
        name = {"plain": f"r{i}", "tagged": f"r{i}/{mate}", "odd": ["/1", "x/", "é/2", f"q{i}/3",
                                                                     f"r{i}/{mate}"][i % 5]}
        names.append(name[names_kind])
    quals = rng.integers(33, 75, len(codes)).astype(np.uint8) if qualities else None
    return ReadBatch(start, SequenceSet(codes, offsets, names, "dna"), quals)


def _cigar(rng, length, supplementary):
    """A CIGAR of a read of ``length`` bases: hard clips at either end for a supplementary
    record, soft clips otherwise, M/I/D between."""
    left, right = (int(rng.integers(0, length // 3 + 1)) if rng.random() < 0.6 else 0
                   for _ in range(2))
    middle = length - left - right
    runs = []
    clip = "H" if supplementary else "S"
    if left:
        runs.append(f"{left}{clip}")
    while middle > 0:
        step = int(rng.integers(1, middle + 1))
        runs.append(f"{step}{'M' if not runs or runs[-1][-1] != 'M' else 'I'}")
        if rng.random() < 0.2:
            runs.append(f"{int(rng.integers(1, 2000))}D")
        middle -= step
    if right:
        runs.append(f"{right}{clip}")
    return "".join(runs)


def _result(rng, reads, mates, contigs):
    """A random result over the reads (and mates) of a batch: records of each read in order,
    some split into a primary and a supplementary record."""
    batches = [(reads, 1 if mates is not None else 0)]
    if mates is not None:
        batches.append((mates, 2))
    rows = []
    for number in range(len(reads)):
        for batch, mate in batches:
            length = int(batch.sequences.offsets[number + 1] - batch.sequences.offsets[number])
            split = length > 0 and rng.random() < 0.2
            for supplementary in ([False, True] if split else [False]):
                rows.append((batch.start + number, mate, length, supplementary, split))
    count = len(rows)
    flag = np.zeros(count, dtype=np.uint16)
    cigars, sa = [], []
    for i, (_, mate, length, supplementary, split) in enumerate(rows):
        bits = int(rng.integers(0, 0x800)) & ~(UNMAPPED | PAIRED | FIRST | SECOND | 0x100)
        if not supplementary and rng.random() < 0.2:
            bits |= UNMAPPED
        if supplementary:
            bits |= SUPPLEMENTARY
        if mate:
            bits |= PAIRED | (FIRST if mate == 1 else SECOND)
        flag[i] = bits
        cigars.append(None if bits & UNMAPPED else _cigar(rng, length, supplementary))
        sa.append(f"chr{int(rng.integers(0, 9))},{int(rng.integers(1, 10**6))},+,20S10M,60,1;"
                  if split else None)
    contig = rng.integers(-1, contigs, count)
    mate_contig = rng.integers(-1, contigs, count)
    same = rng.random(count) < 0.4
    mate_contig[same] = contig[same]
    xs = rng.integers(-50, 150, count).astype(np.int32)
    xs[rng.random(count) < 0.5] = NO_SCORE
    return MappingResult(
        read=np.array([row[0] for row in rows], dtype=np.int64),
        mate=np.array([row[1] for row in rows], dtype=np.int8), flag=flag,
        contig=contig, pos=rng.integers(-1, 10**9, count),
        mapq=rng.integers(0, 61, count).astype(np.uint8),
        cigar=SamCigars.from_strings(cigars),
        nm=rng.integers(-1, 30, count).astype(np.int32),
        score=rng.integers(-200, 200, count).astype(np.int32), xs=xs,
        mate_contig=mate_contig, mate_pos=rng.integers(-1, 10**9, count),
        tlen=rng.integers(-1000, 1000, count), sa=sa)


def _both(result, records, reads, mates, names):
    want, got = io.StringIO(), io.StringIO()
    reference_write_records(want, result, records, reads, mates, names)
    write_records(got, result, records, reads, mates, names)
    return want.getvalue(), got.getvalue()


@pytest.mark.parametrize("seed", range(12))
def test_compiled_lines_equal_the_per_record_writer(seed):
    rng = np.random.default_rng(seed)
    paired, qualities = seed % 2 == 1, seed % 4 < 2
    names_kind = ["plain", "tagged", "odd"][seed % 3]
    start = int(rng.integers(0, 1000))
    count = int(rng.integers(1, 60))
    reads = _batch(rng, start, count, 1, qualities, names_kind)
    mates = (_batch(rng, start, count, 2, qualities and seed % 3 != 0, names_kind)
             if paired else None)
    references = ["chr0", "contig één", "x" * 70][:1 + seed % 3]
    result = _result(rng, reads, mates, len(references))
    everything = np.arange(len(result))
    for records in (everything, everything[3:-2], rng.permutation(everything)[:len(result) // 2],
                    everything[:0]):
        want, got = _both(result, records, reads, mates, references)
        assert got == want
    text, binary = io.StringIO(), io.BytesIO()
    write_records(text, result, everything, reads, mates, references)
    write_records(binary, result, everything, reads, mates, references)
    assert binary.getvalue() == text.getvalue().encode("utf-8")


def test_mapped_reads_written_as_before(tmp_path):
    reads = DATA / "ecoli_reads_2000.fastq.gz"
    result = gpualign.map_reads(DATA / "ecoli_10kb.fasta.gz", reads, backend="cpu")
    batch = next(read_batches(reads, len(result)))
    records = np.arange(len(result))
    want, got = _both(result, records, batch, None, result.reference_names)
    assert got == want and want.count("\n") == len(result)


def test_the_writer_checks_what_it_indexes_and_writes_every_byte(tmp_path):
    # The compiled pass reads past no array: a record whose contig is not among the reference
    # names, or whose read is not in the batches, is refused before it runs. Binary streams get
    # every byte, a raw one that takes part of them a call included; text streams get text.
    from gpualign.map import map_reads
    from gpualign.map.sam import write_records

    genome = "".join(np.random.default_rng(7).choice(list("ACGT"), 5000))
    reads = [genome[1000:1030], genome[2000:2040]]
    result = map_reads([genome], reads, backend="cpu")
    batch = next(read_batches(reads, 10))
    with pytest.raises(ValueError, match="contig is not one of the 0 reference names"):
        write_records(io.StringIO(), result, np.arange(2), batch, None, [])
    with pytest.raises(ValueError, match="read is not in the batches"):
        write_records(io.StringIO(), result, np.arange(2), next(read_batches(reads[:1], 10)),
                      None, ["chr"])
    text = io.StringIO()
    write_records(text, result, np.arange(2), batch, None, ["chr"])

    class Trickle(io.RawIOBase):  # takes at most 7 bytes a call
        def __init__(self):
            self.data = bytearray()

        def writable(self):
            return True

        def write(self, chunk):
            self.data += bytes(chunk[:7])
            return min(7, len(chunk))

    raw = Trickle()
    write_records(raw, result, np.arange(2), batch, None, ["chr"])
    spooled = tempfile.SpooledTemporaryFile()
    write_records(spooled, result, np.arange(2), batch, None, ["chr"])
    spooled.seek(0)
    assert raw.data.decode() == spooled.read().decode() == text.getvalue()
    assert text.getvalue().count("\n") == 2
