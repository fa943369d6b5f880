"""allpairs: the cascade is lossless (brute force over every pair of real 16S genes), tiles and
checkpoints give exactly the same result, and odd inputs have defined results."""

from __future__ import annotations

import doctest
import functools
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import kill_a_worker_mid_run, local_dask_client

import gpualign
from gpualign import Scoring, SequenceSet
from gpualign.allpairs import CheckpointWarning
from gpualign.allpairs import api as allpairs_api
from gpualign.cigar import count_ops

DATA = Path(__file__).parent / "data"
SCORING = Scoring(match=2, mismatch=-3, gap_open=5, gap_extend=2)


def mutate(rng, text, rate):
    out = []
    for c in text:
        r = rng.random()
        if r < rate / 3:
            continue
        out.append("ACGT"[rng.integers(4)] if r < 2 * rate / 3 else c)
        if rate / 3 * 2 <= r < rate:
            out.append("ACGT"[rng.integers(4)])
    return "".join(out)


@functools.lru_cache(maxsize=1)
def genes() -> tuple[list[str], list[str]]:
    """30 real 16S genes, near copies of some of them (0.5-4% changes), an exact duplicate, an
    N-rich copy, a fragment and a short unrelated sequence."""
    real = SequenceSet.from_file(DATA / "rdp16s_200.fasta.gz", invalid="wildcard")
    names = [real.names[i] for i in range(30)]
    texts = [real[i] for i in range(30)]
    rng = np.random.default_rng(21)
    for k, rate in enumerate((0.005, 0.01, 0.02, 0.03, 0.04)):
        texts.append(mutate(rng, texts[k], rate))
        names.append(f"{names[k]}_mut{rate}")
    texts.append(texts[3])
    names.append(f"{names[3]}_dup")
    n_rich = list(texts[4])
    for position in rng.choice(len(n_rich), len(n_rich) // 10, replace=False):
        n_rich[position] = "N"
    texts.append("".join(n_rich))
    names.append(f"{names[4]}_N")
    texts.append(texts[5][200:900])
    names.append(f"{names[5]}_fragment")
    texts.append("ACGT" * 10)
    names.append("short")
    return names, texts


@functools.lru_cache(maxsize=1)
def brute_force() -> dict[str, np.ndarray]:
    """Every pair i < j aligned (path), with both identities."""
    _, texts = genes()
    n = len(texts)
    q_index, t_index = np.triu_indices(n, 1)
    result = gpualign.align(texts, texts, scoring=SCORING, task="path",
                            pairs=(q_index, t_index))
    matches = np.array([count_ops(cigar, "=") for cigar in result.cigar])
    lengths = np.array([len(t) for t in texts])
    shorter = np.minimum(lengths[q_index], lengths[t_index])
    return {"query_index": q_index, "target_index": t_index, "score": result.score,
            "columns": result.identity, "shorter": matches / shorter, "cigar": result.cigar}


def expected(threshold: float, kind: str) -> np.ndarray:
    return np.flatnonzero(brute_force()[kind] >= threshold)


def check(hits, threshold: float, kind: str) -> None:
    truth = brute_force()
    want = expected(threshold, kind)
    assert hits.query_index.tolist() == truth["query_index"][want].tolist(), threshold
    assert hits.target_index.tolist() == truth["target_index"][want].tolist()
    assert hits.identity.tolist() == truth[kind][want].tolist()
    assert hits.score.tolist() == truth["score"][want].tolist()
    assert hits.cigar == [truth["cigar"][i] for i in want]
    stages = hits.stages
    assert stages["pairs"] == len(truth["query_index"])
    assert stages["pairs"] >= stages["length"] >= stages["edit"] >= stages["aligned"] \
        >= stages["kept"] == len(want)


def test_docstring_examples_run():
    assert doctest.testmod(allpairs_api, raise_on_error=True).attempted > 0


@pytest.mark.parametrize("kind,thresholds", [("columns", (1.0, 0.97, 0.9, 0.8)),
                                             ("shorter", (0.99, 0.95, 0.85))])
def test_lossless_against_brute_force_on_real_16s(monkeypatch, kind, thresholds):
    monkeypatch.setattr(gpualign.config, "ALLPAIRS_TILE", 9)  # many tiles, some partial
    _, texts = genes()
    for threshold in thresholds:
        hits = gpualign.allpairs(texts, min_identity=threshold, scoring=SCORING,
                                 identity=kind)
        check(hits, threshold, kind)
        if threshold >= 0.97:  # the bounds must do the work at high identity
            assert hits.stages["edit"] < hits.stages["pairs"] / 5, hits.stages


def test_duplicates_and_fragments(monkeypatch):
    names, texts = genes()
    hits = gpualign.allpairs(texts, min_identity=1.0, scoring=SCORING)
    pairs = list(zip(hits.query_index.tolist(), hits.target_index.tolist(), strict=True))
    assert (3, names.index(f"{names[3]}_dup")) in pairs
    assert hits.identity.tolist() == [1.0] * len(hits)
    # The fragment is identical to part of its gene: 100% of the shorter, not of the columns.
    fragment = names.index(f"{names[5]}_fragment")
    by_shorter = gpualign.allpairs(texts, min_identity=0.99, identity="shorter",
                                   scoring=SCORING)
    assert (5, fragment) in zip(by_shorter.query_index.tolist(),
                                by_shorter.target_index.tolist(), strict=True)


def test_two_sets_form(monkeypatch):
    monkeypatch.setattr(gpualign.config, "ALLPAIRS_TILE", 4)
    _, texts = genes()
    a, b = texts[:12], texts[30:]
    hits = gpualign.allpairs(a, b, min_identity=0.9, scoring=SCORING, align=False)
    assert hits.cigar is None
    q, t = np.meshgrid(np.arange(len(a)), np.arange(len(b)), indexing="ij")
    brute = gpualign.align(a, b, scoring=SCORING, task="path", pairs=(q.ravel(), t.ravel()))
    keep = np.flatnonzero(brute.identity >= 0.9)
    assert hits.query_index.tolist() == q.ravel()[keep].tolist()
    assert hits.target_index.tolist() == t.ravel()[keep].tolist()
    assert hits.identity.tolist() == brute.identity[keep].tolist()


def test_checkpoint_resume_gives_identical_output(monkeypatch, tmp_path):
    monkeypatch.setattr(gpualign.config, "ALLPAIRS_TILE", 7)
    _, texts = genes()
    plain = gpualign.allpairs(texts, min_identity=0.9, scoring=SCORING)
    folder = tmp_path / "ckpt"
    # A run killed after a few tiles: those tiles are on disk, nothing half-written counts.
    real_compute = allpairs_api._compute_tile
    calls = {"n": 0}

    def dying(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] > 5:
            raise KeyboardInterrupt("killed")
        return real_compute(*args, **kwargs)

    monkeypatch.setattr(allpairs_api, "_compute_tile", dying)
    with pytest.raises(KeyboardInterrupt):
        gpualign.allpairs(texts, min_identity=0.9, scoring=SCORING, checkpoint=folder)
    saved = sorted(p.name for p in folder.glob("tile-*.tsv.gz"))
    assert len(saved) == 5
    (folder / "tile-999-999.tsv.gz.part").write_bytes(b"half a tile")  # a crash mid-write
    # The rerun computes only the missing tiles and returns exactly the same pairs.
    calls["n"] = -10**9
    resumed = gpualign.allpairs(texts, min_identity=0.9, scoring=SCORING, checkpoint=folder)
    assert calls["n"] == -10**9 + (len(list(folder.glob("tile-*.tsv.gz"))) - 5)
    again = gpualign.allpairs(texts, min_identity=0.9, scoring=SCORING, checkpoint=folder)
    for result in (resumed, again):
        for name in ("query_index", "target_index", "identity", "score", "query_start",
                     "query_end", "target_start", "target_end"):
            assert getattr(result, name).tolist() == getattr(plain, name).tolist(), name
        assert result.cigar == plain.cigar and result.stages == plain.stages


def test_checkpoint_of_another_run_is_refused(tmp_path):
    _, texts = genes()
    folder = tmp_path / "ckpt"
    gpualign.allpairs(texts[:6], min_identity=0.9, checkpoint=folder)
    with pytest.raises(ValueError, match="another run .*min_identity"):
        gpualign.allpairs(texts[:6], min_identity=0.8, checkpoint=folder)
    with pytest.raises(ValueError, match="another run .*sequences"):
        gpualign.allpairs(texts[:7], min_identity=0.9, checkpoint=folder)


def test_small_and_empty_inputs():
    for texts in ([], ["ACGT"]):
        hits = gpualign.allpairs(texts)
        assert len(hits) == 0 and hits.cigar == [] and hits.stages["pairs"] == 0
    hits = gpualign.allpairs(["", "", "A"], min_identity=0.5)
    assert len(hits) == 0  # nothing to align between empty sequences: no identity


@pytest.mark.parametrize("kwargs,error,match", [
    ({"min_identity": 0}, ValueError, "min_identity"),
    ({"min_identity": 1.5}, ValueError, "min_identity"),
    ({"identity": "longer"}, ValueError, "identity='longer'"),
    ({"scoring": "blosum"}, TypeError, "gpualign.Scoring"),
])
def test_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        gpualign.allpairs(["ACGT", "ACGA"], **kwargs)


# --- on a Dask cluster ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def client():
    pytest.importorskip("distributed")
    # Compile (and cache) the Numba kernels here first, so that the workers load them instead
    # of compiling them at the same time.
    gpualign.allpairs(genes()[1][:4], min_identity=0.5, scoring=SCORING)
    with local_dask_client(processes=True) as dask_client:
        yield dask_client


def same_result(a, b) -> None:
    for name in ("query_index", "target_index", "identity", "score", "query_start",
                 "query_end", "target_start", "target_end"):
        assert getattr(a, name).tolist() == getattr(b, name).tolist(), name
    assert a.cigar == b.cigar and a.stages == b.stages


def test_dask_equals_local(client, monkeypatch, tmp_path):
    # The tile size travels with the job, so the workers' own config does not matter.
    monkeypatch.setattr(gpualign.config, "ALLPAIRS_TILE", 8)
    _, texts = genes()
    local = gpualign.allpairs(texts, min_identity=0.9, scoring=SCORING)
    on_dask = gpualign.allpairs(texts, min_identity=0.9, scoring=SCORING, client=client,
                                checkpoint=tmp_path / "ckpt")
    same_result(local, on_dask)
    check(on_dask, 0.9, "columns")
    resumed = gpualign.allpairs(texts, min_identity=0.9, scoring=SCORING, client=client,
                                checkpoint=tmp_path / "ckpt")
    same_result(local, resumed)


def test_dask_spreads_tiles_over_the_workers(client, monkeypatch):
    # Dask on its own sends every task that needs the set to the worker holding it; the pull
    # model must keep both workers busy.
    from distributed import get_task_stream

    monkeypatch.setattr(gpualign.config, "ALLPAIRS_TILE", 6)
    _, texts = genes()
    with get_task_stream(client) as stream:
        on_dask = gpualign.allpairs(texts, min_identity=0.6, scoring=SCORING, client=client)
    same_result(gpualign.allpairs(texts, min_identity=0.6, scoring=SCORING), on_dask)
    tiles = [task for task in stream.data if "allpairs-tile" in str(task["key"])]
    total = len(list(allpairs_api._tiles(len(texts), len(texts), True, 6)))
    assert len(tiles) == total
    assert {task["worker"] for task in tiles} == set(client.scheduler_info()["workers"])


def test_dask_worker_killed_mid_run(client, monkeypatch, tmp_path):
    monkeypatch.setattr(gpualign.config, "ALLPAIRS_TILE", 6)
    _, texts = genes()
    undisturbed = gpualign.allpairs(texts, min_identity=0.6, scoring=SCORING)
    folder = tmp_path / "ckpt"
    outcome = {}

    def run():
        outcome["result"] = gpualign.allpairs(texts, min_identity=0.6, scoring=SCORING,
                                              client=client, checkpoint=folder)

    total = len(list(allpairs_api._tiles(len(texts), len(texts), True, 6)))
    finished_before = kill_a_worker_mid_run(
        client, run, lambda: len(list(folder.glob("tile-*.tsv.gz"))))
    assert finished_before < total  # the worker died in the middle of the run
    same_result(undisturbed, outcome["result"])


# --- damaged checkpoints --------------------------------------------------------------------------


def finished_checkpoint(monkeypatch, folder, client=None):
    """The uninterrupted result at 0.9 with 7-sequence tiles, its checkpoint in ``folder``, and
    a counter of the tiles computed from then on."""
    monkeypatch.setattr(gpualign.config, "ALLPAIRS_TILE", 7)
    _, texts = genes()
    plain = gpualign.allpairs(texts, min_identity=0.9, scoring=SCORING, checkpoint=folder,
                              client=client)
    computed = []
    real_compute = allpairs_api._compute_tile
    monkeypatch.setattr(allpairs_api, "_compute_tile",
                        lambda *args, **kwargs: computed.append(args[2])
                        or real_compute(*args, **kwargs))
    return texts, plain, computed


def fullest_tile(folder) -> tuple[int, int]:
    """The tile with the most rows, from the checkpoint's ledger."""
    records = [line.split("\t") for line in (folder / "tiles.tsv").read_text().splitlines()]
    bi, bj, _, _ = max(records, key=lambda record: int(record[2]))
    return int(bi), int(bj)


def remove_rows(path, count: int) -> bytes:
    """The tile file at ``path`` without its last ``count`` rows (its header as it was)."""
    import gzip

    lines = gzip.decompress(path.read_bytes()).decode().splitlines(keepends=True)
    return gzip.compress("".join(lines[:-count]).encode())


def forge_ledger(folder, tile, data: bytes, rows: int) -> None:
    """Record ``data`` (``rows`` rows) as tile ``tile``: a ledger edited to match."""
    import hashlib

    with open(folder / "tiles.tsv", "a") as ledger:
        ledger.write(f"{tile[0]}\t{tile[1]}\t{rows}\t{hashlib.sha256(data).hexdigest()}\n")


def damage(kind: str, folder, tile) -> None:
    path = folder / f"tile-{tile[0]}-{tile[1]}.tsv.gz"
    data = path.read_bytes()
    if kind == "truncated":
        path.write_bytes(data[:len(data) // 2])
    elif kind == "garbage":
        path.write_bytes(b"\x00not a tile\n" * 20)
    elif kind == "rows removed":
        path.write_bytes(remove_rows(path, 3))
    elif kind == "rows removed, ledger forged":  # the checksum matches: the counts do not
        data = remove_rows(path, 3)
        path.write_bytes(data)
        records = (folder / "tiles.tsv").read_text().splitlines()
        forge_ledger(folder, tile, data, int(next(
            r.split("\t")[2] for r in records if r.startswith(f"{tile[0]}\t{tile[1]}\t"))) - 3)
    elif kind == "garbage, ledger forged":
        path.write_bytes(b"\x00not a tile\n")
        forge_ledger(folder, tile, b"\x00not a tile\n", 1)
    elif kind == "missing":
        path.unlink()
    elif kind == "ledger line cut":  # a crash while recording the last tile
        ledger = folder / "tiles.tsv"
        ledger.write_text(ledger.read_text()[:-20])


DAMAGES = {"truncated": "checksum mismatch", "garbage": "checksum mismatch",
           "rows removed": "checksum mismatch",
           "rows removed, ledger forged": r"\d+ rows, \d+ counted, \d+ recorded",
           "garbage, ledger forged": "unreadable: Not a gzipped file .*",
           "missing": "file missing", "ledger line cut": "not recorded in tiles.tsv"}


@pytest.mark.parametrize("kind", DAMAGES)
def test_damaged_tile_is_recomputed_with_a_warning(monkeypatch, tmp_path, kind):
    folder = tmp_path / "ckpt"
    texts, plain, computed = finished_checkpoint(monkeypatch, folder)
    if kind == "ledger line cut":
        last = (folder / "tiles.tsv").read_text().splitlines()[-1].split("\t")
        tile = int(last[0]), int(last[1])
    else:
        tile = fullest_tile(folder)
    damage(kind, folder, tile)
    with pytest.warns(CheckpointWarning,
                      match=rf"tile \({tile[0]}, {tile[1]}\) damaged \({DAMAGES[kind]}\): "
                            r"recomputed") as caught:
        resumed = gpualign.allpairs(texts, min_identity=0.9, scoring=SCORING,
                                    checkpoint=folder)
    assert len(caught) == 1 and computed == [tile]
    same_result(plain, resumed)
    assert len(resumed) == resumed.stages["kept"] > 0
    with warnings.catch_warnings():  # repaired: the next run reads every tile back, silently
        warnings.simplefilter("error")
        same_result(plain, gpualign.allpairs(texts, min_identity=0.9, scoring=SCORING,
                                             checkpoint=folder))
    assert computed == [tile]


def test_damaged_manifest_is_an_error(monkeypatch, tmp_path):
    folder = tmp_path / "ckpt"
    texts, _, computed = finished_checkpoint(monkeypatch, folder)
    manifest = folder / "manifest.json"
    for content in (manifest.read_bytes()[:40], b"\xff\xfe garbage", b"[1, 2]"):
        manifest.write_bytes(content)
        with pytest.raises(ValueError, match=r"checkpoint .* is damaged \(manifest.json: .*\); "
                                             r"remove the folder"):
            gpualign.allpairs(texts, min_identity=0.9, scoring=SCORING, checkpoint=folder)
    manifest.unlink()  # the tiles are there, but nothing says which run they belong to
    with pytest.raises(ValueError, match=r"is damaged \(manifest.json missing\)"):
        gpualign.allpairs(texts, min_identity=0.9, scoring=SCORING, checkpoint=folder)
    assert computed == []


def test_checkpoint_of_the_older_format_is_recomputed(monkeypatch, tmp_path):
    import json

    folder = tmp_path / "ckpt"
    texts, plain, computed = finished_checkpoint(monkeypatch, folder)
    # The layout before tile checksums: a manifest without "format", no ledger.
    manifest = json.loads((folder / "manifest.json").read_text())
    del manifest["format"]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "tiles.tsv").unlink()
    tiles = len(list(folder.glob("tile-*.tsv.gz")))
    with pytest.warns(CheckpointWarning, match="older gpualign, without tile checksums: its "
                                               "tiles are recomputed") as caught:
        resumed = gpualign.allpairs(texts, min_identity=0.9, scoring=SCORING,
                                    checkpoint=folder)
    assert len(caught) == 1 and len(computed) == tiles
    same_result(plain, resumed)
    assert json.loads((folder / "manifest.json").read_text())["format"] == 2
    # An old checkpoint of other parameters is still refused, not overwritten.
    del manifest["tile"]
    (folder / "manifest.json").write_text(json.dumps({**manifest, "min_identity": 0.8}))
    with pytest.raises(ValueError, match="another run .*min_identity"):
        gpualign.allpairs(texts, min_identity=0.9, scoring=SCORING, checkpoint=folder)


def test_cli_damaged_checkpoint(monkeypatch, tmp_path, capsys):
    from gpualign.cli import main

    folder, out = tmp_path / "ckpt", tmp_path / "pairs.tsv"
    _, texts = genes()
    seqs = tmp_path / "genes.fa"
    seqs.write_text("".join(f">g{k}\n{text}\n" for k, text in enumerate(texts)))
    monkeypatch.setattr(gpualign.config, "ALLPAIRS_TILE", 7)
    args = ["allpairs", str(seqs), "--min-identity", "0.9", "--gap-open", "5", "--gap-extend",
            "2", "--checkpoint", str(folder), "-o", str(out), "-q"]
    assert main(args) == 0 and capsys.readouterr().err == ""
    first = out.read_text()
    tile = fullest_tile(folder)
    damage("rows removed", folder, tile)
    # --quiet drops the summary, not the warning: one line, and the same rows.
    assert main(args) == 0
    assert capsys.readouterr().err == (f"gpualign allpairs: checkpoint {folder}: tile ({tile[0]}, "
                                       f"{tile[1]}) damaged (checksum mismatch): recomputed\n")
    assert out.read_text() == first
    assert main(args[:-1]) == 0  # the summary counts the rows written
    summary = capsys.readouterr().err
    assert summary.count("\n") == 1 and f"{first.count(chr(10)) - 1} rows written" in summary
    (folder / "manifest.json").write_bytes(b"\x00" * 10)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gpualign: error: checkpoint {folder} is damaged (manifest.json: ")
    assert err.count("\n") == 1


def test_dask_damaged_checkpoint(client, monkeypatch, tmp_path):
    folder = tmp_path / "ckpt"
    texts, plain, _ = finished_checkpoint(monkeypatch, folder, client=client)
    tile = fullest_tile(folder)
    damage("rows removed", folder, tile)
    with pytest.warns(CheckpointWarning, match=rf"tile \({tile[0]}, {tile[1]}\) damaged "
                                               r"\(checksum mismatch\)") as caught:
        resumed = gpualign.allpairs(texts, min_identity=0.9, scoring=SCORING, client=client,
                                    checkpoint=folder)
    assert len(caught) == 1
    same_result(plain, resumed)

class RecordingBar:
    """Stands for the progress bar: keeps its total and every step."""

    bars: list[RecordingBar] = []

    def __init__(self, total, enabled, what, unit="pair"):
        self.total, self.steps = total, []
        RecordingBar.bars.append(self)

    def update(self, count=1):
        self.steps.append(count)

    def close(self):
        pass


def test_progress_counts_pairs_stage_by_stage(monkeypatch, tmp_path, client):
    # One tile moves the bar after each stage (not 0 -> 1 tile at the end); tiles from a
    # checkpoint count at once, tiles from Dask when they come back; the steps add up to the
    # pairs.
    monkeypatch.setattr(allpairs_api, "progress_bar", RecordingBar)
    _, texts = genes()
    pairs = len(texts) * (len(texts) - 1) // 2
    one_tile = gpualign.allpairs(texts, min_identity=0.9, scoring=SCORING, progress=True)
    bar = RecordingBar.bars[-1]
    assert bar.total == pairs == one_tile.stages["pairs"] and sum(bar.steps) == pairs
    stages = one_tile.stages  # nothing from a checkpoint, then the pairs each stage settled
    assert bar.steps == [0, stages["pairs"] - stages["length"],
                         stages["length"] - stages["edit"], stages["aligned"]]
    monkeypatch.setattr(gpualign.config, "ALLPAIRS_TILE", 8)
    others = texts[:5]
    for kwargs in ({"checkpoint": tmp_path / "ckpt"}, {"checkpoint": tmp_path / "ckpt"},
                   {"client": client}):
        gpualign.allpairs(texts, others, min_identity=0.9, scoring=SCORING, progress=True,
                          **kwargs)
        bar = RecordingBar.bars[-1]
        assert bar.total == sum(bar.steps) == len(texts) * len(others)
    assert len(bar.steps) == 1 + len(list(allpairs_api._tiles(len(texts), 5, False, 8)))
