"""``gpualign info --kernels`` and ``gpualign tune``: the occupancy arithmetic against NVIDIA's
occupancy calculator, the store of tuned settings, the choice among candidates, and the
commands with and without a GPU."""

from __future__ import annotations

import collections
import doctest
import json
import time

import numpy as np
import pytest

from gpualign import config, tuning
from gpualign.backend import cuda_status
from gpualign.cli import main
from gpualign.cli import tune as tune_cli
from gpualign.cuda import loader, report
from gpualign.cuda.report import DeviceResources, KernelResources, occupancy, used_since

CUDA_AVAILABLE, CUDA_REASON = cuda_status()

#: An H100's SM (compute capability 9.0): 2,048 threads, 32 blocks, 64 Ki registers, 228 KiB
#: of shared memory (227 KiB a block at most), 1 KiB reserved per block.
SM90 = DeviceResources("NVIDIA H100 80GB HBM3", 9, 0, sms=132, max_threads_per_sm=2048,
                       max_blocks_per_sm=32, registers_per_sm=65536, registers_per_block=65536,
                       shared_per_sm=233472, shared_per_block_optin=232448,
                       reserved_shared_per_block=1024)
#: An A100's SM (8.0): the same but 164 KiB of shared memory (163 KiB a block).
SM80 = DeviceResources("NVIDIA A100-SXM4-80GB", 8, 0, sms=108, max_threads_per_sm=2048,
                       max_blocks_per_sm=32, registers_per_sm=65536, registers_per_block=65536,
                       shared_per_sm=167936, shared_per_block_optin=166912,
                       reserved_shared_per_block=1024)


@pytest.mark.parametrize(("threads", "registers", "shared", "blocks", "percent", "limits"), [
    # The values NVIDIA's occupancy calculator (CUDA_Occupancy_Calculator.xls, cuda_occupancy.h)
    # gives for compute capability 9.0.
    (128, 32, 0, 16, 100.0, ("warps", "registers")),
    (256, 64, 0, 4, 50.0, ("registers",)),
    (256, 128, 0, 2, 25.0, ("registers",)),
    (128, 255, 0, 2, 12.5, ("registers",)),
    (96, 72, 0, 9, 42.1875, ("registers",)),  # 2,304 registers a warp: 7 warps a partition
    (1024, 32, 0, 2, 100.0, ("warps", "registers")),
    (32, 16, 0, 32, 50.0, ("blocks",)),  # block slots run out before warp slots
    (128, 40, 48 * 1024, 4, 25.0, ("shared memory",)),  # 49 KiB a block with the reserve
    (256, 32, 100 * 1024, 2, 25.0, ("shared memory",)),
    (128, 32, 227 * 1024, 1, 6.25, ("shared memory",)),  # the most a block may have
    (128, 32, 227 * 1024 + 1, 0, 0.0, ("shared memory",)),
    (1024, 65, 0, 0, 0.0, ("registers",)),  # 2,304 x 32 warps > 64 Ki registers a block
    (128, 256, 0, 0, 0.0, ("registers",)),  # over 255 a thread
])
def test_occupancy_matches_the_calculator_for_sm90(threads, registers, shared, blocks, percent,
                                                   limits):
    fit = occupancy(KernelResources(registers=registers, block_threads=threads,
                                    dynamic_shared=shared), SM90)
    assert fit.blocks_per_sm == blocks
    assert fit.occupancy * 100 == pytest.approx(percent)
    assert fit.warps_per_sm == blocks * -(-threads // 32)
    assert fit.limited_by == limits


def test_static_and_dynamic_shared_memory_add_up():
    split = KernelResources(registers=32, block_threads=128, static_shared=20_000,
                            dynamic_shared=30_000)
    whole = KernelResources(registers=32, block_threads=128, dynamic_shared=50_000)
    # (50,000 + 1,024) rounded up to 128 bytes = 51,072: 4 blocks of 228 KiB, 3 of 164 KiB.
    assert occupancy(split, SM90) == occupancy(whole, SM90)
    assert occupancy(whole, SM90).blocks_per_sm == 4
    assert occupancy(whole, SM80).blocks_per_sm == 3


def test_used_since_lists_the_kernels_asked_for(monkeypatch):
    requests = collections.Counter({("a.cu", "k<1>", ()): 2})
    monkeypatch.setattr(loader, "REQUESTS", requests)
    before = dict(requests)
    requests["b.cu", "k", ()] += 1
    requests["a.cu", "k<1>", ()] += 1
    assert used_since(before) == [("a.cu", "k<1>", ()), ("b.cu", "k", ())]
    assert used_since(dict(requests)) == []


@pytest.fixture
def store(tmp_path, monkeypatch):
    """An empty store of tuned settings in a temporary cache folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv(tuning.ENV_VAR, raising=False)
    tuning.reset()
    yield tmp_path / "gpualign" / "tuning"
    tuning.reset()
    config.reset()


def test_the_store_keeps_choices_per_model_and_applies_them_where_defaults_stand(store):
    model = "NVIDIA H100 80GB HBM3"
    path = tuning.save(model, {"ALIGN_STRIP_ROWS": 32, "EDIT_SLICE_KERNEL": (32, 8),
                               "LCS_GPU_SLOTS": config.LCS_GPU_SLOTS, "NO_SUCH_SETTING": 1},
                       [{"family": "align-strip", "seconds": 0.1}])
    assert path == store / "nvidia-h100-80gb-hbm3.json"
    assert json.loads(path.read_text())["device"] == model
    assert tuning.load(model)["EDIT_SLICE_KERNEL"] == (32, 8)  # a tuple again
    assert tuning.load("NVIDIA H200") == {}
    assert tuning.stored_models() == [(model, path)]

    config.LCS_TILE_WORDS = (1, 2)  # the user's own value is kept
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(config, "ALIGN_STRIP_ROWS", 96)
        assert tuning.apply(model) == {"EDIT_SLICE_KERNEL": (32, 8)}
        assert config.ALIGN_STRIP_ROWS == 96
    config.reset()
    assert tuning.apply(model) == {"ALIGN_STRIP_ROWS": 32, "EDIT_SLICE_KERNEL": (32, 8)}
    assert config.ALIGN_STRIP_ROWS == 32
    assert tuning.apply(model) == {}  # applied already
    config.reset()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(tuning.ENV_VAR, "off")
        assert tuning.apply(model) == {}
    assert config.ALIGN_STRIP_ROWS == 64

    assert tuning.reset("NVIDIA H200") == []
    assert tuning.reset() == [path]
    assert tuning.load(model) == {}


def test_an_unreadable_store_means_the_defaults(store):
    path = tuning.store_path("GPU")
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert tuning.load("GPU") == {} and tuning.apply("GPU") == {}


@pytest.mark.parametrize("module", [report, tuning, tune_cli], ids=lambda m: m.__name__)
def test_the_examples_of_the_docstrings(module, store):
    outcome = doctest.testmod(module)
    assert outcome.failed == 0 and outcome.attempted > 0


def test_candidates_around_a_value():
    assert tune_cli.powers_of_two_around(64) == (16, 32, 64, 128, 256)
    assert tune_cli.powers_of_two_around(2) == (1, 2, 4, 8)
    assert tune_cli.powers_of_two_around(512, low=32, high=1024) == (128, 256, 512, 1024)
    family = tune_cli.FAMILIES["align-strip"]
    assert family.available and family.settings == ("ALIGN_STRIP_ROWS",)
    assert family.candidates["ALIGN_STRIP_ROWS"](64)[0] == 64  # the current value first


def test_mutated_copies_have_the_asked_differences():
    rng = np.random.default_rng(3)
    original = rng.integers(0, 4, 200_000).astype(np.uint8)
    copy = tune_cli.mutated(rng, original, 0.06, 0.02)
    assert len(copy) / len(original) == pytest.approx(0.98, abs=0.002)
    same = tune_cli.mutated(np.random.default_rng(3), original, 0.0, 0.0)
    assert np.array_equal(same, original)
    longer = tune_cli.mutated(rng, original, 0.0, 0.0, insertions=0.05)
    assert len(longer) / len(original) == pytest.approx(1.05, abs=0.002)
    queries, targets = tune_cli.random_pairs(4, 500, seed=1)
    assert queries.lengths.tolist() == [500] * 4 and len(targets) == 4


def test_tuning_a_family_picks_the_fastest_correct_candidate(monkeypatch):
    """A family on the CPU whose workload sleeps as long as its settings say: a wrong answer or
    a failure is never chosen, however fast."""
    monkeypatch.setattr(tune_cli, "SECONDS_PER_CANDIDATE", 0.0)
    monkeypatch.setattr(config, "ALIGN_STRIP_ROWS", 64)
    monkeypatch.setattr(config, "ALIGN_GPU_CHUNK_PAIRS", 8)
    seconds = {16: 0.0, 32: 0.12, 64: 0.08, 128: 0.02, 256: 0.0}

    def run():
        rows, chunk = config.ALIGN_STRIP_ROWS, config.ALIGN_GPU_CHUNK_PAIRS
        if rows == 256:
            raise ValueError("too many registers")
        time.sleep(seconds[rows] + (0.06 if chunk == 4 else 0.0))
        return np.array([rows == 16, 7])  # 16 rows answer wrongly

    family = tune_cli.Family("fake", {"ALIGN_STRIP_ROWS": tune_cli.powers_of_two_around,
                                      "ALIGN_GPU_CHUNK_PAIRS": tune_cli._fixed(4)},
                             lambda: tune_cli.Workload(run, 10**9, "fake"))
    shown = []
    best, measured = tune_cli.tune_family(family, family.workload(), shown.append)
    assert best == {"ALIGN_STRIP_ROWS": 128, "ALIGN_GPU_CHUNK_PAIRS": 8}
    errors = {m.settings["ALIGN_STRIP_ROWS"]: m.error for m in measured if m.error}
    assert "differ" in errors[16] and "too many registers" in errors[256]
    assert measured[0].settings == {"ALIGN_STRIP_ROWS": 64, "ALIGN_GPU_CHUNK_PAIRS": 8}
    assert len(measured) == len(shown) == 6  # the start, 16, 32, 128, 256; then (128, 4)
    assert measured[0].gcups == pytest.approx(10**9 / measured[0].seconds / 1e9)
    assert config.ALIGN_STRIP_ROWS == 64  # the settings are back as they were


@pytest.mark.skipif(CUDA_AVAILABLE, reason="checks the machines without a GPU")
@pytest.mark.parametrize("argv", [["info", "--kernels"], ["info"], ["tune"]])
def test_without_a_gpu_the_commands_say_so_and_succeed(argv, capsys, store):
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "no CUDA GPU: " in out


def test_tune_show_and_reset(store, capsys):
    assert main(["tune", "--show"]) == 0
    assert "no stored choices" in capsys.readouterr().out
    tuning.save("Some GPU", {"ALIGN_STRIP_ROWS": 32}, [])
    assert main(["tune", "--show"]) == 0
    assert "Some GPU: ALIGN_STRIP_ROWS=32" in capsys.readouterr().out
    assert main(["tune", "--reset"]) == 0
    assert "removed 1 file" in capsys.readouterr().out
    assert tuning.stored_models() == []


@pytest.mark.cuda
@pytest.mark.skipif(not CUDA_AVAILABLE, reason=f"CUDA unavailable: {CUDA_REASON}")
def test_occupancy_equals_the_driver_for_real_kernels():
    import cupy

    from gpualign.cuda.report import device_resources, kernel_report

    driver_occupancy = getattr(cupy.cuda.driver, "occupancyMaxActiveBlocksPerMultiprocessor",
                               None)
    if driver_occupancy is None:
        pytest.skip("this CuPy has no cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor")
    device = device_resources(cupy.cuda.Device().id)
    for path, name in (("edit/kernels/path.cu", "trace_paths"),
                       ("align/kernels/warp.cu", "gather_paths<false>"),
                       ("lcs/kernels/lcs.cu", "lcs_tiles<2, true>"),
                       ("mems/kernels/mems.cu", "mems_at<false>")):
        entry = kernel_report(path, name)
        kernel = loader.get_kernel(path, name)
        for shared in (0, 16 * 1024):
            # RawKernel.kernel: the compiled function of the current device, with its handle.
            driver = driver_occupancy(kernel.kernel.ptr, entry.resources.block_threads, shared)
            ours = occupancy(KernelResources(entry.resources.registers,
                                             entry.resources.block_threads,
                                             entry.resources.static_shared, shared), device)
            assert ours.blocks_per_sm == driver, (name, shared)


@pytest.mark.cuda
@pytest.mark.skipif(not CUDA_AVAILABLE, reason=f"CUDA unavailable: {CUDA_REASON}")
def test_info_kernels_reports_every_capability(capsys, store):
    assert main(["info", "--kernels"]) == 0
    out = capsys.readouterr().out
    for kernel in ("trace_paths", "myers_edit<", "align_pairs<", "lcs_tiles<", "mems_at<",
                   "fasta_records<"):
        assert kernel in out
    assert "ALIGN_STRIP_ROWS=64" in out  # the tile of the thread-per-pair alignment kernel
    rows = [line for line in out.splitlines() if line.startswith("| ") and "%" in line]
    assert rows and all(int(line.split("|")[7]) >= 1 for line in rows)  # every kernel fits


@pytest.mark.cuda
@pytest.mark.skipif(not CUDA_AVAILABLE, reason=f"CUDA unavailable: {CUDA_REASON}")
def test_tune_stores_a_choice_that_later_calls_use(capsys, store, monkeypatch):
    import gpualign

    monkeypatch.setitem(tune_cli.FAMILIES, "align-strip", tune_cli.Family(
        "align-strip", {"ALIGN_STRIP_ROWS": tune_cli._fixed(32)},
        lambda: tune_cli._align_workload(2_000, 1_500, "2,000 pairs of 1,500 bp")))
    assert main(["tune", "--family", "align-strip"]) == 0
    out = capsys.readouterr().out
    assert "ALIGN_STRIP_ROWS=32:" in out and "chosen: ALIGN_STRIP_ROWS=" in out
    model = tune_cli.current_model()
    chosen = tuning.load(model)["ALIGN_STRIP_ROWS"]
    assert chosen in (32, 64)
    config.reset()
    gpualign.align(["ACGT"], ["ACGA"], backend="cuda")
    assert config.ALIGN_STRIP_ROWS == chosen


@pytest.mark.parametrize("command", ["align", "edit"])
def test_long_records_get_cigars_from_the_command_line(backend, command, tmp_path, monkeypatch):
    """A 12 kb pair through ``gpualign align`` / ``gpualign edit`` with CIGARs, through the
    long-pair kernels where they exist (their thresholds lowered), against parasail and
    edlib."""
    import edlib
    import parasail

    from gpualign.cigar import cigar_edit_cost, parse_cigar

    for setting in ("LONG_ALIGN_MIN_CELLS", "LONG_EDIT_MIN_CELLS"):
        if hasattr(config, setting):
            monkeypatch.setattr(config, setting, 1 << 20)
    queries, targets = tune_cli.random_pairs(1, 12_000, seed=5)
    query, target = queries[0], targets[0]
    files = []
    for name, sequence in (("query", query), ("target", target)):
        files.append(tmp_path / f"{name}.fa")
        files[-1].write_text(f">{name}\n{sequence}\n")
    out = tmp_path / "out.tsv"
    assert main([command, *map(str, files), "--task", "path", "--backend", backend, "-o",
                 str(out), "--quiet"]) == 0
    header, row = (line.split("\t") for line in out.read_text().splitlines())
    row = dict(zip(header, row, strict=True))
    cost = cigar_edit_cost(query, target, row["cigar"])  # every = and X true, both consumed
    if command == "edit":
        assert int(row["distance"]) == cost == edlib.align(query, target)["editDistance"]
        return
    scoring = tune_cli.SCORING
    rescored = 0
    for length, op in parse_cigar(row["cigar"]):
        rescored += {"=": scoring.match * length, "X": scoring.mismatch * length}.get(
            op, -(scoring.gap_open + (length - 1) * scoring.gap_extend))
    expected = parasail.nw_striped_32(query, target, scoring.gap_open, scoring.gap_extend,
                                      parasail.matrix_create("ACGT", 2, -3)).score
    assert int(row["score"]) == rescored == expected
