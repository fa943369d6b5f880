"""User settings: tunables with documented defaults, read at call time.

Change one by assignment (``gpualign.config.CPU_BATCH_PAIRS = 1 << 14``), for a block of code
with :func:`override`, and go back to the defaults with :func:`reset`. Tests shrink the batch
sizes (``monkeypatch.setattr(gpualign.config, ...)``) to drive the multi-batch and multi-bin
code paths with tiny inputs. Constants that must match a kernel live beside that kernel, not
here; the measurements behind the defaults are in ``benchmarks/results/tuning.md``.

Examples
--------
>>> from gpualign import config
>>> with override(CPU_BATCH_PAIRS=7):
...     config.CPU_BATCH_PAIRS
7
>>> config.CPU_BATCH_PAIRS == 1 << 16
True
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

#: Environment variable consulted when ``backend="auto"``: ``cpu`` or ``cuda``.
BACKEND_ENV_VAR = "GPUALIGN_BACKEND"

#: Kernel bins for edit distance, by query length in 32-bit words (32 query rows each):
#: ``(max_words, lanes_per_pair, words_per_lane)``. ``lanes_per_pair == 1`` is the task-parallel
#: kernel (one pair per thread); larger values spread a query's words over that many lanes of a
#: warp (the thread-cooperative kernel). A query is padded to its bin's ``lanes * words`` words,
#: so one-lane bins hold one length in words each. Queries longer than the last bin run in
#: passes over row slices (``EDIT_SLICE_KERNEL``), passing the horizontal deltas of slice
#: borders through memory.
EDIT_KERNEL_BINS: tuple[tuple[int, int, int], ...] = (
    (1, 1, 1),
    (2, 1, 2),
    (3, 1, 3),
    (4, 1, 4),
    (5, 1, 5),
    (6, 1, 6),
    (7, 1, 7),
    (8, 1, 8),
    (16, 4, 4),
    (32, 4, 8),
    (64, 8, 8),
    (128, 16, 8),
    (192, 32, 6),
    (256, 32, 8),
    (320, 32, 10),
    (384, 32, 12),
    (512, 32, 16),
)

#: ``(lanes_per_pair, words_per_lane)`` of the cooperative kernel that runs queries longer than
#: the last bin, in passes over slices of ``lanes * words * 32`` query rows.
EDIT_SLICE_KERNEL: tuple[int, int] = (32, 16)

#: Shared-memory share (percent of the most an SM can have) preferred for the DNA kernels of
#: 2 to 16 lanes per pair; the rest of an SM's unified L1/shared memory stays L1 cache, which
#: holds the targets their lanes read a byte at a time (the driver's own choice, all shared
#: memory, is slower: tuning.md).
EDIT_COOPERATIVE_SHARED_CARVEOUT = 43

#: CUDA streams on which the kernel bins of a chunk of edit-distance pairs run side by side.
EDIT_GPU_STREAMS = 4

#: Pairs per chunk of the CUDA edit-distance backend (bounds its index and result arrays).
EDIT_GPU_CHUNK_PAIRS = 1 << 22

#: Fraction of the free GPU memory one batch may use.
GPU_MEMORY_FRACTION = 0.6

#: Upper bound on the bytes of one GPU batch (None: only the free-memory fraction applies).
GPU_BATCH_BYTES: int | None = None

#: Pairs handled per CPU batch (bounds the temporary buffers of the CPU backend).
CPU_BATCH_PAIRS = 1 << 16

#: Largest traceback matrix (bytes of stored bit-vectors, as the GPU stores them; the CPU's
#: holds twice as many) for one pair with ``task="path"``; larger pairs get their CIGAR in
#: linear space (see ``LONG_EDIT_MIN_CELLS``).
PATH_MAX_BYTES_PER_PAIR = 2 << 30

#: Edit-distance pairs of at least this many cells (query x target symbols) are long. On the GPU
#: their distances run over the whole device (``edit/kernels/long.cu``: the query cut into bands
#: of rows that sweep the target one behind the other) instead of on one warp, on the CPU one
#: pair at a time on all cores instead of one pair a core; with
#: ``task="path"`` both backends trace their CIGARs in linear space (Hirschberg over Myers,
#: ``edit/_linear.py``) and trace subproblems below this size in full. Pairs whose full
#: traceback would exceed ``PATH_MAX_BYTES_PER_PAIR`` go the linear way too.
LONG_EDIT_MIN_CELLS = 1 << 28

#: Lanes of one warp that share a band of the query in the long edit-distance kernel (1, 2, 4,
#: 8, 16 or 32; ``LONG_EDIT_WORDS_PER_LANE`` words of 32 query
#: rows a lane): fewer lanes make more, shorter bands, so a query spreads
#: over more warps, at the cost of more carries through memory.
LONG_EDIT_THREADS = 32

#: 32-row words of the query that each lane of the long edit-distance kernel holds (1, 2 or 4):
#: a band is ``LONG_EDIT_THREADS * LONG_EDIT_WORDS_PER_LANE * 32`` rows. One word a lane makes
#: the most bands, so a long query keeps the most warps busy (each step of a band waits on the
#: lane above it, so a warp alone leaves the GPU idle between steps); more words a lane do more
#: work a step, for queries whose bands outnumber what the GPU runs at once.
LONG_EDIT_WORDS_PER_LANE = 1

#: Pairs per row block of :func:`gpualign.edit_distance_matrix` (bounds its temporary memory).
MATRIX_BLOCK_PAIRS = 1 << 22

#: Subject symbols per batch of the CUDA LCS backend, and batches in flight per GPU (slots,
#: each with its own stream and page-locked buffers: while the GPU computes one, the next is
#: being staged and copied). Batches staged through those buffers (subjects in pageable
#: memory, or read from a file) are large, so that staging gets long copies. Batches of a set
#: already in page-locked memory (:meth:`SequenceSet.pin_memory`) need no staging: they are
#: cut by GPU work, ``LCS_GPU_PINNED_BATCH_CELLS`` cells (query symbols x subject symbols,
#: about a millisecond on an H100; at most ``LCS_GPU_BATCH_RESIDUES`` symbols), with more in
#: flight, so that the GPU fills sooner at the start and drains sooner at the end (one
#: subject per thread, each thread busy for milliseconds). The first batches are smaller
#: (``LCS_GPU_FIRST_BATCH_RESIDUES``,
#: doubling) so that copies and kernels start overlapping early.
LCS_GPU_BATCH_RESIDUES = 1 << 28
LCS_GPU_SLOTS = 3
LCS_GPU_PINNED_BATCH_CELLS = 1 << 37
LCS_GPU_PINNED_SLOTS = 12
LCS_GPU_FIRST_BATCH_RESIDUES = 1 << 24

#: How the CPU backend computes alignment scores (``task="score"``): "parasail" (its striped
#: SIMD kernels on every core, when installed; identical scores) or "numba" (the scalar DP
#: that also serves "end" and "path").
ALIGN_CPU_SCORES = "parasail"

#: Alignment paths (``task="path"``) whose traceback would take more than this many bytes
#: (one per DP cell, ``(m + 1) * (n + 1)``) are found in linear space instead (Myers-Miller,
#: ``align/_linear.py``): ``O(m + n)`` memory plus the leaves below, same scores and ends.
ALIGN_LINEAR_MIN_CELLS = 1 << 26

#: Largest subproblem (DP cells) that the linear-space alignment solves with a full traceback
#: (its leaves; a traceback byte per cell, one leaf per thread at a time). The leaves' scalar
#: DP is far slower a cell than the score passes' SIMD tiles, so small leaves are faster: a
#: level more of passes costs less than the cells it takes off the leaves.
ALIGN_LINEAR_LEAF_CELLS = 1 << 16

#: Rows that each score pass of the CPU backend's linear-space alignment keeps for the splits
#: below it (the CUDA engine keeps none): half its rows from its start, a quarter, ... (this
#: many), where its descendants that share its start corner will split. Each descendant then
#: computes only one of its halves; a row costs up to 48 bytes a column (0: none kept, every
#: split computes both halves).
ALIGN_LINEAR_KEPT_ROWS = 3

#: Score passes of the CPU backend (long pairs' scores and ends, the linear-space alignment's
#: levels) run subproblems of at least this many cells on every core, in tiles along
#: anti-diagonals, where one core alone would still be computing one after the others had
#: shared out the rest (``align/_cpu_linear.py``); the others run side by side, one per core.
ALIGN_CPU_WAVEFRONT_MIN_CELLS = 1 << 24

#: Query rows per strip of the CUDA alignment kernels (even): a thread keeps a strip's cells in
#: ``ALIGN_STRIP_ROWS / 2`` registers of two lanes and passes the strip's last row to the next
#: strip through memory, so longer strips mean less memory traffic but more registers.
ALIGN_STRIP_ROWS = 64

#: Pairs per chunk of the CUDA alignment backend (bounds its index and result arrays). A chunk
#: runs as one launch per width when its borders fit the memory budget; each launch ends in a
#: tail where its longest pairs finish, so chunks are large.
ALIGN_GPU_CHUNK_PAIRS = 1 << 22

#: Pairs of at least this many DP cells (query x target length) get their CUDA scores from the
#: warp-per-pair kernel rather than one thread each (global, semi-global and local scores; not
#: overlap, not local end cells): a thread would compute such a pair alone, long after the rest.
ALIGN_WARP_MIN_CELLS = 1 << 22

#: ... and at least this many times the mean cells of the call's pairs: the warp kernel is
#: slower per cell than the thread kernels on whole batches, so only a tail far above the mean
#: is worth moving (16S pairs, whose longest are about twice the mean, stay on the thread
#: kernels).
ALIGN_WARP_MIN_RATIO = 16.0

#: The operations of fewer paths than this are counted (by NumPy) and written as CIGARs a path
#: at a time on the calling thread, instead of by the compiled loops over all cores, whose
#: threads take longer to start than a long path takes (an H100 host: one path of 33,000
#: operations counted in 8-10 us against 44-56 us; the MT pair's path of 17,140 written in
#: 46-47 us against 71-74 us).
HOST_SERIAL_PATHS = 8

#: Pairs of at least this many DP cells (query x target length) run on the CUDA long-alignment
#: engine (``align/kernels/long.cu``): a wavefront of tiles over every SM for one pair, instead
#: of a thread or a warp per pair (every mode; scores and end cells).
LONG_ALIGN_MIN_CELLS = 1 << 26

#: Threads of one tile of the long-alignment engine (a multiple of 32, at most 1024): a tile
#: has ``LONG_ALIGN_THREADS * LONG_ALIGN_ROWS_PER_THREAD`` query rows, its threads run as a
#: wavefront over its columns (a barrier per column when the tile has several warps). Smaller
#: tiles give one long pair more tiles side by side; larger ones pay the wavefront's fill and
#: drain less often.
LONG_ALIGN_THREADS = 32

#: Query rows each thread of a long-alignment tile keeps in registers (H and E of each).
LONG_ALIGN_ROWS_PER_THREAD = 8

#: Query rows a thread of a band may keep when the "auto" schedule runs a batch in bands,
#: fewest first: the batch takes the first at which it has at most 4 bands an SM, else
#: ``LONG_ALIGN_ROWS_PER_THREAD``. Shorter bands put more warps side by side where the bands
#: of the longer rows leave warp schedulers idle. Kernel time on an H100 (ncu): the 100 kb
#: pair's two halves 11.6 ms in bands of 6 rows a thread against 13.2 ms with 8; the MT pair's
#: 1.87 ms with 4 against 2.20 ms with 8.
LONG_ALIGN_BAND_ROWS_PER_THREAD: tuple[int, ...] = (4, 6)

#: Target columns of a long-alignment tile in the "tickets" and "launches" schedules (the
#: tiles of a batch run along their anti-diagonals: a pair of m x n symbols has at most
#: min(m / tile rows, n / columns) tiles side by side; a tile's wavefront fills and drains
#: over its columns, so wide tiles waste less where the batch has tiles enough).
LONG_ALIGN_TILE_COLUMNS = 512

#: How the tiles of a long-alignment batch are scheduled: "tickets" (one launch; each block
#: takes the next tile in anti-diagonal order and waits until the tiles above and to the left
#: are done), "launches" (one launch per anti-diagonal of tiles) or "bands" (one launch; each
#: block takes the next tile row and sweeps all its columns, each once the row above has
#: handed it over: no per-tile scheduling and no border column; a batch with a problem of more
#: than 32,767 bands runs in tickets), or "auto": bands for a batch of at most 4 bands an SM,
#: else tickets (the bands' rows a thread: ``LONG_ALIGN_BAND_ROWS_PER_THREAD``).
LONG_ALIGN_SCHEDULE = "auto"

#: Largest subproblem (DP cells) that a CUDA linear-space alignment (the paths of pairs of at
#: least ``LONG_ALIGN_MIN_CELLS`` cells) solves with a full traceback: a warp per leaf, a
#: traceback byte per cell; smaller leaves mean more levels of tiled score passes, each with
#: its fixed cost. On an H100, alternating in one process (medians of 11): the MT pair's CIGAR
#: 13.18 ms with 2^18 against 14.68 with 2^16, the 100 kb pair's 36.02 against 37.26 ms.
LONG_ALIGN_LEAF_CELLS = 1 << 18

#: Largest subproblem (DP cells) of a CUDA linear-space alignment traced whole over the GPU:
#: subproblems above ``LONG_ALIGN_LEAF_CELLS`` and up to this many cells are not split further
#: but run as bands of ``LONG_ALIGN_THREADS`` threads that keep a traceback nibble a cell (half
#: a byte a cell on the device, a band's rows padded to whole bands), then walked back by a
#: warp each. 0 (or anything up to ``LONG_ALIGN_LEAF_CELLS``): every subproblem above the
#: leaves is split. On an H100 (one process alternating, medians of 9): the MT pair's CIGAR
#: 5.0-6.2 ms against 8.4-9.8 ms split, the 100 kb pair's 23.3-26.0 against 25.0-27.5 ms.
LONG_ALIGN_TRACE_CELLS = 1 << 29

#: Calls whose pairs have more traced bands than this an SM (their query rows over
#: ``LONG_ALIGN_THREADS`` times each of ``LONG_ALIGN_TRACE_ROWS_PER_THREAD``) split every
#: subproblem above ``LONG_ALIGN_LEAF_CELLS`` instead: a wavefront of that many bands an SM no
#: longer waits on each warp's latency, and tracing gained nothing (H100, the same processes:
#: 2,000 PacBio reads, 220,000 bands, 0.94-0.96 s against 0.94-0.96 s split, with 47 GiB of
#: GPU memory against 12; the E. coli genomes, 36,000 bands, 18.35 s against 18.37 s, 40 GiB
#: against 2).
LONG_ALIGN_TRACE_BANDS_PER_SM = 8

#: Query rows each thread of those traced bands may keep (each 1, 2, 4 or 8; a band has
#: ``LONG_ALIGN_THREADS`` times as many rows), fewest first: a call takes the first at which
#: its pairs have at most ``LONG_ALIGN_TRACE_BANDS_PER_SM`` traced bands an SM. Fewer rows make
#: shorter steps and more bands side by side; past the limit, more rows keep a call traced
#: (H100, CUDA events: the MT pair's traced bands, in halves, 1.71-1.73 ms with 2 rows, 2.34
#: with 4, 2.17 with 1; whole, 2.32-2.34, 2.66-2.68 and 3.28 ms; the 100 kb pair's leaves have
#: too many bands at 2 and take 4).
LONG_ALIGN_TRACE_ROWS_PER_THREAD: tuple[int, ...] = (2, 4)

#: Most device bytes a group of those traced subproblems takes at once (their traceback
#: nibbles, borders and paths; also bounded by the batch budget, ``GPU_MEMORY_FRACTION`` and
#: ``GPU_BATCH_BYTES``); a subproblem that would take more alone goes to a warp instead, as
#: the small leaves do (``_cuda_long.traced_leaf_sizes``). The MT and 100 kb CIGARs take one
#: group either way.
LONG_ALIGN_TRACE_BYTES = 1 << 30

#: Query rows each lane of the CUDA path kernel (``task="path"``) may keep (2, 4 or multiples
#: of 8) where warps fill a pair: in bands of 32 lanes x rows, a warp a band, all bands at once
#: (each a few columns behind the one above). Fewer rows make shorter steps and more bands (a
#: tall pair's fill is faster), more rows less work a cell (a large batch's is). The warp
#: kernel's scores of long pairs (``ALIGN_WARP_MIN_CELLS``) take their bands in turn, in the
#: fewest bands and then the lowest of these heights that covers the query.
ALIGN_TRACE_LANE_ROWS: tuple[int, ...] = (2, 4, 8, 16, 24, 32)

#: Lane counts the CUDA path fill may give a pair: 32 (warps, its bands pipelined) and blocks
#: of 128, 256 or 512 threads (one band at a time). A step takes longer the more rows each lane
#: keeps (the measured times of ``gpualign.align._cuda._FILL_STEP_NS``). While the call's
#: warps fit ``ALIGN_TRACE_WARPS_PER_SM`` a multiprocessor, each pair takes the layout of least
#: work whose fill is at most a quarter longer than its fastest (several warps only where they
#: take at most 0.6 of the time of its fastest single warp or block: they share the
#: multiprocessors with the other pairs'); a call too large for that takes the least work that
#: finishes by the least time at which its work fits. So the few long hits of a database
#: search get about their fastest layouts, and a batch of thousands of similar pairs its most
#: efficient ones.
ALIGN_TRACE_LANES: tuple[int, ...] = (32, 128, 256, 512)

#: Warps of path fills that a multiprocessor runs at full speed: a fill's warp issues an
#: instruction about every third cycle (each cell waits for the one above), and a
#: multiprocessor issues four a cycle.
ALIGN_TRACE_WARPS_PER_SM = 12

#: Query rows each lane of a block may keep (2, 4 or multiples of 8): a block's pair takes the
#: fewest bands, then the lowest of these heights that covers its query (a step of fewer rows
#: is shorter, so a short query against a long subject runs in lanes of 2 rows: its steps are
#: the subject's length either way). Blocks of 256 and 512 lanes keep at most 16 and 8 (their
#: threads' share of the registers).
ALIGN_TRACE_BLOCK_LANE_ROWS: tuple[int, ...] = (2, 4, 8, 16, 24, 32)

#: CUDA streams the path launches (warps or a block per pair) of a batch share: a launch's
#: time is its longest pair's, its warps' or block's work, so the launches of different lane
#: counts and heights run side by side rather than one after the other, the longest first, each
#: on the stream with the least queued. At most 8: CUDA maps streams onto 8 hardware queues
#: (``CUDA_DEVICE_MAX_CONNECTIONS``), and two streams on one queue wait for each other.
ALIGN_TRACE_STREAMS = 8

#: Page-locked host memory (bytes) a thread keeps for a CUDA path batch's results: a batch
#: whose results and CIGAR space fit has them copied there with its work, the CIGARs written
#: by the GPU directly (one wait, no second copy: what a search's hits need); a larger batch
#: copies them back from the device once it is done. Twice this is kept a thread (two batches
#: may be queued), for the life of the process.
ALIGN_PATH_STAGING_BYTES = 16 << 20

#: Threads that share a pair of database subjects in the CUDA search kernel (powers of two up
#: to 32) and query rows each of them keeps in registers (even): a query runs with the
#: shape of the fewest passes of threads x rows, then the fewest padded rows, then the most
#: rows a thread (UniProt's median protein, 394 residues: 16 threads x 26 rows).
SEARCH_GROUPS: tuple[int, ...] = (4, 8, 16, 32)
SEARCH_LANE_ROWS: tuple[int, ...] = tuple(range(6, 33, 2))

#: Databases of at least this many sequences are searched with the shapes of
#: ``SEARCH_LARGE_GROUPS`` and ``SEARCH_LARGE_LANE_ROWS`` instead: their launches fill the GPU
#: many times over even with fewer threads a pair, and a thread that keeps more rows hands
#: fewer on to the next (H100, 20 UniProt queries: 290 M residues in 640,000 sequences 8%
#: faster; 9 M in 20,000 4% slower, so small databases keep the shapes above).
SEARCH_LARGE_SUBJECTS = 1 << 17
SEARCH_LARGE_GROUPS: tuple[int, ...] = (4, 8, 16)
SEARCH_LARGE_LANE_ROWS: tuple[int, ...] = tuple(range(6, 49, 2))

#: Database sequences longer than this (residues) are scored against the queries by the
#: alignment kernels (long pairs over the whole GPU) instead of one group of the search kernel
#: each: a bacterial genome in a DNA database, not a protein.
SEARCH_LONG_SUBJECT = 1 << 16

#: CUDA streams the search kernel's launches of different lane shapes share, so that one
#: launch's last blocks overlap the next launch's first.
SEARCH_STREAMS = 4

#: Sequences per side of a tile of :func:`gpualign.allpairs` (a tile is the unit of work and
#: of checkpointing: up to ALLPAIRS_TILE**2 pairs).
ALLPAIRS_TILE = 1024

#: Tiles a Dask worker of :func:`gpualign.allpairs` holds per thread: the one it runs and the
#: next, so that it never waits for the scheduler between tiles.
ALLPAIRS_TILES_IN_FLIGHT = 2

#: The largest k of the k-mer table of a MEM index (4**k rows of two int64: k=10 takes 16 MiB);
#: an index takes the largest k up to this whose table has no more rows than the reference has
#: bases, at least 4 (k=6 for a 9 kbp genome, 10 from 1 Mbp on). Searches for MEMs shorter than
#: k go through the whole suffix array instead.
MEM_KMER_SIZE = 10

#: Reference positions per page of a MEM index. Each page has its own suffix array (int32,
#: so pages stay below 2**31 symbols) and k-mer table, built and searched one after the other;
#: the text itself is shared, so a MEM may run on past its page's end.
MEM_PAGE_BASES = 1 << 30

#: Symbols beyond its end that a page's suffixes are sorted by (at least the longest
#: ``min_length`` that an index of several pages can be searched with).
MEM_PAGE_OVERLAP = 1 << 12

#: Read symbols per batch of :func:`gpualign.find_mems` (reads from a file are streamed).
MEM_QUERY_BATCH_RESIDUES = 1 << 24

#: Batches of reads that ``find_mems`` reads ahead of the search at most: enough that reading
#: does not wait while the index is built (and host memory stays bounded).
MEM_READ_AHEAD = 8

#: Reference minimizers found in more places than this are skipped when the candidate windows
#: of reads are looked up (:meth:`gpualign.map.index.MapIndex.candidates`), as minimap2's
#: ``-f`` and bwa mem's ``-c`` skip repetitive seeds: they would give a read hundreds of
#: windows that a unique seed of the same read has to outvote. Read at lookup time, so an
#: index need not be rebuilt to change it.
MAP_MAX_OCCURRENCES = 200

#: Reference bases whose minimizers :meth:`gpualign.map.index.MapIndex.build` computes at a
#: time, pieces side by side on every core (contigs are cut, the pieces overlap by a window):
#: bounds the temporary arrays, about 70 bytes a base of a piece; pieces whose arrays stay in
#: the CPU's caches run faster than large ones.
MAP_INDEX_BATCH_BASES = 1 << 20

#: Target symbols per batch of :func:`gpualign.align_one_to_many` (targets streamed from a file
#: or an iterator are read this many at a time).
ALIGN_CPU_BATCH_RESIDUES = 1 << 24

#: Database residues per task of the CPU search backend (:func:`gpualign.search`): each task
#: scores every query against that many residues of consecutive (length-sorted) subjects, its
#: pairs on every core, then keeps its best hits.
SEARCH_CPU_TASK_RESIDUES = 1 << 16

#: Lane width in bits (8, 16 or 32) of the CPU search's first pass through parasail: every pair
#: is scored in it, and a pair whose score saturates it is rescored in the next wider lanes
#: (8, then 16, then 32), so the scores are exact whatever the setting. 8-bit lanes hold twice
#: the cells of 16-bit ones and suit protein searches, whose scores mostly stay below 8 bits'
#: range; 16 saves the first pass where most scores pass it (long, similar DNA subjects).
SEARCH_CPU_FIRST_BITS = 8

#: Database residues per task of :func:`gpualign.search` on a Dask cluster (``client=``): each
#: task is a partition of consecutive (length-sorted) subjects, searched by a worker's backend
#: (a subject longer than this is a partition of its own). Large enough that a GPU worker's
#: launches stay full and that the per-task overhead (sending the partition, the query's
#: best hits back) is small; small enough that the workers share the database evenly.
SEARCH_PARTITION_RESIDUES = 1 << 26

#: Subject symbols per batch of the CPU LCS backend.
LCS_CPU_BATCH_RESIDUES = 1 << 24

#: Query words (32 rows each) that one LCS thread keeps in registers per pass over a subject;
#: the kernel is specialized for each. A query runs in the tiles that cost least
#: (``LCS_TILE_PASS_COST``).
LCS_TILE_WORDS: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)

#: Cost of one extra pass over a subject, in query words: reading the subject symbol, its row
#: of the match table and the carries costs about as much as three words of the update.
LCS_TILE_PASS_COST = 3

#: Read the LCS match table 16 bytes at a time (fewer load instructions, but the rows of many
#: symbols collide in shared-memory banks) instead of one word at a time (no bank conflicts for
#: up to 32 symbols).
LCS_WIDE_LOADS = False

#: Shared memory one LCS block may use for its slice of the query's match table; longer
#: queries (or larger alphabets) run as several launches over groups of tiles.
LCS_SHARED_BYTES = 48 * 1024

#: Host threads that copy a batch into page-locked memory (None: one per core): one thread
#: copies slower than the LCS kernel consumes subjects.
LCS_STAGING_THREADS: int | None = None


#: Reads (or pairs) per batch of :func:`gpualign.map_reads`: each batch's candidates are
#: verified in one edit-distance call, so this bounds the candidate windows held at once
#: (about ``max_candidates`` windows of 1.2 read lengths a read).
MAP_BATCH_READS = 1 << 16

#: The edit-distance cutoff of a read in :func:`gpualign.map_reads` when ``k`` is not given:
#: this fraction of its length, rounded up (a placement with more edits is not reported).
MAP_MAX_EDIT_FRACTION = 0.1

#: Paired-end insert sizes (outer distance of the two reads) accepted when too few pairs of a
#: run's first batch map confidently to estimate them: ``(lowest, highest)``.
MAP_DEFAULT_INSERT = (0, 1000)

#: Confidently mapped pairs (MAPQ >= 30 each, one contig, facing each other) that the first
#: batch needs for its insert sizes to be estimated instead of ``MAP_DEFAULT_INSERT``.
MAP_INSERT_MIN_PAIRS = 20

#: Edits a proper pair may cost beyond the two reads' best placements taken alone and still be
#: preferred to them (bwa-mem's unpaired penalty, in edits).
MAP_UNPAIRED_PENALTY = 3

#: Read bases that each segment of a split (chimeric) read must cover, beyond the other
#: segment, for :func:`gpualign.map_reads` to report it (a supplementary record): minimap2
#: ``-ax sr`` splits about half of the reads whose second segment is 35 bases long, fewer
#: below, nearly all from 45 on. A read without an end-to-end placement is placed by its
#: best segment of at least this many bases.
MAP_MIN_SEGMENT = 35

#: Where the CIGAR of a read's primary record in :func:`gpualign.map_reads` comes from:
#: ``"affine"``, the read realigned end to end in its placement's window (widened by the read's
#: edit cutoff each side) with minimap2 ``-x sr``'s affine scores, its ends clipped with
#: minimap2's end bonus (:mod:`gpualign.map.segments`), and the local alignments of split and
#: otherwise unplaced reads scored the same way (a gap counted once against their cutoff of
#: edits); or ``"edit"``, the edit-distance path that placed the read, its ends clipped with
#: the mapper's linear score, and local alignments with that score. The end-to-end placement,
#: its MAPQ and XS are the same either way; AS stays in the mapper's units (aligned bases less
#: 5 an edit). The default is the one that agrees with minimap2 more often
#: (``benchmarks/results/map-real-*.md``).
MAP_PRIMARY_CIGAR = "affine"

#: Records of one file with the same name (the header up to its first white space), where a
#: reading function is not told (``duplicates=None``): "keep" them as they are, stop with a
#: :class:`~gpualign.io.DuplicateNameError` ("error"), or "rename" the later ones ``NAME.2``,
#: ``NAME.3`` ... (a :class:`~gpualign.io.DuplicateNameWarning` says so). The command line
#: uses "error", or "rename" with ``--rename-duplicates``. Checking keeps every name of a
#: file in memory while it is read, streamed or not.
DUPLICATE_NAMES = "keep"

#: The settings as shipped, for :func:`reset`.
_DEFAULTS: dict[str, Any] = {name: value for name, value in globals().items()
                             if name.isupper() and not name.startswith("_")}


def defaults() -> dict[str, Any]:
    """Every setting's documented default (a copy), by name.

    Examples
    --------
    >>> defaults()["GPU_MEMORY_FRACTION"]
    0.6
    """
    return dict(_DEFAULTS)


def reset() -> None:
    """Put every setting back to its default."""
    globals().update(_DEFAULTS)


@contextlib.contextmanager
def override(**settings: Any) -> Iterator[None]:
    """Change settings for the ``with`` block, then restore the values they had before.

    Raises AttributeError for a name that is not a setting."""
    unknown = sorted(set(settings) - set(_DEFAULTS))
    if unknown:
        raise AttributeError(f"gpualign.config has no setting {', '.join(unknown)}")
    saved = {name: globals()[name] for name in settings}
    globals().update(settings)
    try:
        yield
    finally:
        globals().update(saved)
