"""Regenerate the bundled example data from the real datasets that scripts/fetch-data.sh fetches.

Writes, from the Debian package ``iva`` (its HIV test run data: reference DQ234790 and real
Illumina MiSeq 2 x 250 bp reads):

- ``examples/hiv_reference.fa``: the 9,056 bp reference, unchanged;
- ``examples/hiv_reads.fa``: the first ``--reads`` reads of ``reads_1.fq.gz`` as FASTA, unchanged
  (no trimming, no reorientation: about half of them come from the reverse strand);

and from the Debian package ``parsinsert-testdata`` (the RDP 16S rRNA core set):

- ``examples/rdp16s_1000.fa.gz``: its first ``--genes`` genes with the alignment gaps ``-`` and
  ``.`` removed, otherwise unchanged (gzip without a time stamp, so reruns are byte-identical).

Usage::

    scripts/fetch-data.sh            # once: downloads the Debian packages into data/
    python examples/make_examples.py  # rewrites the two files above
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import subprocess
import sys
from pathlib import Path

import dnaio

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "benchmarks"))  # for _gaps, shared with the benchmarks

from _gaps import strip_gaps  # noqa: E402

#: Reads kept in the bundled excerpt; 800 reads of 250 bp keep the example files under 300 KB.
DEFAULT_READS = 800
#: 16S genes kept for the all-vs-all main job (about 500,000 pairs, a few seconds on 2 cores).
DEFAULT_GENES = 1000


def ensure_data(data_dir: Path) -> None:
    """Run scripts/fetch-data.sh unless the HIV files are already in ``data_dir``."""
    needed = [data_dir / "hiv_reference.fasta", data_dir / "hiv_reads_1.fq.gz",
              data_dir / "core_rdp.fasta.gz"]
    if all(path.exists() for path in needed):
        return
    subprocess.run(["bash", str(ROOT / "scripts" / "fetch-data.sh"), str(data_dir)], check=True)


def write_reads(source: Path, dest: Path, count: int) -> int:
    """Copy the first ``count`` records of FASTQ ``source`` to FASTA ``dest``; return how many."""
    written = 0
    with dnaio.open(source) as reader, dest.open("w") as out:
        for record in reader:
            if written == count:
                break
            out.write(f">{record.name}\n{record.sequence}\n")
            written += 1
    return written


def write_genes(source: Path, dest: Path, count: int) -> int:
    """Write the first ``count`` records of the aligned FASTA ``source`` to gzipped FASTA
    ``dest`` without their alignment gaps; return how many."""
    written = 0
    with dnaio.open(source) as reader, dest.open("wb") as raw, \
            gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
        for record in reader:
            if written == count:
                break
            sequence = strip_gaps(record.sequence)
            out.write(f">{record.name}\n{sequence}\n".encode())
            written += 1
    return written


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=ROOT / "data",
                        help="where scripts/fetch-data.sh puts the datasets (default: ./data)")
    parser.add_argument("--reads", type=int, default=DEFAULT_READS,
                        help=f"number of reads to keep (default: {DEFAULT_READS})")
    parser.add_argument("--genes", type=int, default=DEFAULT_GENES,
                        help=f"number of 16S genes to keep (default: {DEFAULT_GENES})")
    args = parser.parse_args(argv)

    ensure_data(args.data_dir)
    shutil.copyfile(args.data_dir / "hiv_reference.fasta", HERE / "hiv_reference.fa")
    count = write_reads(args.data_dir / "hiv_reads_1.fq.gz", HERE / "hiv_reads.fa", args.reads)
    genes = write_genes(args.data_dir / "core_rdp.fasta.gz", HERE / "rdp16s_1000.fa.gz",
                        args.genes)
    sources = args.data_dir / "SOURCES.tsv"
    if sources.exists():
        versions = {line.split("\t")[1]: line.split("\t")[2]
                    for line in sources.read_text().splitlines() if line.count("\t") >= 3}
        for package in ("iva", "parsinsert-testdata"):
            if package in versions:
                print(f"source: Debian package {package} {versions[package]}", file=sys.stderr)
    names = ("hiv_reference.fa", "hiv_reads.fa", "rdp16s_1000.fa.gz")
    total = sum((HERE / name).stat().st_size for name in names)
    print(f"wrote {', '.join(str(HERE / name) for name in names)} ({count} reads, {genes} "
          f"genes), {total / 1024:.0f} KiB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
