#!/usr/bin/env python3
"""Regenerate the small real-data excerpts in tests/data/ from their Debian packages.

    python tests/data/make_excerpts.py            # apt-get download the packages into a temp dir
    python tests/data/make_excerpts.py --rdp data/core_rdp.fasta.gz --uniprot DB.fasta.gz

Writes (gzip with a zero time stamp, so that reruns give identical bytes):

- ``rdp16s_200.fasta.gz``: 200 16S rRNA sequences of the RDP core set (``parsinsert-testdata``,
  ``core_rdp.fasta.gz``), alignment gaps ``-`` and ``.`` removed; every record holding a symbol
  other than ACGT (N, K, Y: 8 records) plus every 51st record up to 200, in file order.
- ``uniprot_200.fasta.gz``: every 100th of the 20,000 UniProt proteins of ``mmseqs2-examples``
  (``DB.fasta.gz``), headers cut to the accession field.
- ``README.md``: source package, version and license of each file.

Needs ``dnaio`` (a gpualign dependency) and, without ``--rdp``/``--uniprot``, ``apt-get`` and
``dpkg-deb``.
"""

from __future__ import annotations

import argparse
import gzip
import subprocess
import sys
import tempfile
from pathlib import Path

import dnaio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "benchmarks"))  # for _gaps, shared with the benchmarks

from _gaps import strip_gaps  # noqa: E402

RDP_PACKAGE = "parsinsert-testdata"
RDP_PATH = "usr/share/doc/parsinsert/test_data/core_rdp.fasta.gz"
MITO_PACKAGE = "minimap2"
MITO_PATHS = ("usr/share/doc/minimap2/test/MT-human.fa.gz",
              "usr/share/doc/minimap2/test/MT-orang.fa.gz")
QUAST_SDIST = "quast==5.2.0"
QUAST_READS = "quast-5.2.0/test_data/reads1.fastq.gz"
QUAST_REFERENCE = "quast-5.2.0/test_data/reference.fasta.gz"
ECOLI_READS = 2000
UNIPROT_PACKAGE = "mmseqs2-examples"
UNIPROT_PATH = "usr/share/doc/mmseqs2/example-data/DB.fasta.gz"
COUNT = 200
RDP_STRIDE = 51
UNIPROT_STRIDE = 100


def fetch(package: str, path: str, work: Path) -> tuple[Path, str]:
    """``apt-get download`` a package into ``work``; return the unpacked file and the version."""
    if not list(work.glob(f"{package}_*.deb")):
        subprocess.run(["apt-get", "download", package], cwd=work, check=True)
    deb = next(work.glob(f"{package}_*.deb"))
    subprocess.run(["dpkg-deb", "-x", str(deb), str(work / package)], check=True)
    version = subprocess.run(["dpkg-deb", "-f", str(deb), "Version"], check=True,
                             capture_output=True, text=True).stdout.strip()
    return work / package / path, version


def write_fasta(path: Path, records: list[tuple[str, str]]) -> None:
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw,
                                                mtime=0, compresslevel=9) as out:
        for name, sequence in records:
            out.write(f">{name}\n".encode())
            for lo in range(0, len(sequence), 80):
                out.write(sequence[lo:lo + 80].encode() + b"\n")
    print(f"wrote {path} ({len(records)} records, {path.stat().st_size:,} bytes)", file=sys.stderr)


def quast_files(work: Path) -> tuple[Path, Path]:
    """The E. coli test reads and 10 kb reference of QUAST's source distribution (PyPI)."""
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                    QUAST_SDIST, "-d", str(work)], check=True)
    import tarfile

    with tarfile.open(next(work.glob("quast-*.tar.gz"))) as archive:
        archive.extractall(work, members=[archive.getmember(QUAST_READS),
                                          archive.getmember(QUAST_REFERENCE)])
    return work / QUAST_READS, work / QUAST_REFERENCE


def write_fastq_head(source: Path, target: Path, count: int) -> None:
    with dnaio.open(source) as reader, open(target, "wb") as raw, \
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as out:
        for number, record in enumerate(reader):
            if number == count:
                break
            out.write(f"@{record.name}\n{record.sequence}\n+\n{record.qualities}\n".encode())
    print(f"wrote {target} ({count} reads)", file=sys.stderr)


def rdp_excerpt(source: Path) -> list[tuple[str, str]]:
    records = []
    with dnaio.open(source) as reader:
        for record in reader:
            sequence = strip_gaps(record.sequence).upper()
            records.append((record.name.split()[0], sequence))
    odd = {i for i, (_, s) in enumerate(records) if set(s) - set("ACGT")}
    chosen = set(odd)
    for i in range(0, len(records), RDP_STRIDE):
        if len(chosen) == COUNT:
            break
        chosen.add(i)
    return [records[i] for i in sorted(chosen)]


def uniprot_excerpt(source: Path) -> list[tuple[str, str]]:
    records = []
    with dnaio.open(source) as reader:
        for i, record in enumerate(reader):
            if i % UNIPROT_STRIDE == 0 and len(records) < COUNT:
                records.append((record.name.split()[0], record.sequence))
    return records


README = """\
# Test data: small excerpts of real sequences

Regenerate with `python tests/data/make_excerpts.py` (downloads the Debian packages below).

- `rdp16s_200.fasta.gz`: 200 of the 10,143 16S rRNA sequences of the RDP core set, alignment
  gaps removed. Source: Debian package `{rdp_package}` {rdp_version},
  `{rdp_path}`.
  License: GPL-3+ (Debian copyright file of the package).
- `uniprot_200.fasta.gz`: every 100th of the 20,000 UniProt proteins of the MMseqs2 examples,
  headers cut to the accession. Source: Debian package `{uniprot_package}` {uniprot_version},
  `{uniprot_path}`.
  License: GPL-3 (Debian copyright file of MMseqs2); the sequences come from UniProt
  (CC BY 4.0).
- `ecoli_reads_2000.fastq.gz`, `ecoli_10kb.fasta.gz`: the first 2,000 of the real 101 bp
  Illumina reads in QUAST's tests and their reference, the first 10 kb of E. coli K-12 MG1655
  (copied unchanged). Source: the PyPI source distribution `quast==5.2.0`,
  `test_data/reads1.fastq.gz` and `test_data/reference.fasta.gz`. License: GPL-2 (QUAST).
- `MT-human.fa.gz`, `MT-orang.fa.gz`: the human (16,569 bp) and orangutan (16,499 bp)
  mitochondrial genomes of minimap2's tests, copied unchanged. Source: Debian package
  `{mito_package}` {mito_version}, `usr/share/doc/minimap2/test/`. License: MIT (minimap2).
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rdp", type=Path, help=f"core_rdp.fasta.gz of {RDP_PACKAGE}")
    parser.add_argument("--rdp-version", default="1.04-12")
    parser.add_argument("--uniprot", type=Path, help=f"DB.fasta.gz of {UNIPROT_PACKAGE}")
    parser.add_argument("--uniprot-version", default="14-7e284+ds-1")
    parser.add_argument("--mito-dir", type=Path,
                        help=f"folder holding MT-human.fa.gz and MT-orang.fa.gz of {MITO_PACKAGE}")
    parser.add_argument("--mito-version", default="2.24+dfsg-3")
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        rdp, rdp_version = args.rdp, args.rdp_version
        if rdp is None:
            rdp, rdp_version = fetch(RDP_PACKAGE, RDP_PATH, work)
        uniprot, uniprot_version = args.uniprot, args.uniprot_version
        if uniprot is None:
            uniprot, uniprot_version = fetch(UNIPROT_PACKAGE, UNIPROT_PATH, work)
        mito_version = args.mito_version
        for mito_path in MITO_PATHS:
            name = Path(mito_path).name
            if args.mito_dir is not None:
                source = args.mito_dir / name
            else:
                source, mito_version = fetch(MITO_PACKAGE, mito_path, work)
            (args.out / name).write_bytes(source.read_bytes())
            print(f"wrote {args.out / name}", file=sys.stderr)
        reads, reference = quast_files(work)
        write_fastq_head(reads, args.out / "ecoli_reads_2000.fastq.gz", ECOLI_READS)
        (args.out / "ecoli_10kb.fasta.gz").write_bytes(reference.read_bytes())
        write_fasta(args.out / "rdp16s_200.fasta.gz", rdp_excerpt(rdp))
        write_fasta(args.out / "uniprot_200.fasta.gz", uniprot_excerpt(uniprot))
    (args.out / "README.md").write_text(README.format(
        rdp_package=RDP_PACKAGE, rdp_version=rdp_version, rdp_path=RDP_PATH,
        uniprot_package=UNIPROT_PACKAGE, uniprot_version=uniprot_version,
        uniprot_path=UNIPROT_PATH, mito_package=MITO_PACKAGE, mito_version=mito_version))


if __name__ == "__main__":
    main()
