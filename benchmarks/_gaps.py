"""The one place that strips alignment gaps from a FASTA record (the RDP 16S files are aligned).

Standard library only, so that the data generators (``examples/make_examples.py``,
``tests/data/make_excerpts.py``) import it without the benchmark harness; the benchmarks import
it too (run as scripts, so this folder is on ``sys.path``).
"""

from __future__ import annotations


def strip_gaps(sequence: str) -> str:
    """``sequence`` without the alignment gap symbols ``-`` and ``.``.

    Examples
    --------
    >>> strip_gaps("AC-G..T-")
    'ACGT'
    """
    return sequence.replace("-", "").replace(".", "")
