#!/bin/sh
# SPDX-License-Identifier: MIT
# bench_layer.sh — VK_LAYER_GPUTRACE_timeline's cost, on lavapipe.
#
#   BENCH layer_wall_ratio_tracing  wall time of gputrace-workload under the
#                                   layer with the in-process backend,
#                                   divided by its wall time without the layer
#   BENCH layer_wall_ratio_idle     the same with the layer loaded but no
#                                   session (GPUTRACE_BACKEND=system, no traced)
#   BENCH layer_wall_ratio_tracing_work8   the same ratio with
#                                   --work 8 (eight times the GPU work in
#                                   every dispatch and draw, same regions)
#   BENCH layer_wall_added_us_per_frame     (tracing - plain) / frames, at
#                                   --work 1 and at --work 8
#   BENCH layer_timed_fraction_8_threads   GPU events in the trace / regions
#                                   recorded, gputrace-workload --threads 8
#                                   --queues 4 for 5 s (more submitting
#                                   threads than cores: does the collector
#                                   keep up?), and the data loss counted
#   BENCH layer_cpu_ns_per_region   the application thread's CPU time in the
#                                   layer per timed region (bench_layer_hooks:
#                                   the layer over a do-nothing driver, minus
#                                   the same calls made directly)
#   BENCH layer_cpu_ns_per_region_idle         same, no session
#   BENCH layer_cpu_ns_per_region_collector    collector thread CPU per region
#   BENCH layer_cpu_ns_per_memory_event  the application thread's CPU time in
#                                   the layer per memory call (allocate,
#                                   create, bind, map, unmap, destroy, free:
#                                   bench_layer_hooks --memory) while a
#                                   session wants memory events
#                                   (GPUTRACE_MEMORY=1); _collector: the
#                                   collector's per event
#   BENCH layer_cpu_ns_per_memory_event_off    the same, the embedded
#                                   backend's session not wanting memory
#                                   events (the calls are not hooked: ~0)
#   BENCH layer_cpu_ns_per_memory_event_idle   the same, no session (the
#                                   system backend: the hooks' own
#                                   bookkeeping, for a later session)
#   BENCH layer_frames_present      the application thread's CPU time per
#                                   vkQueuePresentKHR in a frame of one
#                                   command buffer (bench_layer_hooks
#                                   --presents); _present_alone: presents
#                                   alone (each frame ready at its present);
#                                   _wait: per vkWaitForFences (one fence,
#                                   signalled); layer_frames: per region in
#                                   that run. With GT_BENCH_OLD_LAYER_LIB
#                                   (another build of the layer), the same
#                                   for it, interleaved, as layer_frames_old...
#   BENCH layer_frames_idle[_present, _present_alone, _wait]   the same with
#                                   no session, and interleaved with it in
#                                   the same run
#   BENCH layer_frames_idle_closed[...]   a session outside its frames
#                                   window (GPUTRACE_FRAMES=1000000..: the
#                                   run never gets there): it should cost
#                                   what no session costs (issue #27)
#
# The five wall-time variants run interleaved (rotating order), GT_BENCH_REPS
# times each (default 11), GT_BENCH_FRAMES frames per run (default 3000; a
# quarter of that at --work 8); the ratios are of the medians. Environment (from meson): GT_LAYER_LIB,
# GT_BENCH_HOOKS, GT_WORKLOAD, GT_EXPLICIT_DIR.
set -eu

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gputrace-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
reps=${GT_BENCH_REPS:-11}
frames=${GT_BENCH_FRAMES:-3000}
frames8=$(( (frames + 3) / 4 ))

lvp=
for f in /usr/share/vulkan/icd.d/lvp_icd.*.json /usr/local/share/vulkan/icd.d/lvp_icd.*.json; do
    [ -f "$f" ] && lvp=$f && break
done
[ -n "$lvp" ] || { echo "SKIP: lavapipe not found"; exit 77; }
export VK_DRIVER_FILES="$lvp" VK_ICD_FILENAMES="$lvp"
export XDG_DATA_HOME="$tmp/data" XDG_CONFIG_HOME="$tmp/config"
export PERFETTO_PRODUCER_SOCK_NAME="$tmp/no-traced.sock" # idle: no service to find
unset VK_INSTANCE_LAYERS VK_LAYER_PATH VK_ADD_LAYER_PATH GPUTRACE_ENABLE GPUTRACE_DISABLE \
      GPUTRACE_LOG GPUTRACE_LOG_FILE GPUTRACE_OUTPUT GPUTRACE_BACKEND GPUTRACE_MEMORY

# ---- CPU per region (no driver) ----
GPUTRACE_OUTPUT="$tmp/hooks.pftrace" "$GT_BENCH_HOOKS" "$GT_LAYER_LIB" \
    --label layer_cpu_ns_per_region
GPUTRACE_BACKEND=system "$GT_BENCH_HOOKS" "$GT_LAYER_LIB" --label layer_cpu_ns_per_region_idle |
    grep -v _collector
GPUTRACE_OUTPUT="$tmp/hooks.pftrace" GPUTRACE_MEMORY=1 "$GT_BENCH_HOOKS" "$GT_LAYER_LIB" --memory \
    --iterations 70000 --label layer_cpu_ns_per_memory_event
GPUTRACE_OUTPUT="$tmp/hooks.pftrace" "$GT_BENCH_HOOKS" "$GT_LAYER_LIB" --memory \
    --iterations 70000 --label layer_cpu_ns_per_memory_event_off | grep -v _collector
GPUTRACE_BACKEND=system "$GT_BENCH_HOOKS" "$GT_LAYER_LIB" --memory \
    --iterations 70000 --label layer_cpu_ns_per_memory_event_idle | grep -v _collector

# ---- CPU per present (no driver), an older build beside it if given ----
GPUTRACE_OUTPUT="$tmp/frames.pftrace" "$GT_BENCH_HOOKS" "$GT_LAYER_LIB" --presents \
    --label layer_frames ${GT_BENCH_OLD_LAYER_LIB:+--compare "$GT_BENCH_OLD_LAYER_LIB"} |
    grep -v _collector
GPUTRACE_BACKEND=system "$GT_BENCH_HOOKS" "$GT_LAYER_LIB" --presents --iterations 70000 \
    --label layer_frames_idle \
    --env "closed:GPUTRACE_BACKEND=,GPUTRACE_OUTPUT=$tmp/closed.pftrace,GPUTRACE_FRAMES=1000000.."

# ---- wall time (lavapipe) ----
now_ns() { date +%s%N; }

run_variant() { # run_variant NAME -> appends ns to $tmp/NAME
    case $1 in
    plain) env -u VK_INSTANCE_LAYERS "$GT_WORKLOAD" --frames "$frames" > /dev/null 2>&1 & ;;
    plain8) env -u VK_INSTANCE_LAYERS "$GT_WORKLOAD" --frames "$frames8" --work 8 \
                > /dev/null 2>&1 & ;;
    tracing8) VK_LAYER_PATH="$GT_EXPLICIT_DIR" VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline \
                 GPUTRACE_OUTPUT="$tmp/wall.pftrace" \
                 "$GT_WORKLOAD" --frames "$frames8" --work 8 > /dev/null 2>&1 & ;;
    tracing) VK_LAYER_PATH="$GT_EXPLICIT_DIR" VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline \
                 GPUTRACE_OUTPUT="$tmp/wall.pftrace" \
                 "$GT_WORKLOAD" --frames "$frames" > /dev/null 2>&1 & ;;
    idle) VK_LAYER_PATH="$GT_EXPLICIT_DIR" VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline \
              GPUTRACE_BACKEND=system \
              "$GT_WORKLOAD" --frames "$frames" > /dev/null 2>&1 & ;;
    esac
    t0=$(now_ns)
    wait $! || { echo "bench_layer.sh: $1 run failed" >&2; exit 1; }
    t1=$(now_ns)
    echo $((t1 - t0)) >> "$tmp/$1"
}

median() {
    sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

# Warm-up (page cache, shader caches).
for v in plain tracing idle plain8 tracing8; do run_variant $v; done
rm -f "$tmp/plain" "$tmp/tracing" "$tmp/idle" "$tmp/plain8" "$tmp/tracing8"
i=0
while [ $i -lt "$reps" ]; do
    case $((i % 5)) in
    0) order="plain tracing idle plain8 tracing8" ;;
    1) order="tracing idle plain8 tracing8 plain" ;;
    2) order="idle plain8 tracing8 plain tracing" ;;
    3) order="plain8 tracing8 plain tracing idle" ;;
    *) order="tracing8 plain tracing idle plain8" ;;
    esac
    for v in $order; do run_variant "$v"; done
    i=$((i + 1))
done
plain=$(median "$tmp/plain")
tracing=$(median "$tmp/tracing")
idle=$(median "$tmp/idle")
plain8=$(median "$tmp/plain8")
tracing8=$(median "$tmp/tracing8")
awk -v p="$plain" -v t="$tracing" -v i="$idle" -v n="$reps" -v f="$frames" \
    -v p8="$plain8" -v t8="$tracing8" -v f8="$frames8" 'BEGIN {
    printf "BENCH layer_wall_ratio_tracing %.4f x\n", t / p
    printf "BENCH layer_wall_ratio_idle %.4f x\n", i / p
    printf "BENCH layer_wall_ratio_tracing_work8 %.4f x\n", t8 / p8
    printf "BENCH layer_wall_added_us_per_frame %.1f us\n", (t - p) / f / 1e3
    printf "BENCH layer_wall_added_us_per_frame_work8 %.1f us\n", (t8 - p8) / f8 / 1e3
    printf "bench_layer.sh: --work 8, %d frames: plain %.1f ms, tracing %.1f ms\n", f8, p8 / 1e6, t8 / 1e6
    printf "bench_layer.sh: medians of %d runs of %d frames: plain %.1f ms, tracing %.1f ms, idle %.1f ms\n", n, f, p / 1e6, t / 1e6, i / 1e6
}'

# ---- heavy load: does the collector keep up? ----
VK_LAYER_PATH="$GT_EXPLICIT_DIR" VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline \
    GPUTRACE_OUTPUT="$tmp/heavy.pftrace" \
    "$GT_WORKLOAD" --threads 8 --queues 4 --duration-ms 5000 > "$tmp/heavy.out" 2>&1 ||
    { echo "bench_layer.sh: heavy run failed" >&2; exit 1; }
regions=$(sed -n 's/.* regions=\([0-9]*\).*/\1/p' "$tmp/heavy.out")
"$GT_GPUTRACE_CHECK" --no-progress --json "$tmp/heavy.pftrace" > "$tmp/heavy.json" 2>&1 || true
events=$(grep -o '"gpu_render_stage_events": [0-9]*' "$tmp/heavy.json" | head -n 1 | sed 's/.*: //')
awk -v e="${events:-0}" -v r="${regions:-0}" 'BEGIN {
    printf "BENCH layer_timed_fraction_8_threads %.4f x\n", r ? e / r : 0
    printf "bench_layer.sh: --threads 8 --queues 4, 5 s: %d of %d regions timed\n", e, r
}'
