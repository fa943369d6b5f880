#!/usr/bin/env bash
# Prove the GPU code on the offline GPU host (DESIGN.md section 5): install the packed wheels,
# print the GPU and versions, run the CUDA tests, then the whole test suite, then the
# edit-distance, LCS and alignment benchmarks; logs and the results files land in $OUT.
#
# On the development machine, once per change (the GPU host has no internet and no .git):
#   ../shared/tools/device-wheels dnaio edlib rapidfuzz   # fills .whl/ (git-ignored)
#   bash scripts/fetch-data.sh                            # fills data/ (git-ignored)
# then on the GPU host, from the repository root, carrying .whl and data:
#   GPUALIGN_COMMIT=<git rev-parse --short HEAD>[-dirty] bash scripts/gpu-check.sh [BENCH ARGS]
# BENCH ARGS go to benchmarks/bench_edit.py, e.g. --scale 0.1 or --only global-1k;
# LCS_BENCH_ARGS / ALIGN_BENCH_ARGS / ALLPAIRS_BENCH_ARGS / MEMS_BENCH_ARGS (one string each)
# to benchmarks/bench_lcs.py, bench_align.py, bench_allpairs.py and bench_mems.py, e.g.
# "--only paper" (the MEM tests and bench_mems.py find mummer on PATH, where .whl is put:
# `cp /usr/bin/mummer .whl/` on the development machine).
#
# Environment:
#   OUT               folder for logs and the results file (default /tmp/gpu-check)
#   GPUALIGN_COMMIT   commit recorded in the results (the host has no .git)
#   SKIP_TESTS=1      no pytest at all;  SKIP_FULL_TESTS=1  only the `-m cuda` tests
#   TESTS             test files of the `-m cuda` run (default tests/)
#   SKIP_BENCH=1      no benchmark;      ALLOW_MISSING_DATA=1  benchmark even without data/
#   SKIP_EDIT_BENCH=1, SKIP_LCS_BENCH=1, SKIP_ALIGN_BENCH=1, SKIP_ALLPAIRS_BENCH=1,
#   SKIP_MEMS_BENCH=1  leave out
#                     one of the benchmarks
#   PYTHON            interpreter (default python3, the host's Python with CuPy)
#   WHEELS            folder of wheels to install (default .whl)
# Exit status: 0 when every step passed, else the first failing step's status.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
root=$PWD
py=${PYTHON:-python3}
out=${OUT:-/tmp/gpu-check}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
status=0
summary=()

note() { printf '\n=== %s\n' "$*"; }

# record NAME RC: remember a step's outcome; the first failure sets the exit status.
record() {
    summary+=("$(printf '%-12s %s' "$1" "$2")")
    if [[ $2 != ok* && $2 != skipped* && $status -eq 0 ]]; then status=${3:-1}; fi
}

# 1. Wheels the host lacks (dnaio, edlib, rapidfuzz, ...), packed by ../shared/tools/device-wheels.
site=/tmp/site
wheels=${WHEELS:-.whl}
if compgen -G "$wheels/*.whl" >/dev/null; then
    note "installing $(ls "$wheels"/*.whl | wc -l) wheels from $wheels into $site"
    "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$site" "$wheels"/*.whl || { echo "wheel install failed" >&2; exit 1; }
else
    echo "no $wheels/*.whl: pack them with ../shared/tools/device-wheels dnaio edlib" \
         "rapidfuzz and carry .whl (dnaio is required; edlib/rapidfuzz only as peers)" >&2
fi
export PYTHONPATH=$site:$root/src${PYTHONPATH:+:$PYTHONPATH}
# Programs the host lacks travel in the same folder: a copy of the development machine's
# /usr/bin/mummer (it needs only libc) lets the MEM tests and benchmark compare with MUMmer.
[[ -d $wheels ]] && export PATH=$(cd "$wheels" && pwd):$PATH

# 2. The machine and the versions.
{
    note "nvidia-smi"
    nvidia-smi || echo "nvidia-smi failed"
    nvidia-smi --format=csv \
        --query-gpu=name,driver_version,memory.total,memory.used,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
        || true
    note "versions"
    "$py" - <<'EOF'
import importlib, platform, sys
print("python", platform.python_version(), sys.executable)
for name in ("gpualign", "numpy", "numba", "cupy", "dnaio", "edlib", "rapidfuzz", "tqdm",
             "pytest", "hypothesis", "stringzillas"):
    try:
        module = importlib.import_module(name)
        print(f"{name:<12} {getattr(module, '__version__', '?'):<12} {module.__file__}")
    except Exception as exc:
        print(f"{name:<12} MISSING ({type(exc).__name__}: {exc})")
try:
    from gpualign.backend import cuda_status
    print("gpualign cuda_status:", cuda_status())
    import cupy
    props = cupy.cuda.runtime.getDeviceProperties(0)
    print("GPU 0:", props["name"].decode(), f"{props['totalGlobalMem'] / 2**30:.1f} GiB,",
          props["multiProcessorCount"], "SMs, CUDA runtime",
          cupy.cuda.runtime.runtimeGetVersion(), "driver", cupy.cuda.runtime.driverGetVersion())
except Exception as exc:
    print("GPU probe failed:", type(exc).__name__, exc)
EOF
    note "data (benchmarks/bench_edit.py --check-data)"
    "$py" benchmarks/bench_edit.py --check-data
    echo "data-check-status=$?"
    echo "commit: ${GPUALIGN_COMMIT:-unset (set GPUALIGN_COMMIT when calling this script)}"
} 2>&1 | tee "$out/env.txt"
data_ok=1
grep -q '^data-check-status=0$' "$out/env.txt" || data_ok=0

# 3. Tests: the CUDA ones first (quick verdict on the GPU code), then everything.
if [[ ${SKIP_TESTS:-0} == 1 ]]; then
    record tests-cuda "skipped (SKIP_TESTS=1)"
else
    note "pytest -m cuda"
    # shellcheck disable=SC2086  # TESTS is a list of paths
    "$py" -m pytest -q -m cuda -p no:cacheprovider ${TESTS:-tests/} 2>&1 \
        | tee "$out/tests-cuda.log"
    rc=$?
    if [[ $rc -eq 0 ]]; then record tests-cuda ok
    elif [[ $rc -eq 5 ]]; then record tests-cuda "FAILED: no test is marked cuda" 5
    else record tests-cuda "FAILED (pytest exit $rc)" "$rc"; fi
    if [[ ${SKIP_FULL_TESTS:-0} == 1 ]]; then
        record tests-all "skipped (SKIP_FULL_TESTS=1)"
    else
        note "pytest (all tests)"
        "$py" -m pytest -q -p no:cacheprovider tests/ 2>&1 | tee "$out/tests.log"
        rc=$?
        if [[ $rc -eq 0 ]]; then record tests-all ok
        else record tests-all "FAILED (pytest exit $rc)" "$rc"; fi
    fi
fi

# 4. Benchmarks: each prints its table and writes benchmarks/results/<kind>-<device>-<date>.md.
# bench NAME ARGS...: run benchmarks/bench_NAME.py and record the outcome.
bench() {
    local name=$1
    shift
    local stamp
    stamp=$(mktemp)
    note "python benchmarks/bench_$name.py --require-cuda $*"
    "$py" "benchmarks/bench_$name.py" --require-cuda "$@" 2>&1 | tee "$out/bench-$name.log"
    local rc=${PIPESTATUS[0]} copied="" f
    for f in benchmarks/results/"$name"-*.md; do
        if [[ -f $f && $f -nt $stamp ]]; then cp "$f" "$out/" && copied+=" $(basename "$f")"; fi
    done
    rm -f "$stamp"
    if [[ $rc -eq 0 ]]; then record "bench-$name" "ok${copied:+ (results:$copied)}"
    elif [[ $rc -eq 3 ]]; then record "bench-$name" "FAILED: no usable GPU (see $out/env.txt)" 3
    else record "bench-$name" "FAILED (exit $rc; a FAIL in the check column or an error)" "$rc"; fi
}
if [[ ${SKIP_BENCH:-0} == 1 ]]; then
    record benchmark "skipped (SKIP_BENCH=1)"
elif [[ $data_ok -eq 0 && ${ALLOW_MISSING_DATA:-0} != 1 ]]; then
    echo "data/ is incomplete (see $out/env.txt): run \`bash scripts/fetch-data.sh\` on the" \
         "development machine and carry data to this host (or set ALLOW_MISSING_DATA=1 to" \
         "benchmark on the fallbacks, which the table then names)" >&2
    record benchmark "FAILED: data/ missing (bash scripts/fetch-data.sh)" 2
else
    [[ ${SKIP_EDIT_BENCH:-0} == 1 ]] || bench edit "$@"
    # shellcheck disable=SC2086  # LCS_BENCH_ARGS and ALIGN_BENCH_ARGS are lists of words
    [[ ${SKIP_LCS_BENCH:-0} == 1 ]] || bench lcs ${LCS_BENCH_ARGS:-}
    # shellcheck disable=SC2086
    [[ ${SKIP_ALIGN_BENCH:-0} == 1 ]] || bench align ${ALIGN_BENCH_ARGS:-}
    # shellcheck disable=SC2086
    [[ ${SKIP_ALLPAIRS_BENCH:-0} == 1 ]] || bench allpairs ${ALLPAIRS_BENCH_ARGS:-}
    # shellcheck disable=SC2086
    [[ ${SKIP_MEMS_BENCH:-0} == 1 ]] || bench mems ${MEMS_BENCH_ARGS:-}
fi

note "summary (logs in $out)"
printf '%s\n' "${summary[@]}"
exit "$status"
