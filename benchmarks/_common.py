"""Shared parts of the benchmark scripts: timing, the results table, the device, commit and
version report, and the results file. Imported by ``bench_*.py`` (run as scripts, so this
folder is on ``sys.path``)."""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib
import importlib.metadata
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "src") not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT / "src"))

import gpualign  # noqa: E402


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass
class Row:
    workload: str
    engine: str
    pairs: int = 0
    cells: int = 0
    seconds: float = float("nan")
    check: str = "-"
    target: str = "-"
    note: str = ""

    @property
    def ran(self) -> bool:
        return self.pairs > 0 and self.seconds == self.seconds and self.seconds > 0

    @property
    def gcups(self) -> float:
        return self.cells / self.seconds / 1e9 if self.ran else float("nan")


class BenchBase:
    """What every benchmark keeps: its arguments, the rows it measured, where each workload's
    data came from, the engines asked for, and whether CUDA can run."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.rows: list[Row] = []
        self.sources: dict[str, str] = {}
        self.engines = set(args.engines)
        self.cuda_ok, self.cuda_why = gpualign.backend.cuda_status()

    def add(self, row: Row) -> Row:
        """Keep ``row`` and log it as it comes (the table is printed at the end)."""
        self.rows.append(row)
        rate = f"{row.gcups / 1e3:,.3g} TCUPS" if row.ran else "-"
        log(f"  {row.workload:<20} {row.engine:<34} {rate:>14}  {row.check}  {row.target}  "
            f"{row.note}")
        return row


def cuda_sync() -> None:
    import cupy

    cupy.cuda.Device().synchronize()


#: Seconds of untimed warm-up calls before a GPU row is timed: compilation and first transfers,
#: and time under load for the GPU's clocks to rise after seconds of host work. After a single
#: warm-up call, the 1M-pair infix edit call took 13-21 ms in bench_edit at b03e5f9; after two
#: warm-up calls and in a process of its own, 9.3-9.9 ms (median of 15).
WARM_UP_SECONDS = 0.5


def time_gpu(call: Callable[[], object], repeats: int,
             warm_up: bool = True) -> tuple[list[float], object]:
    """Warm-up calls for ``WARM_UP_SECONDS`` (at least one; left out when the caller warmed
    up), then ``repeats`` timed calls; returns the times and the last result."""
    result = None
    if warm_up:
        began = time.perf_counter()
        result = call()
        cuda_sync()
        while time.perf_counter() - began < WARM_UP_SECONDS:
            result = call()
            cuda_sync()
    cuda_sync()
    times = []
    for _ in range(repeats):
        cuda_sync()
        t0 = time.perf_counter()
        result = call()
        cuda_sync()
        times.append(time.perf_counter() - t0)
    return times, result


def gpu_note(times: list[float]) -> str:
    return (f"median of {len(times)} after warm-up (min {min(times):.3g} s, "
            f"max {max(times):.3g} s)")


def time_cpu(prepare: Callable[[np.ndarray], object], call: Callable[[object], object],
             mean_cells: float, order: np.ndarray, budget: float,
             repeats: int) -> tuple[np.ndarray, float, object]:
    """Time ``call(prepare(index))`` on a prefix of ``order`` (items of ``mean_cells`` cells each)
    sized to take ~``budget`` s.

    Returns the pairs run, the median time of ``repeats`` calls on them, and the last result.
    Preparation (taking the subset, making strings) is not timed.
    """
    total = len(order)
    n = int(max(1, min(total, 2e7 // max(mean_cells, 1.0))))
    call(prepare(order[:1]))  # warm-up: Numba compiles on its first call
    while True:
        data = prepare(order[:n])
        t0 = time.perf_counter()
        result = call(data)
        elapsed = time.perf_counter() - t0
        if n >= total or elapsed >= 0.2:
            break
        n = min(total, n * 8)
    want = min(total, max(n, int(n * budget / max(elapsed, 1e-6))))
    if want > n * 1.2:
        n = want
        data = prepare(order[:n])
        times = []
    else:
        times = [elapsed]
    while len(times) < repeats:
        t0 = time.perf_counter()
        result = call(data)
        times.append(time.perf_counter() - t0)
    return order[:n], statistics.median(times), result


def import_optional(name: str):
    try:
        return importlib.import_module(name)
    except Exception:
        return None


def fmt_sig(x: float, digits: int = 3) -> str:
    if x != x:
        return "-"
    if x == 0:
        return "0"
    if abs(x) >= 10 ** (digits - 1):
        return f"{x:,.0f}"
    return f"{x:.{digits}g}" if abs(x) >= 1e-3 else f"{x:.2e}"


def fmt_si(x: float) -> str:
    if x != x:
        return "-"
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            return f"{x / div:.3g}{suffix}"
    return f"{x:.3g}"


def table(rows: list[Row]) -> str:
    head = ["workload", "engine", "pairs", "cells", "seconds", "GCUPS", "TCUPS", "pairs/s",
            "check", "target", "note"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in rows:
        if r.ran:
            cells = [r.workload, r.engine, f"{r.pairs:,}", f"{r.cells:.3e}", f"{r.seconds:.4g}",
                     fmt_sig(r.gcups), fmt_sig(r.gcups / 1e3), fmt_si(r.pairs / r.seconds),
                     r.check, r.target, r.note]
        else:
            cells = [r.workload, r.engine, "-", "-", "-", "-", "-", "-", r.check, r.target, r.note]
        lines.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    return "\n".join(lines)


def git_commit(explicit: str | None) -> str:
    if explicit:
        return explicit
    if os.environ.get("GPUALIGN_COMMIT"):
        return os.environ["GPUALIGN_COMMIT"]
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True,
                               text=True, check=True).stdout.strip()
        return head + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown (no git; pass --commit or set GPUALIGN_COMMIT)"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_info() -> dict[str, str]:
    info = {"cpu": f"{cpu_model()}, {os.cpu_count()} logical cores"}
    try:
        info["cpu"] += f" ({len(os.sched_getaffinity(0))} usable)"
    except AttributeError:
        pass
    ok, why = gpualign.backend.cuda_status()
    if ok:
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(0)
        name = props["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
        info["gpu"] = (f"{name} ({props['totalGlobalMem'] / 2**30:.0f} GiB, "
                       f"{props['multiProcessorCount']} SMs; CUDA runtime "
                       f"{cupy.cuda.runtime.runtimeGetVersion()}, driver "
                       f"{cupy.cuda.runtime.driverGetVersion()})")
        info["name"] = name
    else:
        info["gpu"] = f"none ({why})"
        info["name"] = cpu_model()
    return info


def versions() -> str:
    """Versions of gpualign, its dependencies and the peer libraries."""
    out = []
    for dist, module in (("gpualign", "gpualign"), ("numpy", "numpy"), ("numba", "numba"),
                         ("cupy", "cupy"), ("edlib", "edlib"), ("rapidfuzz", "rapidfuzz"),
                         ("stringzillas", "stringzillas")):
        version = None
        for candidate in (dist, "cupy-cuda13x", "cupy-cuda12x") if dist == "cupy" else (dist,):
            try:
                version = importlib.metadata.version(candidate)
                break
            except importlib.metadata.PackageNotFoundError:
                continue
        if version is None:
            mod = import_optional(module)
            version = getattr(mod, "__version__", "installed") if mod else "absent"
        out.append(f"{dist} {version}")
    return ", ".join(out) + f"; Python {platform.python_version()}"


def shown(path: Path) -> str:
    """``path`` as the results name it: relative to the checkout when inside it (``data/...``
    for the default ``--data-dir``), else as given."""
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "unknown"


def sanitize(raw: bytes | str, rng: np.random.Generator) -> np.ndarray:
    """Upper-case ACGT codes 0..3 of a sequence; any other symbol becomes a random base.

    Every engine then sees the same four-letter strings (edlib and rapidfuzz would treat N as
    an ordinary letter, gpualign as matching nothing).
    """
    if isinstance(raw, str):
        raw = raw.encode("latin-1", errors="replace")
    lookup = gpualign.get_alphabet("dna").lookup
    codes = lookup[np.frombuffer(raw, dtype=np.uint8)]
    bad = (codes < 0) | (codes > 3)
    if bad.any():
        codes[bad] = rng.integers(0, 4, int(bad.sum()))
    return codes.astype(np.uint8)


def header_lines(title: str, info: dict[str, str], commit: str, date: str,
                 command: str) -> list[str]:
    """The head of a results file: its title, then the device, CPU, commit, ``date`` (its
    text), versions and command it was measured with."""
    return [f"# {title}", "", f"- device: {info['gpu']}", f"- CPU: {info['cpu']}",
            f"- commit: {commit}", f"- date: {date}", f"- versions: {versions()}",
            f"- command: `{command}`"]


def save_results(text: str, kind: str, info: dict[str, str], started: _dt.datetime,
                 results_dir: Path) -> Path:
    """Write ``text`` to ``results_dir/<kind>-<device>-<date>[-N].md`` (never overwriting)."""
    results_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{kind}-{slug(info['name'])}-{started.strftime('%Y-%m-%d')}"
    path = results_dir / f"{stem}.md"
    serial = 2
    while path.exists():
        path = results_dir / f"{stem}-{serial}.md"
        serial += 1
    path.write_text(text)
    return path


def publish(text: str, kind: str, info: dict[str, str], started: _dt.datetime,
            args: argparse.Namespace) -> None:
    """Print a benchmark's results and, unless ``args.no_save``, write them to
    ``args.results_dir`` (:func:`save_results`)."""
    print(text, flush=True)
    if not args.no_save:
        log(f"wrote {save_results(text, kind, info, started, args.results_dir)}")


def base_parser(doc: str, workloads: tuple[str, ...], engines: tuple[str, ...]
                ) -> argparse.ArgumentParser:
    """The options every benchmark has; a script adds its own, then calls :func:`parse`."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", action="append", choices=workloads, metavar="NAME",
                        help=f"workload to run (repeatable; default all): {', '.join(workloads)}")
    parser.add_argument("--engines", default=",".join(engines),
                        help=f"comma-separated subset of {','.join(engines)} (default all)")
    parser.add_argument("--repeats", type=int, default=5, help="timed GPU calls (median)")
    parser.add_argument("--cpu-seconds", type=float, default=2.0,
                        help="target seconds of one CPU engine call (sizes its subset)")
    parser.add_argument("--cpu-repeats", type=int, default=3, help="timed CPU calls (median)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data-dir", type=Path, default=ROOT / "data",
                        help="the real data, as scripts/fetch-data.sh writes it (default: data/ "
                             "of this checkout)")
    parser.add_argument("--results-dir", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--commit", help="commit to record (default: git, else $GPUALIGN_COMMIT)")
    parser.add_argument("--no-save", action="store_true", help="print only; write no file")
    parser.add_argument("--require-cuda", action="store_true",
                        help="exit with status 3 when the CUDA backend is unavailable")
    return parser


def parse(parser: argparse.ArgumentParser, argv: list[str] | None, workloads: tuple[str, ...],
          engines: tuple[str, ...]) -> argparse.Namespace:
    """Parse and check the options of :func:`base_parser`."""
    args = parser.parse_args(argv)
    args.only = list(dict.fromkeys(args.only or workloads))
    args.engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    unknown = set(args.engines) - set(engines)
    if unknown:
        parser.error(f"unknown engines {sorted(unknown)}; choose from {', '.join(engines)}")
    if args.repeats < 1 or args.cpu_repeats < 1:
        parser.error("repeats must be >= 1")
    return args


def run_benchmark(kind: str, title: str, args: argparse.Namespace, argv: list[str] | None,
                  make_bench: Callable[[], Any], method: Callable[[Any], str]) -> int:
    """Run a benchmark and report it: print the table and write it to
    ``results/<kind>-<device>-<date>.md`` with device, commit, date, versions, command,
    ``method(bench)`` (how it was measured) and the sources of its data. ``make_bench()``
    returns an object with ``run()``, ``rows`` (a list of :class:`Row`) and ``sources``
    (workload -> description). Exit status: 3 without CUDA under ``--require-cuda``, 1 when a
    check failed, else 0."""
    if args.require_cuda and not gpualign.backend.cuda_status()[0]:
        log(f"--require-cuda: {gpualign.backend.cuda_status()[1]}")
        return 3
    command = shlex.join([Path(sys.executable).name, *(sys.argv if argv is None else argv)])
    started = _dt.datetime.now(_dt.timezone.utc)
    info = device_info()
    commit = git_commit(args.commit)
    log(f"device: {info['gpu']}\nCPU: {info['cpu']}\ncommit: {commit}\nversions: {versions()}")
    bench = make_bench()
    t0 = time.perf_counter()
    bench.run()
    lines = [
        *header_lines(title, info, commit, f"{started.strftime('%Y-%m-%d %H:%M UTC')} "
                      f"(took {time.perf_counter() - t0:.0f} s)", command),
        "",
        table(bench.rows),
        "",
        method(bench),
        "",
        "## Data",
        "",
    ]
    lines += [f"- **{name}**: {source}" for name, source in bench.sources.items()]
    provenance = args.data_dir / "SOURCES.tsv"
    if provenance.is_file():
        lines += ["", f"{provenance.name} (file, Debian package, version, path in package):", ""]
        lines += [f"    {line}" for line in provenance.read_text().splitlines() if line.strip()]
    text = "\n".join(lines) + "\n"
    publish(text, kind, info, started, args)
    failed = any("FAIL" in row.check for row in bench.rows)
    if failed:
        log("FAIL: some results disagree with the reference (see the check column)")
    return 1 if failed else 0
