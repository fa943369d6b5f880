"""The engine under every capability: the shared codes, the kernel loader and launch sizes, the
settings, and the layering rules (no import cycle, no dynamic import, no Numba in a CUDA run,
one place that asks the device for free memory)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gpualign
from gpualign import codes, config
from gpualign.backend import cuda_status
from gpualign.cuda import launch, loader

CUDA_AVAILABLE, CUDA_REASON = cuda_status()

PACKAGE = Path(gpualign.__file__).resolve().parent
KERNEL_FILES = sorted(PACKAGE.glob("*/kernels/*.cu"))


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _imports(name: str) -> set[str]:
    """The package modules that module ``name`` imports anywhere in its code."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    targets = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                targets.add(full if full in MODULES else base)
        elif isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
    return {t for t in targets if t in MODULES and t != name}


def test_the_package_has_no_import_cycle():
    graph = {name: _imports(name) for name in MODULES}
    # gpualign/__init__ binds the public names lazily; a submodule importing the package's
    # plain attributes (its version, say) is not a cycle of the code.
    graph = {name: deps - {"gpualign"} for name, deps in graph.items()}
    state: dict[str, int] = {}
    cycles = []

    def visit(name: str, stack: list[str]) -> None:
        state[name] = 1
        for dep in sorted(graph[name]):
            if state.get(dep) == 1:
                cycles.append(stack[stack.index(dep):] + [dep])
            elif dep not in state:
                visit(dep, stack + [dep])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert cycles == []


def test_no_dynamic_import_outside_the_public_names():
    # The package's __init__ imports a capability when one of its public names is first used;
    # nothing else loads a module by a computed name, so every dependency is visible.
    dynamic = [f"{path.relative_to(PACKAGE)}:{number}"
               for name, path in MODULES.items() if name != "gpualign"
               for number, line in enumerate(path.read_text().splitlines(), 1)
               if re.search(r"\bimport_module\b|\b__import__\b", line)]
    assert dynamic == []


def test_only_the_memory_module_asks_the_device_for_free_memory():
    asking = [name for name, path in MODULES.items()
              if "memGetInfo" in path.read_text() and name != "gpualign.cuda.memory"]
    assert asking == []


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n.endswith("._cuda")))
def test_cuda_backends_take_nothing_from_cpu_backends_at_import(name):
    # A rare fallback may import the CPU backend inside the branch that needs it; the module
    # itself (codes, helpers) must not.
    tree = ast.parse(MODULES[name].read_text())
    top_level = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    imported = {alias.name for node in top_level for alias in node.names}
    modules = {node.module or "" for node in top_level if isinstance(node, ast.ImportFrom)}
    assert "_cpu" not in imported and not any(m.endswith("_cpu") for m in modules)


#: The modules a CUDA run of each capability imports: none of them may load Numba (importing
#: it costs most of a second, and the GPU path needs none of the CPU's compiled code).
CUDA_RUN_MODULES = {
    "edit": ["gpualign.edit", "gpualign.edit.api", "gpualign.edit._cuda"],
    "align": ["gpualign.align", "gpualign.align.api", "gpualign.align._cuda"],
    "lcs": ["gpualign.lcs", "gpualign.lcs.api", "gpualign.lcs._cuda"],
    "mems": ["gpualign.mems", "gpualign.mems.api", "gpualign.mems._cuda"],
    "search": ["gpualign.search", "gpualign.search.api", "gpualign.search.database",
               "gpualign.search.statistics", "gpualign.search._cuda"],
    "formats": ["gpualign.io", "gpualign.formats._cuda", "gpualign.streaming"],
    "map": ["gpualign.map", "gpualign.map.api", "gpualign.map.sam", "gpualign.map._reads",
            "gpualign.cli.map"],
    "plumbing": ["gpualign.cuda.loader", "gpualign.cuda.launch", "gpualign.cuda.memory",
                 "gpualign.cuda.host", "gpualign.cuda.pipeline", "gpualign.codes",
                 "gpualign.cigar", "gpualign.cli"],
}


@pytest.mark.parametrize("capability", sorted(CUDA_RUN_MODULES))
def test_modules_of_a_cuda_run_do_not_import_numba(capability):
    imports = ", ".join(CUDA_RUN_MODULES[capability])
    shown = subprocess.run([sys.executable, "-c",
                            f"import sys, {imports}; print('numba' in sys.modules)"],
                           capture_output=True, text=True, check=True)
    assert shown.stdout.split() == ["False"]


_CUDA_RUNS = """
import sys
import numpy as np
import gpualign
from gpualign import Scoring, SequenceSet
rng = np.random.default_rng(5)
reads = ["".join(rng.choice(list("ACGT"), size=int(n))) for n in rng.integers(20, 300, 40)]
windows = [r[3:] + "ACGTTGCA" for r in reads]
for task in ("distance", "locations", "path"):
    for mode in ("global", "infix", "prefix"):
        gpualign.edit_distance(reads, windows, mode=mode, task=task, k=30, backend="cuda")
gpualign.edit_distance(["", "ACGT"], ["ACG", ""], task="path", backend="cuda")
gpualign.edit_distance_matrix(reads[:5], windows, k=20, backend="cuda")
for task in ("score", "end", "path"):
    for mode in ("global", "local", "semi-global", "overlap"):
        gpualign.align(reads, windows, mode=mode, task=task, backend="cuda")
gpualign.align(["MKTAYIAK"], ["MKTAYIAKQR"], scoring=Scoring.matrix("BLOSUM62"),
               alphabet="protein", task="path", backend="cuda")
gpualign.lcs_length(reads[0], windows, backend="cuda")
gpualign.lcs_top(reads[0], windows, n=3, with_lcs=False, backend="cuda")
gpualign.lcs_length_matrix(reads[:3], windows, backend="cuda")
gpualign.find_mems(SequenceSet.from_sequences(windows), reads, min_length=15, backend="cuda")
for task in ("score", "locations", "path"):
    gpualign.search(reads[:3], windows, n=5, task=task, backend="cuda")
gpualign.search(["MKTAYIAKQR"], ["MKTAYIAK", "MEEPQSDPSV"], backend="cuda")
print("numba" in sys.modules)
# The mapper's host stages (seeds, candidates, windows) are compiled for every backend.
gpualign.map_reads(["".join(windows)], reads[:10], reads[10:20], backend="cuda")
"""


@pytest.mark.cuda
@pytest.mark.skipif(not CUDA_AVAILABLE, reason=f"CUDA backend unavailable: {CUDA_REASON}")
def test_cuda_runs_of_every_capability_do_not_load_numba():
    shown = subprocess.run([sys.executable, "-c", _CUDA_RUNS], capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split() == ["False"], shown.stderr


def test_kernel_preamble_has_every_code_of_the_python_side():
    preamble = codes.kernel_preamble()
    for name in ("EDIT_GLOBAL", "EDIT_PREFIX", "EDIT_INFIX", "ALIGN_GLOBAL", "ALIGN_LOCAL",
                 "ALIGN_SEMI_GLOBAL", "ALIGN_OVERLAP", "OP_MATCH", "OP_MISMATCH",
                 "OP_INSERTION", "OP_DELETION"):
        assert f"    {name} = {getattr(codes, name)}," in preamble
    assert codes.CIGAR_OPS[codes.OP_INSERTION] == "I"
    assert codes.CIGAR_OPS[codes.OP_DELETION] == "D"


def test_mode_names_round_trip():
    for name, code in (("NW", codes.EDIT_GLOBAL), ("shw", codes.EDIT_PREFIX),
                       ("Infix", codes.EDIT_INFIX)):
        assert codes.edit_mode(name) == code
    for code, name in codes.ALIGN_MODE_NAMES.items():
        assert codes.align_mode(name) == code
    with pytest.raises(ValueError, match="mode='banded'"):
        codes.edit_mode("banded")
    with pytest.raises(ValueError, match="task='all'"):
        codes.check_task("all", codes.ALIGN_TASKS)


@pytest.mark.parametrize("path", KERNEL_FILES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_kernels_share_one_header_and_declare_their_block_size(path):
    text = path.read_text()
    assert '#include "common.cuh"' in text
    # The shared types and codes come from common.cuh and the generated preamble only.
    assert not re.search(r"typedef\s+(unsigned\s+(char|int|short)|long\s+long)\s", text)
    assert not re.search(r"#define\s+OP_|enum\s*\{\s*(GLOBAL|OP_)", text)
    kernels = re.findall(r"__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)", text)
    unbounded = re.findall(r"__global__\s+void\s+(?!__launch_bounds__)(\w+)", text)
    assert kernels and unbounded == []


def test_loader_source_is_preamble_then_file():
    text = loader.source("edit/kernels/path.cu")
    head, _, rest = text.partition('#line 1 "edit/kernels/path.cu"\n')
    assert head.startswith(codes.kernel_preamble())
    assert rest == (PACKAGE / "edit/kernels/path.cu").read_text()


class _Kernel:
    """A stand-in for a compiled kernel: what CuPy reports of its launch bounds and memory."""

    name = "stand_in"
    max_threads_per_block = 256
    shared_size_bytes = 1024
    max_dynamic_shared_size_bytes = 48 * 1024


@pytest.fixture
def small_device(monkeypatch):
    limits = launch.DeviceLimits(name="small GPU", max_grid_x=10,
                                 shared_per_block_optin=100 * 1024)
    monkeypatch.setattr(launch, "device_limits", lambda device: limits)
    monkeypatch.setattr(launch, "_current_device", lambda: 0)


def test_grid_comes_from_the_kernel_and_the_device(small_device):
    assert launch.grid(_Kernel(), 1000) == ((4,), (256,))
    assert launch.grid(_Kernel(), 0) == ((1,), (256,))
    assert launch.grid(_Kernel(), 100, items_per_block=32) == ((4,), (256,))
    with pytest.raises(launch.KernelResourceError, match="grid limit of 10"):
        launch.grid(_Kernel(), 256 * 10 + 1)


def test_shared_memory_beyond_the_device_is_a_clear_error(small_device):
    kernel = _Kernel()
    assert launch.reserve_shared(kernel, 40 * 1024) == 40 * 1024
    assert kernel.max_dynamic_shared_size_bytes == 48 * 1024  # no opt-in needed
    assert launch.reserve_shared(kernel, 90 * 1024) == 90 * 1024
    assert kernel.max_dynamic_shared_size_bytes == 90 * 1024
    with pytest.raises(launch.KernelResourceError,
                       match=r"stand_in needs 102400 bytes .* small GPU offers 101376"):
        launch.reserve_shared(kernel, 100 * 1024)


def test_config_override_and_reset():
    default = config.CPU_BATCH_PAIRS
    with config.override(CPU_BATCH_PAIRS=3, MATRIX_BLOCK_PAIRS=2):
        assert (config.CPU_BATCH_PAIRS, config.MATRIX_BLOCK_PAIRS) == (3, 2)
    assert config.CPU_BATCH_PAIRS == default
    with pytest.raises(AttributeError, match="NO_SUCH_SETTING"):
        with config.override(NO_SUCH_SETTING=1):
            pass
    try:
        config.EDIT_GPU_STREAMS = 1
        config.reset()
        assert config.EDIT_GPU_STREAMS == 4
    finally:
        config.reset()


@pytest.mark.cuda
@pytest.mark.skipif(not CUDA_AVAILABLE, reason=f"CUDA backend unavailable: {CUDA_REASON}")
def test_host_buffers_are_page_locked_and_mapped():
    import cupy

    from gpualign.cuda import host

    array, pinned = host.pinned_empty(1000, np.int32)
    assert pinned and host.is_page_locked(array)
    assert not host.is_page_locked(np.zeros(1000, dtype=np.int32))
    if host.maps_host_memory(cupy.cuda.Device().id):
        device = host.mapped(array)
        device[:] = 7
        cupy.cuda.get_current_stream().synchronize()
        assert (array == 7).all()
    buffers = host.HostBuffers()
    first = buffers.get("codes", 100, np.uint8)
    assert buffers.get("codes", 50, np.uint8).ctypes.data == first.ctypes.data  # reused
    assert host.is_page_locked(buffers.get("codes", 5000, np.uint8))  # grown


@pytest.mark.cuda
@pytest.mark.skipif(not CUDA_AVAILABLE, reason=f"CUDA backend unavailable: {CUDA_REASON}")
def test_upload_together_keeps_shapes_dtypes_and_earlier_uploads():
    import cupy

    from gpualign.cuda import host

    wide = np.arange(21, dtype=np.int64).reshape(3, 7)
    narrow = np.array([-1, 5, 2**31 - 1], dtype=np.int32)
    odd = np.arange(5, dtype=np.uint8)  # 5 bytes: the next array still starts aligned
    on_device = host.upload_together([wide, odd, narrow])
    assert [(a.shape, a.dtype) for a in on_device] == [((3, 7), np.int64), ((5,), np.uint8),
                                                      ((3,), np.int32)]
    # A second upload through the same page-locked buffer, larger (it grows), leaves the first
    # one's device copies as they were.
    again = host.upload_together([np.full(5000, 9, dtype=np.int64)])
    cupy.cuda.get_current_stream().synchronize()
    assert (on_device[0].get() == wide).all() and (on_device[1].get() == odd).all()
    assert (on_device[2].get() == narrow).all() and (again[0].get() == 9).all()
    assert host.upload_together([np.zeros((2, 0), dtype=np.int64)])[0].shape == (2, 0)


@pytest.mark.cuda
@pytest.mark.skipif(not CUDA_AVAILABLE, reason=f"CUDA backend unavailable: {CUDA_REASON}")
def test_launch_sizes_of_real_kernels():
    kernel = loader.get_kernel("edit/kernels/path.cu", "trace_paths")
    grid, block = launch.grid(kernel, 1000)
    assert block == (kernel.max_threads_per_block,) and grid[0] * block[0] >= 1000
    limits = launch.device_limits(0)
    with pytest.raises(launch.KernelResourceError, match="shared memory"):
        launch.reserve_shared(kernel, limits.shared_per_block_optin + 1)
