#!/usr/bin/env python3
"""Copy the NCBI substitution matrices that gpualign ships from the Debian package ncbi-data.

    python scripts/fetch-matrices.py      # needs apt-get and dpkg-deb

Writes src/gpualign/matrices/<NAME> unchanged (see the README.md there for the source).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

NAMES = ("BLOSUM45", "BLOSUM50", "BLOSUM62", "BLOSUM80", "BLOSUM90", "PAM30", "PAM70", "PAM250")
TARGET = Path(__file__).resolve().parents[1] / "src" / "gpualign" / "matrices"


def main() -> int:
    with tempfile.TemporaryDirectory() as work:
        subprocess.run(["apt-get", "download", "ncbi-data"], cwd=work, check=True)
        deb = next(Path(work).glob("ncbi-data_*.deb"))
        subprocess.run(["dpkg-deb", "-x", str(deb), str(Path(work) / "x")], check=True)
        for name in NAMES:
            source = Path(work) / "x" / "usr" / "share" / "ncbi" / "data" / name
            (TARGET / name).write_bytes(source.read_bytes())
            print(f"wrote {TARGET / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
