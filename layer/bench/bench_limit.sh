#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench_limit.sh — VK_LAYER_GPUTRACE_timeline's cost against the limit: the
# cost of its timestamps alone on this driver (issue #18).
#
# The variants of gputrace-workload, on lavapipe:
#   plain    no timestamps
#   control  --app-timestamps: the program writes the timestamps the layer
#            would write (same places, same lavapipe barriers, host query
#            reset) and never reads them back
#   copy     under the layer, tracing to a file, GPUTRACE_QUERY_READBACK=copy
#            (what auto picks on lavapipe)
#   driver   the same with GPUTRACE_QUERY_READBACK=driver
#   coarse   copy with GPUTRACE_LOW_OVERHEAD=1: command buffers and render
#            passes only (the granularity of GpuRenderStagesConfig.low_overhead)
#   bulk     GPUTRACE_QUERY_READBACK=bulk: no copy in one-time-submit command
#            buffers (all of the workload's); the collector reads them in bulk
# each on two workloads:
#   workload     the default frame (3 submissions, 22 regions, 19 timestamps)
#   submissions  --submissions-per-frame GT_LIMIT_TINY (default 100): tiny
#                command buffers (2 regions, 2 timestamps each) dominate
#
#   BENCH layer_overhead_over_limit_workload      (copy - plain) / (control - plain)
#   BENCH layer_overhead_over_limit_submissions   the same, submission-heavy
#   BENCH ..._driver, ..._bulk                    the same with driver / bulk readback
#   BENCH layer_limit_added_us_per_submission_*   (X - plain) / submissions
#   BENCH layer_low_overhead_over_limit_*         (coarse - plain) / (control - plain):
#                                                 the coarse layer against the
#                                                 full set's limit
# of the medians of wall time (and, printed beside, the median of each
# round's own ratio, which load drifting between rounds moves less); the CPU time (user + system, all threads)
# ratios are printed beside. The variants run interleaved, in a rotating
# order, GT_BENCH_REPS rounds (default 7). Frames per run: GT_LIMIT_FRAMES
# (default 4000) and GT_LIMIT_TINY_FRAMES (default 400), ~2-5 s each here.
# Environment (from meson): GT_WORKLOAD, GT_EXPLICIT_DIR.
set -euo pipefail

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gputrace-limit.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
reps=${GT_BENCH_REPS:-7}
frames=${GT_LIMIT_FRAMES:-4000}
tiny=${GT_LIMIT_TINY:-100}
tiny_frames=${GT_LIMIT_TINY_FRAMES:-400}

lvp=
for f in /usr/share/vulkan/icd.d/lvp_icd.*.json /usr/local/share/vulkan/icd.d/lvp_icd.*.json; do
    [ -f "$f" ] && lvp=$f && break
done
[ -n "$lvp" ] || { echo "SKIP: lavapipe not found"; exit 77; }
export VK_DRIVER_FILES="$lvp" VK_ICD_FILENAMES="$lvp"
export XDG_DATA_HOME="$tmp/data" XDG_CONFIG_HOME="$tmp/config"
unset VK_INSTANCE_LAYERS VK_LAYER_PATH VK_ADD_LAYER_PATH GPUTRACE_ENABLE GPUTRACE_DISABLE \
      GPUTRACE_LOG GPUTRACE_LOG_FILE GPUTRACE_OUTPUT GPUTRACE_BACKEND GPUTRACE_QUERY_READBACK \
      GPUTRACE_LOW_OVERHEAD

# run CASE VARIANT ROUND: one run; appends "ROUND wall cpu" (seconds) to $tmp/CASE.VARIANT
# and keeps the summary line in $tmp/CASE.VARIANT.out.
run() {
    local args=(--frames "$frames") layer=() t
    [ "$1" = submissions ] && args=(--frames "$tiny_frames" --submissions-per-frame "$tiny")
    case $2 in
    control) args+=(--app-timestamps) ;;
    copy | driver | bulk)
        layer=(VK_LAYER_PATH="$GT_EXPLICIT_DIR" VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline
               GPUTRACE_OUTPUT="$tmp/trace.pftrace" GPUTRACE_QUERY_READBACK="$2") ;;
    coarse)
        layer=(VK_LAYER_PATH="$GT_EXPLICIT_DIR" VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline
               GPUTRACE_OUTPUT="$tmp/trace.pftrace" GPUTRACE_QUERY_READBACK=copy
               GPUTRACE_LOW_OVERHEAD=1) ;;
    esac
    TIMEFORMAT='%R %U %S'
    t=$( { time env "${layer[@]}" "$GT_WORKLOAD" "${args[@]}" > "$tmp/$1.$2.out" 2> "$tmp/err" ; } 2>&1 ) ||
        { cat "$tmp/err" >&2; echo "bench_limit.sh: $1 $2 failed" >&2; exit 1; }
    echo "$t" | awk -v r="$3" '{ print r, $1, $2 + $3 }' >> "$tmp/$1.$2"
}

median() { # median FILE COLUMN
    awk -v c="$2" '{ print $c }' "$1" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

# round_ratio CASE LAYER: the median over rounds of (layer - plain) /
# (control - plain), each round's four runs having run back to back (robust
# to the load drifting between rounds).
round_ratio() {
    paste "$tmp/$1.plain" "$tmp/$1.control" "$tmp/$1.$2" |
        awk '{ print ($8 - $2) / ($5 - $2) }' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

variants=(plain control copy driver coarse bulk)
nvar=${#variants[@]}
echo "bench_limit.sh: $(uptime)"
for c in workload submissions; do # warm-up (page cache, shader caches)
    for v in "${variants[@]}"; do run "$c" "$v" 0; done
    rm -f "$tmp/$c".{plain,control,copy,driver,coarse,bulk}
done
for ((i = 0; i < reps; i++)); do
    for c in workload submissions; do
        for ((k = 0; k < nvar; k++)); do run "$c" "${variants[(i + k) % nvar]}" "$i"; done
    done
done
echo "bench_limit.sh: $(uptime)"

for c in workload submissions; do
    subs=$(sed -n 's/.* submissions=\([0-9]*\).*/\1/p' "$tmp/$c.plain.out")
    stamps=$(sed -n 's/.* timestamps=\([0-9]*\).*/\1/p' "$tmp/$c.control.out")
    awk -v c="$c" -v n="$reps" -v subs="$subs" -v stamps="$stamps" \
        -v pw="$(median "$tmp/$c.plain" 2)" -v pc="$(median "$tmp/$c.plain" 3)" \
        -v cw="$(median "$tmp/$c.control" 2)" -v cc="$(median "$tmp/$c.control" 3)" \
        -v yw="$(median "$tmp/$c.copy" 2)" -v yc="$(median "$tmp/$c.copy" 3)" \
        -v dw="$(median "$tmp/$c.driver" 2)" -v dc="$(median "$tmp/$c.driver" 3)" \
        -v lw="$(median "$tmp/$c.coarse" 2)" -v lc="$(median "$tmp/$c.coarse" 3)" \
        -v bw="$(median "$tmp/$c.bulk" 2)" -v bc="$(median "$tmp/$c.bulk" 3)" \
        -v ry="$(round_ratio "$c" copy)" -v rd="$(round_ratio "$c" driver)" \
        -v rb="$(round_ratio "$c" bulk)" 'BEGIN {
        printf "BENCH layer_overhead_over_limit_%s %.3f x\n", c, (yw - pw) / (cw - pw)
        printf "BENCH layer_overhead_over_limit_%s_driver %.3f x\n", c, (dw - pw) / (cw - pw)
        printf "BENCH layer_overhead_over_limit_%s_bulk %.3f x\n", c, (bw - pw) / (cw - pw)
        printf "BENCH layer_limit_added_us_per_submission_%s_control %.1f us\n", c, (cw - pw) / subs * 1e6
        printf "BENCH layer_limit_added_us_per_submission_%s_copy %.1f us\n", c, (yw - pw) / subs * 1e6
        printf "BENCH layer_limit_added_us_per_submission_%s_driver %.1f us\n", c, (dw - pw) / subs * 1e6
        printf "BENCH layer_limit_added_us_per_submission_%s_bulk %.1f us\n", c, (bw - pw) / subs * 1e6
        printf "BENCH layer_low_overhead_over_limit_%s %.3f x\n", c, (lw - pw) / (cw - pw)
        printf "BENCH layer_limit_added_us_per_submission_%s_coarse %.1f us\n", c, (lw - pw) / subs * 1e6
        printf "bench_limit.sh: %s, %d submissions, %d timestamps (%.2f per submission), medians of %d runs:\n", c, subs, stamps, stamps / subs, n
        printf "bench_limit.sh:   wall s: plain %.3f control %.3f copy %.3f driver %.3f coarse %.3f bulk %.3f\n", pw, cw, yw, dw, lw, bw
        printf "bench_limit.sh:   cpu s:  plain %.3f control %.3f copy %.3f driver %.3f coarse %.3f bulk %.3f\n", pc, cc, yc, dc, lc, bc
        printf "bench_limit.sh:   wall, median of the per-round ratios: copy %.3f driver %.3f bulk %.3f\n", ry, rd, rb
        printf "bench_limit.sh:   cpu (layer - plain) / (control - plain): copy %.3f driver %.3f bulk %.3f\n", (yc - pc) / (cc - pc), (dc - pc) / (cc - pc), (bc - pc) / (cc - pc)
    }'
done
