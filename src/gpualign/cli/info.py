"""``gpualign info``: the version, the backends, the GPU and its stored choices; with
``--kernels``, every kernel's registers, shared memory, block size, resident blocks per SM,
theoretical occupancy and the tile it runs with (:mod:`gpualign.cuda.report`)."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from .. import __version__, config, tuning
from ..backend import cuda_status
from ._common import PROG
from .tune import FAMILIES, Family, current_model, random_pairs


def add_command(subparsers: argparse._SubParsersAction) -> None:
    """Declare ``gpualign info``."""
    parser = subparsers.add_parser(
        "info", help="version, GPU, stored choices; --kernels: kernel resources and occupancy",
        description="Print the version, the backends, the GPU and the choices 'gpualign tune' "
                    "stored for it. With --kernels, run a small workload of every capability "
                    "on the GPU and print, for each kernel it used, its registers, shared "
                    "memory, block size, resident blocks per SM, theoretical occupancy and "
                    "tile. Without a GPU it says so and exits with status 0.",
        epilog="example: gpualign info --kernels",
        declare=_arguments)
    parser.set_defaults(run=run, rename_duplicates=False)  # no input files: names unchecked


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kernels", action="store_true",
                        help="report every kernel's resources and occupancy")


def _probe_capabilities() -> None:
    """Small runs of every capability on the GPU, so that their usual kernels are loaded."""
    import gpualign

    queries, targets = random_pairs(64, 300, seed=23)
    for task in ("distance", "locations", "path"):
        gpualign.edit_distance(queries, targets, mode="infix", k=60, task=task, backend="cuda")
    gpualign.edit_distance_matrix(queries.take([0, 1]), targets, k=60, backend="cuda")
    for task in ("score", "end", "path"):
        gpualign.align(queries, targets, mode="local", task=task, backend="cuda")
    gpualign.align(["MKTAYIAKQRQISFVKSHFSRQ"], ["MKTAYIAKQRQLSFVKSHFSRQLEERLG"],
                   scoring=gpualign.Scoring.matrix("BLOSUM62"), task="path", backend="cuda")
    gpualign.lcs_top(queries[0], targets, n=3, backend="cuda")
    gpualign.find_mems(targets, queries, min_length=15, backend="cuda")
    with tempfile.TemporaryDirectory() as folder:
        fasta = Path(folder) / "probe.fa"
        fasta.write_text("".join(f">{n}\n{targets[n]}\n" for n in range(8)))
        gpualign.SequenceSet.from_file(fasta, parser="cuda")


def _tile(key: tuple[str, str, tuple[str, ...]], families: dict[tuple, Family]) -> str:
    """The settings that size the kernel's tile (those of the family whose workload used it),
    else its template arguments."""
    family = families.get(key)
    if family is not None:
        return ", ".join(f"{name}={getattr(config, name)}" for name in family.settings)
    name = key[1]
    return f"template {name[name.index('<'):]}" if "<" in name else "-"


def _kernel_table(keys: list[tuple[str, str, tuple[str, ...]]],
                  families: dict[tuple, Family]) -> list[str]:
    from ..cuda.report import kernel_report

    head = ["kernel", "file", "registers", "local B", "shared B", "block", "blocks/SM",
            "occupancy", "limited by", "tile"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for key in keys:
        entry = kernel_report(*key)
        used, fit = entry.resources, entry.occupancy
        cells: list[Any] = [entry.name, entry.path, used.registers, used.local_bytes,
                            f"{used.static_shared}+{used.dynamic_shared}", used.block_threads,
                            fit.blocks_per_sm, f"{fit.occupancy:.0%}",
                            ", ".join(fit.limited_by), _tile(key, families)]
        lines.append("| " + " | ".join(str(cell) for cell in cells) + " |")
    return lines


def _kernels() -> None:
    import cupy

    from ..cuda.loader import REQUESTS
    from ..cuda.report import device_resources, used_since

    sm = device_resources(cupy.cuda.Device().id)
    print(f"{sm.name}: compute capability {sm.major}.{sm.minor}, {sm.sms} SMs; per SM "
          f"{sm.max_threads_per_sm} threads, {sm.max_blocks_per_sm} blocks, "
          f"{sm.registers_per_sm} registers, {sm.shared_per_sm} B shared memory "
          f"({sm.reserved_shared_per_block} B reserved per block)", flush=True)
    families: dict[tuple, Family] = {}
    for family in FAMILIES.values():
        if family.available:
            before = dict(REQUESTS)
            family.workload().run()
            for key in used_since(before):
                families.setdefault(key, family)  # the first family that ran it sizes it
    _probe_capabilities()
    print("\n".join(_kernel_table(list(REQUESTS), families)))


def run(args: argparse.Namespace) -> int:
    """Run ``gpualign info`` on the parsed ``args``; return the exit status (0)."""
    available, reason = cuda_status()
    if not args.kernels:
        print(f"{PROG} {__version__}")
        print(f"stored choices: {tuning.cache_dir()}")
    if not available:
        print(f"no CUDA GPU: {reason}")
        return 0
    model = current_model()
    if not args.kernels:
        stored = tuning.load(model)
        print(f"GPU: {model}; choices stored for it: "
              f"{', '.join(f'{k}={v}' for k, v in stored.items()) or 'none'}")
        return 0
    _kernels()
    return 0
