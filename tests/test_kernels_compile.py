"""Every CUDA kernel of the package compiles with NVRTC 12 and NVRTC 13, the compilers behind
the ``cuda12`` and ``cuda13`` extras. NVRTC needs no GPU, so this runs in CI: ``.ci/run``
installs both (``nvidia-cuda-nvrtc-cu12``, ``nvidia-cuda-nvrtc``); elsewhere the test skips
the versions it cannot find. The kernels are built as the loader builds them (its options),
for Hopper (sm_90, through ptxas), one or two instantiations of each template."""

from __future__ import annotations

import ctypes
import importlib.util
from pathlib import Path

import pytest

from gpualign.align import _cuda as align_cuda
from gpualign.align import _cuda_long as align_long
from gpualign.cuda import loader
from gpualign.edit import _cuda as edit_cuda
from gpualign.formats import _cuda as formats_cuda
from gpualign.mems import _cuda as mems_cuda
from gpualign.search import _cuda as search_cuda

KERNELS = {
    align_cuda.KERNEL_FILE: [
        "build_profiles",
        align_cuda._kernel_name(False, 0, False, 0, False, 32),  # NW, DNA, narrow lanes
        align_cuda._kernel_name(True, 1, True, 2, True, 3),  # SW ends, query profile, wide
        align_cuda._kernel_name(False, 3, True, 1, False, 1),  # overlap, shared table
    ],
    align_cuda.WARP_KERNEL_FILE: [
        "gather_paths<false>", "gather_paths<true>", "warp_fill<24, 2, true, true, 32>",
        "warp_fill<32, 1, false, false, 32>", "trace_back<2, true, false>",
        "warp_fill<16, 1, true, true, 32>", "trace_back<1, true, true>",
        "trace_back<3, false, true>",
        "warp_fill<8, 1, true, true, 128>", "warp_fill<16, 0, true, true, 128>",  # a block a pair
        "warp_fill<2, 1, true, true, 128>", "warp_fill<4, 2, true, true, 128>",  # a byte, a half
        "warp_fill<16, 1, true, true, 256>", "warp_fill<8, 0, true, true, 512>",  # larger blocks
        "trace_back<0, true, false>",
    ],
    align_cuda.BAND_KERNEL_FILE: ["band_fill<true>", "band_fill<false>", "band_runs"],
    align_long.KERNEL_FILE: [
        align_long.kernel_name(32, 16, True, False, False, "tickets"),  # one warp a tile, DNA
        align_long.kernel_name(128, 8, False, True, True, "launches"),  # four warps, local
        align_long.kernel_name(64, 1, True, False, True, "tickets"),
        align_long.kernel_name(32, 4, True, False, False, "bands"),  # one warp a band, DNA
        align_long.kernel_name(64, 2, False, True, True, "bands"),  # two warps, a table, local
        align_long.kernel_name(32, 4, True, False, False, "bands", trace=True),  # nibbles
        align_long.kernel_name(64, 8, False, False, False, "bands", trace=True),
        "trace_walk<32, 4>", "trace_walk<64, 8>",
        "leaf_paths", "pack_leaf_paths", "split_columns",
    ],
    edit_cuda.KERNEL_FILE: [
        "build_match_table", edit_cuda._kernel_name(1, 1, True, edit_cuda.TRACK_BEST),
        edit_cuda._kernel_name(1, 3, True, edit_cuda.TRACK_FINAL),
        edit_cuda._kernel_name(4, 8, True, edit_cuda.TRACK_LAST_END),
        edit_cuda._kernel_name(32, 2, False, edit_cuda.TRACK_FIRST_END),
    ],
    edit_cuda.PATH_KERNEL_FILE: ["trace_paths", "write_runs"],
    edit_cuda.LONG_KERNEL_FILE: [
        "long_match_table", "pick_splits", "gather_leaf_ops",
        edit_cuda._long_kernel_name(1, 2, edit_cuda.TRACK_ROW, True),
        edit_cuda._long_kernel_name(4, 4, edit_cuda.TRACK_LAST_END, False),
        edit_cuda._long_kernel_name(32, 1, edit_cuda.TRACK_FINAL, True),
        edit_cuda._long_kernel_name(32, 2, edit_cuda.TRACK_BEST, False),
        edit_cuda._long_kernel_name(16, 1, edit_cuda.TRACK_FIRST_END, True),
        edit_cuda._long_kernel_name(32, 1, edit_cuda.TRACK_ROW, False),
    ],
    "lcs/kernels/lcs.cu": ["lcs_tiles<2, true>", "lcs_tiles<1, false>"],
    mems_cuda.KERNEL_FILE: ["mems_at<false>", "mems_at<true>"],
    search_cuda.KERNEL_FILE: [search_cuda.kernel_name(4, 8, False),
                              search_cuda.kernel_name(16, 28, False),
                              search_cuda.kernel_name(32, 32, True),
                              search_cuda.kernel_name(8, 12, True),
                              search_cuda.kernel_name(4, 6, False),
                              search_cuda.kernel_name(32, 30, True)],
    mems_cuda.INDEX_KERNEL_FILE: ["kmer_codes_at_rows", "kmer_bounds"],
    formats_cuda.KERNEL_FILE: ["fasta_records<false>", "fasta_records<true>",
                               "mummer_blocks<false>", "mummer_blocks<true>"],
}


def _nvrtc(major: int) -> ctypes.CDLL | None:
    """NVRTC ``major`` from the NVIDIA wheels, or None."""
    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        for path in sorted(Path(root).glob(f"*/lib/libnvrtc.so.{major}")):
            return ctypes.CDLL(str(path))
    return None


def _compile(nvrtc: ctypes.CDLL, path: str, names: list[str]) -> tuple[int, str]:
    """Compile package file ``path`` with ``names`` as name expressions: (status, log)."""
    program = ctypes.c_void_p()
    source = loader.source(path).encode()
    assert nvrtc.nvrtcCreateProgram(ctypes.byref(program), source, path.encode(), 0, None,
                                    None) == 0
    for name in names:
        assert nvrtc.nvrtcAddNameExpression(program, name.encode()) == 0
    options = [option.encode() for option in (*loader.OPTIONS, "--gpu-architecture=sm_90")]
    status = nvrtc.nvrtcCompileProgram(program, len(options),
                                       (ctypes.c_char_p * len(options))(*options))
    size = ctypes.c_size_t()
    nvrtc.nvrtcGetProgramLogSize(program, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    nvrtc.nvrtcGetProgramLog(program, log)
    nvrtc.nvrtcDestroyProgram(ctypes.byref(program))
    return status, log.value.decode(errors="replace")


@pytest.mark.parametrize("major", [12, 13])
@pytest.mark.parametrize("path", sorted(KERNELS))
def test_kernels_compile_with_nvrtc(path, major):
    nvrtc = _nvrtc(major)
    if nvrtc is None:
        pytest.skip(f"NVRTC {major} not installed (pip install nvidia-cuda-nvrtc"
                    f"{'-cu12' if major == 12 else ''})")
    status, log = _compile(nvrtc, path, KERNELS[path])
    assert status == 0, log
