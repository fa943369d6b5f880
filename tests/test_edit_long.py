"""Long edit-distance pairs: the GPU's whole-device distance kernel (kernels/long.cu) and the
CIGARs in linear space (Hirschberg over Myers, edit/_linear.py) of both backends.

Tiny ``LONG_EDIT_*`` settings make pairs of a few hundred symbols long: many 64-row bands
(one lane a band), blocks of 32 columns (partial at the end), and many levels of the recursion.
Every result goes through :func:`test_edit.check` (the naive oracle, edlib, and CIGARs
re-scored to the distance).
"""

from __future__ import annotations

import doctest

import numpy as np
import pytest
from naive import global_distance, last_row
from test_edit import check, mutate, random_codes, to_inputs

import gpualign
import gpualign.backend
from gpualign import config
from gpualign.cigar import cigar_edit_cost, cigar_lengths
from gpualign.edit import _cpu as edit_cpu
from gpualign.edit import _linear, _shared
from gpualign.edit._linear import NO_OP, edits_of_buffer, hirschberg, packed_of_buffer
from gpualign.edit._shared import needs_linear
from gpualign.sequences import get_alphabet

MODES = ("global", "prefix", "infix")

#: Query lengths around the borders of 64-row bands and 32-row words, and longer ones of
#: several bands.
LENGTHS = (1, 2, 31, 32, 33, 63, 64, 65, 127, 128, 129, 200, 333)


@pytest.fixture
def long_settings(monkeypatch):
    """Every pair of 16 cells or more is long: one lane of two words (64 rows) a band on the
    GPU; bands of one word and tiles of 7 columns on the CPU."""
    monkeypatch.setattr(config, "LONG_EDIT_MIN_CELLS", 16)
    monkeypatch.setattr(config, "LONG_EDIT_THREADS", 1)
    monkeypatch.setattr(config, "LONG_EDIT_WORDS_PER_LANE", 2)
    monkeypatch.setattr(edit_cpu, "WAVEFRONT_BAND_WORDS", 1)
    monkeypatch.setattr(edit_cpu, "WAVEFRONT_TILE_COLUMNS", 7)


def similar_pairs(seed, lengths=LENGTHS, n_symbols=4, n_fraction=0.0):
    """Pairs of a random query and a mutated copy (about one edit in eight), with random
    flanks so that infix and prefix ends move."""
    rng = np.random.default_rng(seed)
    queries, targets = [], []
    for length in lengths:
        query = random_codes(rng, length, n_symbols, n_fraction)
        core = mutate(rng, query, max(1, length // 8), n_symbols)
        flank = int(rng.integers(0, 40))
        queries.append(query)
        targets.append(random_codes(rng, flank, n_symbols) + core
                       + random_codes(rng, int(rng.integers(0, 40)), n_symbols))
    return queries, targets


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("task", ["distance", "locations", "path"])
def test_long_pairs_every_mode(backend, long_settings, mode, task):
    queries, targets = similar_pairs(1)
    r = gpualign.edit_distance(to_inputs(queries), to_inputs(targets), mode=mode, task=task,
                               backend=backend)
    check(queries, targets, r, mode=mode, task=task)


@pytest.mark.parametrize("mode", MODES)
def test_long_pairs_with_cutoff(backend, long_settings, mode):
    queries, targets = similar_pairs(2)
    for k in (0, 5, 30):
        r = gpualign.edit_distance(to_inputs(queries), to_inputs(targets), mode=mode, k=k,
                                   task="path", backend=backend)
        check(queries, targets, r, mode=mode, task="path", k=k)


@pytest.mark.parametrize("alphabet", ["protein", "bytes"])
def test_long_pairs_other_alphabets(backend, long_settings, alphabet):
    n_symbols = get_alphabet(alphabet).match_codes
    queries, targets = similar_pairs(3, (40, 65, 150), n_symbols=min(n_symbols, 20))
    for mode in MODES:
        r = gpualign.edit_distance(to_inputs(queries, alphabet), to_inputs(targets, alphabet),
                                   mode=mode, task="path", alphabet=alphabet, backend=backend)
        check(queries, targets, r, mode=mode, task="path", alphabet=alphabet)


def test_long_pairs_with_never_matching_symbols(backend, long_settings):
    queries, targets = similar_pairs(4, (64, 130), n_fraction=0.2)
    for mode in MODES:
        r = gpualign.edit_distance(to_inputs(queries), to_inputs(targets), mode=mode,
                                   task="path", backend=backend)
        check(queries, targets, r, mode=mode, task="path")


def test_long_and_short_pairs_mixed(backend, monkeypatch):
    # Only the pairs of at least 4096 cells are long; the others keep their kernels, and the
    # results come back in the order of the pairs.
    monkeypatch.setattr(config, "LONG_EDIT_MIN_CELLS", 4096)
    monkeypatch.setattr(config, "LONG_EDIT_THREADS", 2)
    queries, targets = similar_pairs(5, (10, 300, 0, 20, 129, 64, 70))
    for mode in MODES:
        for task in ("distance", "path"):
            r = gpualign.edit_distance(to_inputs(queries), to_inputs(targets), mode=mode,
                                       task=task, backend=backend)
            check(queries, targets, r, mode=mode, task=task)


def test_widening_bands_give_the_exact_distance(backend, long_settings):
    # Global distances of long pairs in bands of 64, 128, ... (CPU): similar pairs stop early,
    # dissimilar ones end on the whole matrix; both exact.
    rng = np.random.default_rng(11)
    similar_query = random_codes(rng, 2000)
    queries = [similar_query, random_codes(rng, 1500), random_codes(rng, 700)]
    targets = [mutate(rng, similar_query, 150), random_codes(rng, 1400),
               mutate(rng, queries[2], 3)]
    for task in ("distance", "path"):
        r = gpualign.edit_distance(to_inputs(queries), to_inputs(targets), task=task,
                                   backend=backend)
        check(queries, targets, r, mode="global", task=task)


@pytest.mark.parametrize("edits", [1, 8, 40, 150])
def test_banded_sweep_is_exact_within_its_bound(edits):
    # Global sweeps in a band (CPU): the distance when it is at most the bound, else bound + 1,
    # for bounds around the distance; the row exact where at most the bound, never below.
    rng = np.random.default_rng(edits)
    for length in (1, 63, 64, 65, 200, 333):
        query = random_codes(rng, length, n_fraction=0.05)
        target = mutate(rng, query, min(edits, length))
        if not target:  # the callers handle empty targets themselves
            continue
        expected = last_row(query, target)
        distance = int(expected[-1])
        table = edit_cpu.match_table(np.array(query, dtype=np.uint8), 5, 4)
        codes = np.array(target, dtype=np.uint8)
        for bound in sorted({distance - 1, distance, distance + 1, distance + 70, 2 * distance}):
            if bound < abs(len(query) - len(target)):
                continue
            found = edit_cpu._global_distance(table, length, codes, bound)
            assert found == min(distance, bound + 1), (length, bound)
            row = np.empty(len(target) + 1, dtype=np.int64)
            edit_cpu._banded_sweep(table, length, codes, bound, False, row)
            assert (row >= expected).all()
            assert (row[expected <= bound] == expected[expected <= bound]).all()


def test_pairs_over_the_traceback_budget_go_linear(backend, monkeypatch):
    # 200 rows (4 words of 64) against a range of 300: 301 * 4 * 16 bytes of stored vectors,
    # over a limit of 10 KiB; the pair before it fits. Its CIGAR comes in linear space.
    monkeypatch.setattr(config, "PATH_MAX_BYTES_PER_PAIR", 10 * 1024)
    rng = np.random.default_rng(5)
    queries = [random_codes(rng, 20), random_codes(rng, 200)]
    targets = [random_codes(rng, 20), random_codes(rng, 300)]
    r = gpualign.edit_distance(to_inputs(queries), to_inputs(targets), task="path",
                               backend=backend)
    check(queries, targets, r, mode="global", task="path")


def test_linear_and_full_tracebacks_agree_in_cost(monkeypatch):
    # The same pairs through both tracebacks: CIGARs may differ, their costs may not.
    queries, targets = similar_pairs(6)
    full = gpualign.edit_distance(to_inputs(queries), to_inputs(targets), task="path",
                                  backend="cpu")
    monkeypatch.setattr(config, "LONG_EDIT_MIN_CELLS", 1)
    linear = gpualign.edit_distance(to_inputs(queries), to_inputs(targets), task="path",
                                    backend="cpu")
    assert linear.distance.tolist() == full.distance.tolist()
    for q, t, a, b in zip(queries, targets, full.cigar, linear.cigar, strict=True):
        assert cigar_edit_cost(q, t, a) == cigar_edit_cost(q, t, b) == global_distance(q, t)
        assert cigar_lengths(b) == (len(q), len(t))


@pytest.mark.parametrize("band_words,tile_columns", [(1, 1), (1, 7), (2, 64), (16, 1 << 14)])
def test_cpu_wavefront_gives_the_last_row(band_words, tile_columns):
    rng = np.random.default_rng(band_words * tile_columns)
    for length in (1, 63, 64, 65, 129, 200):
        query = random_codes(rng, length, n_fraction=0.1)
        target = mutate(rng, query, length // 6 + 1) + random_codes(rng, 29)
        table = edit_cpu.match_table(np.array(query, dtype=np.uint8), 5, 4)
        for top_delta, mode in ((1, "global"), (0, "infix")):
            for reverse in (False, True):
                row = np.empty(len(target) + 1, dtype=np.int64)
                edit_cpu._wavefront_row(table, length, np.array(target, dtype=np.uint8),
                                        reverse, top_delta, band_words, tile_columns, row)
                expected = last_row(query, target[::-1] if reverse else target, mode)
                assert row.tolist() == expected.tolist(), (length, top_delta, reverse)


# --- the recursion's host logic, against a naive split ----------------------------------------


def _naive_driver(queries, targets, leaf_cells):
    """CIGARs from :func:`hirschberg` with splits and leaves computed by the naive oracle."""
    q_len = np.array([len(q) for q in queries], dtype=np.int64)
    t_len = np.array([len(t) for t in targets], dtype=np.int64)
    base = np.concatenate(([0], np.cumsum(q_len + t_len)))
    buffer = np.full(int(base[-1]), NO_OP, dtype=np.uint8)

    def split_columns(pair, qa, mid, qb, ta, tb, distance):
        cuts, tops, bottoms = [], [], []
        for p, a, c, b, left, right, cost in zip(
                *(x.tolist() for x in (pair, qa, mid, qb, ta, tb, distance)), strict=True):
            q, t = queries[p], targets[p]
            top = [global_distance(q[a:c], t[left:j]) for j in range(left, right + 1)]
            bottom = [global_distance(q[c:b], t[j:right]) for j in range(left, right + 1)]
            at = int(np.argmin(np.add(top, bottom)))
            assert top[at] + bottom[at] == cost  # the subproblem's distance came down right
            cuts.append(left + at)
            tops.append(top[at])
            bottoms.append(bottom[at])
        return np.array(cuts), np.array(tops), np.array(bottoms)

    def trace_leaves(pair, qa, qb, ta, tb):
        for p, a, b, left, right in zip(*(x.tolist() for x in (pair, qa, qb, ta, tb)),
                                        strict=True):
            cigar = gpualign.edit_distance(
                to_inputs([queries[p][a:b]]), to_inputs([targets[p][left:right]]), task="path",
                backend="cpu").cigar[0]
            ops = [op for length, op in _runs(cigar) for _ in range(length)]
            buffer[base[p] + a + left:][:len(ops)] = ops

    distance = [global_distance(q, t) for q, t in zip(queries, targets, strict=True)]
    levels = hirschberg(q_len, t_len, np.array(distance),
                        lambda rows, columns: rows * columns <= leaf_cells, split_columns,
                        trace_leaves)
    return packed_of_buffer(buffer, base), edits_of_buffer(buffer, base), levels


def _runs(cigar):
    number = ""
    for char in cigar:
        if char.isdigit():
            number += char
        else:
            yield int(number), "=XID".index(char)
            number = ""


def test_docstring_examples_run():
    for module in (_linear, _shared):
        outcome = doctest.testmod(module)
        assert outcome.attempted > 0, module.__name__
        assert outcome.failed == 0, f"{outcome.failed} docstring example(s) of {module.__name__}"


@pytest.mark.parametrize("leaf_cells", [1, 6, 40])
def test_hirschberg_levels_cover_the_path(leaf_cells):
    rng = np.random.default_rng(7)
    queries = [random_codes(rng, n) for n in (1, 2, 3, 9, 17)]
    targets = [random_codes(rng, n) for n in (0, 5, 3, 12, 11)]
    queries[0] = [1]  # one row against nothing: a leaf at once
    cigars, edits, levels = _naive_driver(queries, targets, leaf_cells)
    assert levels >= 1
    for q, t, cigar in zip(queries, targets, cigars, strict=True):
        assert cigar_lengths(cigar) == (len(q), len(t))
        assert cigar_edit_cost(q, t, cigar) == global_distance(q, t)
    assert edits.tolist() == [global_distance(q, t) for q, t in zip(queries, targets,
                                                                    strict=True)]


def test_needs_linear_follows_both_limits(monkeypatch):
    monkeypatch.setattr(config, "LONG_EDIT_MIN_CELLS", 1 << 40)
    monkeypatch.setattr(config, "PATH_MAX_BYTES_PER_PAIR", 1000)
    # 64 rows x 62 columns: 63 * 16 = 1008 bytes of stored vectors, over 1000.
    assert needs_linear(np.array([64, 64]), np.array([61, 62])).tolist() == [False, True]
    monkeypatch.setattr(config, "PATH_MAX_BYTES_PER_PAIR", 1 << 40)
    monkeypatch.setattr(config, "LONG_EDIT_MIN_CELLS", 100)
    assert needs_linear(np.array([10, 10]), np.array([9, 10])).tolist() == [False, True]


# --- the long kernel's layout, replayed on the host --------------------------------------------


def replay_long_kernel(query, target, lanes, words_per_lane, top_delta, reverse, match_codes=4,
                       n_codes=5):
    """The last row ``D[m][0..n]`` that long.cu's ``long_edit`` computes with ``TRACK_ROW``,
    replayed band after band with its index arithmetic: the match table as
    ``long_match_table`` lays it out (word ``w * lanes + lane`` of a band, the query at the
    bottom of the last band), the padding rows' start, 32-bit words and the carries between
    bands. The wavefront's order does not change the values, so the bands run one after the
    other here."""
    m, n = len(query), len(target)
    if reverse:
        query, target = query[::-1], target[::-1]
    band_words = lanes * words_per_lane
    rows = band_words * 32
    bands = -(-m // rows)
    stride = bands * band_words
    table = [0] * (n_codes * stride)
    for word in range(stride):  # long_match_table, one thread per word
        band, w, lane = word // band_words, word % band_words // lanes, word % band_words % lanes
        first_row = band * rows + (lane * words_per_lane + w) * 32 - (bands * rows - m)
        for b in range(32):
            i = first_row + b
            if 0 <= i < m and query[i] < match_codes:
                table[query[i] * stride + word] |= 1 << b
    full = 0xFFFFFFFF
    carries = [top_delta] * n
    for band in range(bands):
        pv, mv = {}, {}
        for lane in range(lanes):
            for w in range(words_per_lane):
                first_row = band * rows + (lane * words_per_lane + w) * 32 - (bands * rows - m)
                query_rows = full if first_row >= 0 else 0 if first_row <= -32 else \
                    (full << -first_row) & full
                pv[lane, w], mv[lane, w] = (query_rows if top_delta else full), 0
        below = []
        for j in range(n):
            hin = carries[j]
            for lane in range(lanes):
                for w in range(words_per_lane):
                    match = table[target[j] * stride + band * band_words + w * lanes + lane]
                    p, v = pv[lane, w], mv[lane, w]
                    xv = match | v
                    if hin < 0:
                        match |= 1
                    xh = ((((match & p) + p) & full) ^ p) | match
                    ph = v | (~(xh | p) & full)
                    mh = p & xh
                    hout = (ph >> 31) - (mh >> 31)
                    ph = ((ph << 1) & full) | (hin > 0)
                    mh = ((mh << 1) & full) | (hin < 0)
                    pv[lane, w] = mh | (~(xv | ph) & full)
                    mv[lane, w] = ph & xv
                    hin = hout
            below.append(hin)
        carries = below
    return np.concatenate(([m], m + np.cumsum(carries, dtype=np.int64))).astype(np.int64)


@pytest.mark.parametrize("lanes,words_per_lane", [(1, 1), (1, 2), (2, 1), (2, 4), (4, 2)])
@pytest.mark.parametrize("length", [1, 31, 63, 64, 65, 127, 128, 129, 300])
def test_long_kernel_layout_gives_the_last_row(lanes, words_per_lane, length):
    rng = np.random.default_rng(length)
    query = random_codes(rng, length, n_fraction=0.1)
    target = mutate(rng, query, length // 6 + 1) + random_codes(rng, 37)
    for top_delta in (0, 1):
        mode = "global" if top_delta else "infix"
        for reverse in (False, True):
            expected = last_row(query[::-1] if reverse else query,
                                target[::-1] if reverse else target, mode)
            found = replay_long_kernel(query, target, lanes, words_per_lane, top_delta, reverse)
            assert found.tolist() == expected.tolist(), (top_delta, reverse)


# --- CUDA only: the long kernel's settings, memory groups and the size check -------------------

needs_gpu = pytest.mark.skipif(not gpualign.backend.cuda_status()[0], reason="no GPU")


@needs_gpu
@pytest.mark.parametrize("lanes,words", [(1, 1), (1, 2), (2, 4), (8, 1), (32, 1), (32, 2),
                                         (32, 4)])
def test_gpu_long_kernel_settings(monkeypatch, lanes, words):
    # Bands of 32 to 4096 rows; targets end in partial blocks of 32 columns.
    monkeypatch.setattr(config, "LONG_EDIT_MIN_CELLS", 16)
    monkeypatch.setattr(config, "LONG_EDIT_THREADS", lanes)
    monkeypatch.setattr(config, "LONG_EDIT_WORDS_PER_LANE", words)
    queries, targets = similar_pairs(8, LENGTHS + (2047, 2048, 2049, 4500))
    for mode in MODES:
        for task in ("locations", "path"):
            r = gpualign.edit_distance(to_inputs(queries), to_inputs(targets), mode=mode,
                                       task=task, backend="cuda")
            check(queries, targets, r, mode=mode, task=task, peers=task == "path")


@needs_gpu
@pytest.mark.parametrize("lanes,bands", [(1, 400), (32, 150)])
def test_gpu_long_kernel_runs_hundreds_of_bands(monkeypatch, lanes, bands):
    # A band knows its carries are ready by the band number they bear, which must not repeat
    # within a problem (a tag that wrapped at 128 bands let the last bands of the ramp read
    # what band 0 had written long before).
    monkeypatch.setattr(config, "LONG_EDIT_MIN_CELLS", 16)
    monkeypatch.setattr(config, "LONG_EDIT_THREADS", lanes)
    monkeypatch.setattr(config, "LONG_EDIT_WORDS_PER_LANE", 1)
    queries, targets = similar_pairs(10, (lanes * 32 * bands - 5,))
    for mode in MODES:
        got = gpualign.edit_distance(to_inputs(queries), to_inputs(targets), mode=mode,
                                     backend="cuda")
        want = gpualign.edit_distance(to_inputs(queries), to_inputs(targets), mode=mode,
                                      backend="cpu")
        assert got.distance.tolist() == want.distance.tolist()


@needs_gpu
def test_gpu_long_pairs_in_small_memory_groups(long_settings, small_batches):
    # A budget of 4 KiB: each long pair is a group of its own, leaves run in small groups.
    queries, targets = similar_pairs(9, (65, 129, 200))
    for mode in MODES:
        r = gpualign.edit_distance(to_inputs(queries), to_inputs(targets), mode=mode,
                                   task="path", backend="cuda")
        check(queries, targets, r, mode=mode, task="path")


@needs_gpu
def test_gpu_long_pair_that_cannot_fit_is_refused_before_any_work(long_settings, monkeypatch):
    # A sliver of the device (a few hundred bytes): GPU_BATCH_BYTES only sizes batches.
    monkeypatch.setattr(config, "GPU_MEMORY_FRACTION", 4e-9)
    rng = np.random.default_rng(10)
    queries = to_inputs([random_codes(rng, 3), random_codes(rng, 300)])
    targets = to_inputs([random_codes(rng, 3), random_codes(rng, 300)])
    with pytest.raises(MemoryError, match=r"pair #1 .* \(query 300 x target 300\)"):
        gpualign.edit_distance(queries, targets, task="path", backend="cuda")
