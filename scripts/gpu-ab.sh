#!/usr/bin/env bash
# A/B of the GPU benchmark rows: the current tree against an older one, on one machine, in one
# run, alternating (base, new, base, new, ...) so that drifting clocks touch both alike.
#
# On the development machine (the GPU host has no .git):
#   mkdir -p .ab/base && git archive BASE_COMMIT src benchmarks | tar -x -C .ab/base
#   echo /.ab/ >> .git/info/exclude
# then on the GPU host, from the repository root, carrying .ab, .whl and data:
#   bash scripts/gpu-ab.sh [BENCH ...]        (default: edit lcs align allpairs mems)
#
# Environment:
#   OUT      folder for the logs (default /tmp/gpu-ab)
#   BASE     the older tree (default .ab/base)
#   ROUNDS   alternations per benchmark (default 2)
#   PYTHON   interpreter (default python3);  WHEELS  wheels to install first (default .whl)
#   EXTRA_<NAME>  extra arguments of one benchmark, e.g. EXTRA_EDIT="--repeats 15"
# Each run prints its table (GPU rows only: --engines cuda); the new tree's tables are also saved
# as results files under $OUT/results-<round>/ (the base tree's are not saved). The logs are
# $OUT/<bench>-<base|new>-<round>.log and a last summary lists every gpualign-cuda row.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
root=$PWD
py=${PYTHON:-python3}
out=${OUT:-/tmp/gpu-ab}
base=$(cd "${BASE:-.ab/base}" && pwd) || { echo "no base tree: see the header" >&2; exit 2; }
rounds=${ROUNDS:-2}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
site=/tmp/site
wheels=${WHEELS:-.whl}
if compgen -G "$wheels/*.whl" >/dev/null; then
    "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$site" "$wheels"/*.whl || { echo "wheel install failed" >&2; exit 1; }
    export PATH=$(cd "$wheels" && pwd):$PATH
fi
# An older tree may read some data from its own data/ whatever --data-dir says: link ours there.
[[ -e $base/data ]] || ln -s "$root/data" "$base/data"
benches=("$@")
[[ ${#benches[@]} -gt 0 ]] || benches=(edit lcs align allpairs mems)
status=0
for name in "${benches[@]}"; do
    extra_var=EXTRA_${name^^}
    for round in $(seq 1 "$rounds"); do
        for side in base new; do
            tree=$root
            save=(--results-dir "$out/results-$round" --commit "${GPUALIGN_COMMIT:-unknown}")
            [[ $side == base ]] && tree=$base && save=(--no-save)
            log=$out/$name-$side-$round.log
            printf '\n=== %s %s round %s (%s)\n' "$name" "$side" "$round" "$tree"
            # shellcheck disable=SC2086  # the extra arguments are a list of words
            (cd "$tree" && PYTHONPATH=$site:$tree/src "$py" "benchmarks/bench_$name.py" \
                --require-cuda --engines cuda "${save[@]}" --data-dir "$root/data" \
                ${!extra_var:-}) >"$log" 2>&1
            rc=$?
            grep -E '^\| [a-z0-9-]+ \| gpualign-cuda' "$log" || tail -5 "$log"
            [[ $rc -eq 0 ]] || { echo "$name $side round $round: exit $rc"; status=$rc; }
        done
    done
done
printf '\n=== summary: seconds of every gpualign-cuda row (base | new, per round)\n'
for name in "${benches[@]}"; do
    for side in base new; do
        for log in "$out/$name-$side"-*.log; do
            [[ -f $log ]] || continue
            awk -F'|' -v tag="$(basename "$log" .log)" \
                '$3 ~ /gpualign-cuda/ {gsub(/ /, "", $2); gsub(/^ +| +$/, "", $3);
                 gsub(/ /, "", $6); printf "%-32s %-24s %-36s %s\n", tag, $2, $3, $6}' "$log"
        done
    done
done
exit "$status"
