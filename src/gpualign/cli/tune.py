"""``gpualign tune``: measure the kernels' tile sizes, block sizes and lanes on the present GPU
and store the fastest per device model (:mod:`gpualign.tuning`), which later runs use.

A tunable family is a list of :mod:`gpualign.config` settings, candidate values for each and a
workload through the public API. Families whose settings this version lacks are left out, so
the families of kernels still being written appear once their settings exist. Each family is
tuned one setting at a time (the others at their best so far), each candidate timed on the
same seeded sequences; a candidate whose answers differ from those of the settings it started
from, or that fails, is never chosen.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import config, tuning
from ..backend import cuda_status
from ..scoring import Scoring
from ..sequences import SequenceSet
from ._common import PROG

#: Seconds of timed calls per candidate (at least one call, at most :data:`MAX_REPEATS`).
SECONDS_PER_CANDIDATE = 0.3
MAX_REPEATS = 5

#: The scoring of the alignment families (the issue's: +2/-3, gaps 5 + 2 per extra base).
SCORING = Scoring(match=2, mismatch=-3, gap_open=5, gap_extend=2)


@dataclass(frozen=True)
class Workload:
    """One call through the public API: ``run()`` returns its answers (scores, distances),
    which every candidate must reproduce; ``cells`` counts its DP cells."""

    run: Callable[[], np.ndarray]
    cells: int
    description: str


@dataclass(frozen=True)
class Family:
    """Settings tuned together, each with a function giving its candidates from its current
    value, and the workload that measures them."""

    name: str
    candidates: dict[str, Callable[[Any], tuple[Any, ...]]]
    workload: Callable[[], Workload]

    @property
    def settings(self) -> tuple[str, ...]:
        """The settings, in the order they are tuned."""
        return tuple(self.candidates)

    @property
    def available(self) -> bool:
        """Whether this version has every setting of the family."""
        return all(hasattr(config, name) for name in self.settings)


def mutated(rng: np.random.Generator, codes: np.ndarray, substitutions: float,
            deletions: float, insertions: float = 0.0) -> np.ndarray:
    """A copy of DNA ``codes`` (0-3) with these fractions of positions substituted (by
    another base), deleted and followed by an inserted random base.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> original = rng.integers(0, 4, 10_000).astype(np.uint8)
    >>> copy = mutated(rng, original, 0.06, 0.02)
    >>> len(copy) < len(original), bool(np.all(copy < 4))
    (True, True)
    """
    copy = codes.copy()
    substituted = rng.random(len(copy)) < substitutions
    copy[substituted] = (copy[substituted] + rng.integers(1, 4, int(substituted.sum()))) % 4
    kept = rng.random(len(copy)) >= deletions
    inserted = rng.random(len(copy)) < insertions
    pieces = np.empty((len(copy), 2), dtype=np.uint8)
    pieces[:, 0] = copy
    pieces[:, 1] = rng.integers(0, 4, len(copy))
    chosen = np.stack([kept, kept & inserted], axis=1)
    return pieces[chosen].astype(np.uint8)


def random_pairs(count: int, length: int, seed: int, substitutions: float = 0.06,
                 deletions: float = 0.02) -> tuple[SequenceSet, SequenceSet]:
    """``count`` random DNA sequences of ``length`` and a mutated copy of each (seeded).

    Examples
    --------
    >>> queries, targets = random_pairs(3, 1000, seed=1)
    >>> len(queries), int(queries.lengths[0]), int(targets.lengths[0]) < 1000
    (3, 1000, True)
    """
    rng = np.random.default_rng(seed)
    originals = [rng.integers(0, 4, length).astype(np.uint8) for _ in range(count)]
    copies = [mutated(rng, codes, substitutions, deletions) for codes in originals]
    names = [str(number) for number in range(count)]
    return (SequenceSet.from_codes(originals, names, "dna"),
            SequenceSet.from_codes(copies, names, "dna"))


def _cells(queries: SequenceSet, targets: SequenceSet) -> int:
    return int(np.dot(queries.lengths.astype(np.float64), targets.lengths.astype(np.float64)))


def _long_side(setting: str, floor: int) -> int:
    """A length whose square pair exceeds the setting ``setting`` (cells routed to the long
    kernels), at least ``floor``."""
    return max(floor, math.isqrt(int(getattr(config, setting, 0))) + 2)


def _align_workload(count: int, length: int, description: str,
                    schedule: str | None = None) -> Workload:
    """Global affine scores of ``count`` random pairs of ``length``; ``schedule``: the
    ``LONG_ALIGN_SCHEDULE`` they run with (else the config's)."""
    from ..align import align

    queries, targets = random_pairs(count, length, seed=21)

    def run():
        with config.override(LONG_ALIGN_SCHEDULE=schedule or config.LONG_ALIGN_SCHEDULE):
            return align(queries, targets, mode="global", scoring=SCORING, backend="cuda").score

    return Workload(run, _cells(queries, targets), description)


def _edit_workload(count: int, length: int, description: str) -> Workload:
    from ..edit import edit_distance

    queries, targets = random_pairs(count, length, seed=22)
    return Workload(lambda: edit_distance(queries, targets, backend="cuda").distance,
                    _cells(queries, targets), description)


def _long_align_workload() -> Workload:
    """One global affine score of a 100 kb pair (6% substitutions, 2% deletions), above
    ``LONG_ALIGN_MIN_CELLS`` (in bands under "auto")."""
    side = _long_side("LONG_ALIGN_MIN_CELLS", 100_000)
    # The config's schedule, as a run would take it: "auto" runs this pair in bands, of the
    # candidate's rows a thread unless they make more than 4 bands an SM (then of
    # LONG_ALIGN_ROWS_PER_THREAD, as a run would).
    return _align_workload(1, side, f"1 pair of {side:,} bp, global affine score")


def _long_tiles_workload() -> Workload:
    """Global affine scores of 16 pairs of 100 kb in tickets (tiles of
    ``LONG_ALIGN_TILE_COLUMNS``), the schedule "auto" takes for batches that many bands."""
    side = _long_side("LONG_ALIGN_MIN_CELLS", 100_000)
    return _align_workload(16, side, f"16 pairs of {side:,} bp, global affine score in tiles",
                           "tickets")


def _long_edit_workload() -> Workload:
    """One global edit distance of a 500 kb pair, above ``LONG_EDIT_MIN_CELLS``."""
    side = _long_side("LONG_EDIT_MIN_CELLS", 500_000)
    return _edit_workload(1, side, f"1 pair of {side:,} bp, edit distance")


def _strip_workload() -> Workload:
    """Global affine scores of 20,000 pairs of 1.5 kb (16S-sized), one pair a thread."""
    return _align_workload(20_000, 1_500, "20,000 pairs of 1,500 bp, global affine score")


def _slice_workload() -> Workload:
    """Edit distances of 1,000 pairs of 25 kb: queries longer than the last kernel bin, run in
    slices of ``EDIT_SLICE_KERNEL``."""
    return _edit_workload(1_000, 25_000, "1,000 pairs of 25,000 bp, edit distance")


def powers_of_two_around(value: int, low: int = 1, high: int = 1 << 20) -> tuple[int, ...]:
    """``value`` times 1/4, 1/2, 1, 2 and 4, kept within ``[low, high]``.

    Examples
    --------
    >>> powers_of_two_around(256, low=32, high=1024)
    (64, 128, 256, 512, 1024)
    """
    scaled = {value * 4, value * 2, value, value // 2, value // 4}
    return tuple(sorted(v for v in scaled if low <= v <= high and v * 4 >= value))


def _threads(value: int) -> tuple[int, ...]:
    return powers_of_two_around(value, low=32, high=1024)


def _fixed(*values: Any) -> Callable[[Any], tuple[Any, ...]]:
    return lambda current: tuple(dict.fromkeys((current, *values)))


#: Every tunable family, by name. The ``LONG_*`` settings are those of the long-pair kernels.
FAMILIES: dict[str, Family] = {family.name: family for family in (
    # The bands' rows: choices that keep 4 rows first (the MT pair's best), 6 or 8 after it
    # (this workload's 100 kb pair has too many bands for 4).
    Family("long-align", {"LONG_ALIGN_BAND_ROWS_PER_THREAD": _fixed((4, 6), (4, 8)),
                          "LONG_ALIGN_THREADS": _threads}, _long_align_workload),
    Family("long-align-tiles", {"LONG_ALIGN_TILE_COLUMNS": powers_of_two_around,
                                "LONG_ALIGN_ROWS_PER_THREAD": powers_of_two_around},
           _long_tiles_workload),
    Family("long-edit", {"LONG_EDIT_WORDS_PER_LANE": _fixed(1, 2, 4),
                         "LONG_EDIT_THREADS": _fixed(32, 16, 8)}, _long_edit_workload),
    Family("align-strip", {"ALIGN_STRIP_ROWS": _fixed(32, 48, 64, 96, 128)}, _strip_workload),
    Family("edit-slice", {"EDIT_SLICE_KERNEL": _fixed((32, 8), (32, 16), (32, 24), (16, 16))},
           _slice_workload),
)}


@dataclass
class Measurement:
    """One candidate of a family: the family's settings, its time (median), rate and the
    kernels it ran; ``error`` says why it cannot be chosen."""

    family: str
    settings: dict[str, Any]
    seconds: float = math.nan
    gcups: float = math.nan
    kernels: list[dict[str, Any]] | None = None
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        def number(value: float) -> float | None:  # JSON has no NaN
            return None if math.isnan(value) else value

        return {"family": self.family, "settings": self.settings,
                "seconds": number(self.seconds), "gcups": number(self.gcups),
                "kernels": self.kernels or [], "error": self.error}


def _kernel_rows(keys: list[tuple[str, str, tuple[str, ...]]]) -> list[dict[str, Any]]:
    """Registers, block size, resident blocks and occupancy of the kernels ``keys``."""
    from ..cuda.report import kernel_report

    rows = []
    for key in keys:
        entry = kernel_report(*key)
        rows.append({"file": entry.path, "kernel": entry.name,
                     "registers": entry.resources.registers,
                     "block_threads": entry.resources.block_threads,
                     "shared_bytes": entry.resources.shared,
                     "blocks_per_sm": entry.occupancy.blocks_per_sm,
                     "occupancy": entry.occupancy.occupancy})
    return rows


def measure(family: Family, workload: Workload, settings: dict[str, Any],
            reference: np.ndarray | None) -> tuple[Measurement, np.ndarray | None]:
    """Time ``workload`` under ``settings`` (a first, untimed call compiles and warms up);
    returns the measurement and the answers (None when the run failed). Answers that differ
    from ``reference`` (when given) make the measurement an error.

    Examples
    --------
    >>> family = FAMILIES["align-strip"]
    >>> work = Workload(lambda: np.array([config.ALIGN_STRIP_ROWS]), 10**6, "no GPU needed")
    >>> entry, answers = measure(family, work, {"ALIGN_STRIP_ROWS": 32}, None)
    >>> answers.tolist(), entry.error, config.ALIGN_STRIP_ROWS
    ([32], None, 64)
    >>> measure(family, work, {"ALIGN_STRIP_ROWS": 48}, answers)[0].error
    "answers differ from the starting settings'"
    """
    from ..cuda.loader import REQUESTS
    from ..cuda.report import used_since

    entry = Measurement(family.name, dict(settings))
    try:
        with config.override(**settings):
            before = dict(REQUESTS)
            answers = np.asarray(workload.run())
            entry.kernels = _kernel_rows(used_since(before))
            times: list[float] = []
            while not times or (len(times) < MAX_REPEATS
                                and sum(times) < SECONDS_PER_CANDIDATE):
                began = time.perf_counter()
                workload.run()
                times.append(time.perf_counter() - began)
    except Exception as exc:  # a candidate the kernels refuse is reported, not fatal
        entry.error = f"{type(exc).__name__}: {exc}"
        return entry, None
    if reference is not None and not np.array_equal(answers, reference):
        entry.error = "answers differ from the starting settings'"
    entry.seconds = statistics.median(times)
    entry.gcups = workload.cells / entry.seconds / 1e9
    return entry, answers


def tune_family(family: Family, workload: Workload,
                log: Callable[[Measurement], None]) -> tuple[dict[str, Any], list[Measurement]]:
    """Tune ``family`` one setting at a time, from the current settings (whose answers every
    candidate must reproduce); returns the best settings and every measurement (each
    candidate once). When the current settings fail, they stay and nothing else is tried.

    Examples
    --------
    >>> family = Family("fake", {"ALIGN_STRIP_ROWS": _fixed(32)},
    ...                 lambda: Workload(lambda: np.zeros(1), 1, "fake"))
    >>> best, measured = tune_family(family, family.workload(), lambda entry: None)
    >>> sorted(best) == ["ALIGN_STRIP_ROWS"], len(measured)
    (True, 2)
    """
    best = {name: getattr(config, name) for name in family.settings}
    start, reference = measure(family, workload, best, None)
    log(start)
    measured = {repr(sorted(best.items())): start}
    if reference is None:
        return best, [start]
    for name in family.settings:
        for value in family.candidates[name](best[name]):
            trial = {**best, name: value}
            key = repr(sorted(trial.items()))
            if key not in measured:
                measured[key], _ = measure(family, workload, trial, reference)
                log(measured[key])
        best = dict(min((m for m in measured.values() if m.error is None),
                        key=lambda m: m.seconds).settings)
    return best, list(measured.values())


def describe_kernels(kernels: list[dict[str, Any]] | None) -> str:
    """``name: registers, blocks/SM, occupancy`` of each kernel, for a line of output.

    Examples
    --------
    >>> describe_kernels([{"kernel": "k<2>", "registers": 64, "blocks_per_sm": 4,
    ...                    "occupancy": 0.5}])
    'k<2>: 64 regs, 4 blocks/SM, 50%'
    """
    return "; ".join(f"{k['kernel']}: {k['registers']} regs, {k['blocks_per_sm']} blocks/SM, "
                     f"{k['occupancy']:.0%}" for k in kernels or [])


def _print_measurement(entry: Measurement) -> None:
    settings = ", ".join(f"{name}={value}" for name, value in entry.settings.items())
    if entry.error is not None:
        print(f"  {settings}: {entry.error}", flush=True)
    else:
        print(f"  {settings}: {entry.seconds:.4g} s, {entry.gcups:,.1f} GCUPS "
              f"({describe_kernels(entry.kernels)})", flush=True)


@contextlib.contextmanager
def _stored_choices_off() -> Iterator[None]:
    """Measure from the shipped defaults, not from earlier choices."""
    saved = os.environ.get(tuning.ENV_VAR)
    os.environ[tuning.ENV_VAR] = "off"
    try:
        yield
    finally:
        if saved is None:
            del os.environ[tuning.ENV_VAR]
        else:
            os.environ[tuning.ENV_VAR] = saved


def current_model() -> str:
    """The name of the current CUDA device (its model).

    Examples
    --------
    >>> current_model()  # doctest: +SKIP
    'NVIDIA H100 80GB HBM3'
    """
    import cupy

    from ..cuda.launch import device_limits

    return device_limits(cupy.cuda.Device().id).name


def add_command(subparsers: argparse._SubParsersAction) -> None:
    """Declare ``gpualign tune``."""
    parser = subparsers.add_parser(
        "tune", help="measure tile sizes, block sizes and lanes on this GPU and keep the best",
        description="Time candidate values of the kernels' settings on the present GPU, on "
                    "seeded sequences through the public API, and store the fastest for its "
                    f"model in {tuning.cache_dir()} (later runs use them unless a setting was "
                    f"changed; {tuning.ENV_VAR}=off ignores them).",
        epilog="example: gpualign tune --family long-align; gpualign tune --show",
        declare=_arguments)
    parser.set_defaults(run=run, rename_duplicates=False)  # no input files: names unchecked


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--family", action="append", choices=sorted(FAMILIES), metavar="NAME",
                        help=f"family to tune (repeatable; default every family whose settings "
                             f"exist): {', '.join(FAMILIES)}")
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--show", action="store_true",
                        help="print the stored choices (of every GPU model) and exit")
    action.add_argument("--reset", action="store_true",
                        help="forget the stored choices of every GPU model and exit")
    parser.add_argument("--dry-run", action="store_true",
                        help="measure and print, but store nothing")


def _show() -> int:
    stored = tuning.stored_models()
    if not stored:
        print(f"no stored choices in {tuning.cache_dir()}")
    for model, path in stored:
        settings = ", ".join(f"{name}={value}" for name, value in tuning.load(model).items())
        print(f"{model}: {settings or 'nothing'} ({path})")
    return 0


def run(args: argparse.Namespace) -> int:
    """Run ``gpualign tune`` on the parsed ``args``; return the exit status (0)."""
    if args.show:
        return _show()
    if args.reset:
        removed = tuning.reset()
        print(f"removed {len(removed)} file(s) from {tuning.cache_dir()}")
        return 0
    available, reason = cuda_status()
    if not available:
        print(f"no CUDA GPU: {reason}; nothing to tune")
        return 0
    model = current_model()
    chosen: dict[str, Any] = {}
    measurements: list[Measurement] = []
    with _stored_choices_off():
        for name in args.family or list(FAMILIES):
            family = FAMILIES[name]
            if not family.available:
                missing = [s for s in family.settings if not hasattr(config, s)]
                print(f"{name}: skipped (this version has no {', '.join(missing)})")
                continue
            workload = family.workload()
            print(f"{name} on {model}: {workload.description} ({workload.cells:.3g} cells)",
                  flush=True)
            best, entries = tune_family(family, workload, _print_measurement)
            measurements += entries
            chosen.update(best)
            print(f"  chosen: {', '.join(f'{k}={v}' for k, v in best.items())}")
    if args.dry_run or not chosen:
        return 0
    path = tuning.save(model, {**tuning.load(model), **chosen},
                       [entry.as_json() for entry in measurements])
    print(f"{PROG} tune: stored for {model} in {path}")
    return 0
