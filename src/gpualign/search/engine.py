"""The search engine's backend function, shared by :func:`gpualign.search` and
:func:`gpualign.align_one_to_many` (which cannot go through :mod:`gpualign.search.api`: that
module aligns its hits with :mod:`gpualign.align`)."""

from __future__ import annotations

from collections.abc import Callable

from ..backend import resolve_backend


def top_scores_for(backend: str) -> Callable:
    """The ``top_scores`` of the backend module for ``backend`` (``search/_cpu.py`` or
    ``search/_cuda.py``, same contract), imported on first use so that a CUDA run never loads
    Numba.

    Examples
    --------
    >>> top_scores_for("cpu").__module__
    'gpualign.search._cpu'
    """
    if resolve_backend(backend) == "cuda":
        from ._cuda import top_scores
        return top_scores
    from ._cpu import top_scores
    return top_scores
