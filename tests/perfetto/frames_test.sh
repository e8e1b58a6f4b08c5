#!/bin/bash
# SPDX-License-Identifier: MIT
# frames_test.sh CASE VERSION — the frames tracks of
# VK_LAYER_GPUTRACE_timeline as Perfetto's trace_processor_shell VERSION (47
# or 58; tp_lib.sh says where each one is) imports them, checked with SQL
# (docs/layer.md, "Frames"):
#   workload   gputrace-workload --frame-boundary --frames 20
#   window     the same with GPUTRACE_FRAMES=5..9
# What each trace must show, in both versions: one "Frames" slice per
# frame at depth 0 on a track of the workload's process, numbered from the
# first frame on, each starting where the one before ended (present to
# present), with gpu_time_ns >= gpu_busy_ns; a "GPU frame time" value per
# frame and a "frame interval" value per frame after the first, each its
# frame's duration (ms); every render stage of the workload with its
# frame's number, the frames' GPU time the span of their command buffers;
# no error or data_loss stat. v58 also keeps the counters' unit ("ms").
# window: the host's fence waits only inside the window's frames.
#
# Environment: GT_WORKLOAD, GT_EXPLICIT_DIR (meson.build), PERFETTO_BIN
# (v47) or PERFETTO_V58_BIN (v58; scripts/lib.sh sets both from
# ../shared/perfetto); without the version's: SKIP (exit 77) saying why.
set -eu

test_case=${1:?usage: frames_test.sh workload|window 47|58}
tp_version=${2:?usage: frames_test.sh workload|window 47|58}
# What lavapipe_env.sh's fail and skip name: the case and the version.
case_name=$test_case-v$tp_version
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gputrace-frames-sql.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log=$tmp/gputrace.log
trace=$tmp/trace.pftrace

. "$here/../layer/lavapipe_env.sh"
. "$here/tp_lib.sh"

case $tp_version in
47 | 58) ;;
*) echo "frames_test.sh: unknown version '$tp_version'" >&2; exit 2 ;;
esac
why=$(tp_missing "$tp_version")
[ -z "$why" ] || skip "$why"
version=v$tp_version

checks=0

# sql QUERY: the rows (no header, no quotes, fields joined by ',').
sql() {
    printf '%s\n' "$1" > "$tmp/q.sql"
    tp_query "$tp_version" "$tmp/q.sql" "$trace" 2> "$tmp/q.err" ||
        fail "$version: trace_processor failed on: $1: $(tail -n 3 "$tmp/q.err")"
}

expect() { # WHAT VALUE QUERY
    local got
    got=$(sql "$3") || exit 1
    checks=$((checks + 1))
    [ "$got" = "$2" ] || fail "$version: $1: expected '$2', trace_processor answers '$got' to: $3"
    echo "ok ($version): $1: $(printf '%s' "$got" | tr '\n' ' ')"
}

summary_field() { # FIELD: from the workload's summary line
    sed -n "s/.* $1=\([0-9]*\).*/\1/p" "$tmp/out" | head -n 1
}

export VK_ADD_LAYER_PATH="$GT_EXPLICIT_DIR" VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline
export GPUTRACE_OUTPUT=$trace GPUTRACE_LOG=info GPUTRACE_LOG_FILE=$log
first=1 last=20
case $test_case in
workload) ;;
window) export GPUTRACE_FRAMES=5..9 first=5 last=9 ;;
*) fail "unknown case $test_case" ;;
esac
timeout -k 5 300 "$GT_WORKLOAD" --frame-boundary --frames 20 > "$tmp/out" 2> "$tmp/err" ||
    fail "gputrace-workload failed (exit $?)"
pid=$(sed -n 's/.*layer active (pid \([0-9]*\),.*/\1/p' "$log" | head -n 1)
[ -n "$pid" ] || fail "the layer's log names no pid"
frames=$(summary_field frames)
regions=$(summary_field regions)
[ "$frames" = 20 ] || fail "the workload ran $frames frames, not 20"
n=$((last - first + 1))
stages_in_window=$((regions / frames * n))

# The frames of the workload's process, and its render stages.
fr="(select s.ts, s.dur, s.depth, s.arg_set_id,
            extract_arg(s.arg_set_id, 'debug.frame_number') as n,
            extract_arg(s.arg_set_id, 'debug.gpu_time_ns') as g,
            extract_arg(s.arg_set_id, 'debug.gpu_busy_ns') as b
     from slice s join process_track pt on s.track_id = pt.id join process p using (upid)
     where p.pid = $pid and pt.name = 'Frames')"
st="(select s.*, cast(extract_arg(s.arg_set_id, 'frame_number') as int) as fn
     from gpu_slice s join gpu_track t on s.track_id = t.id join process p on s.upid = p.upid
     where t.scope = 'gpu_render_stage' and p.pid = $pid)"
ctr() { # NAME: the counter track NAME of the process
    echo "(select c.ts, c.value from counter c join process_counter_track t on c.track_id = t.id
           join process p using (upid) where p.pid = $pid and t.name = '$1')"
}

echo "trace_processor $version: $(tp_version_line "$tp_version")"
expect "no error or data_loss stat" "" \
    "select name || '=' || value from stats where value > 0 and severity in ('error', 'data_loss')"
expect "frames, numbered $first..$last" "$n,$first,$last,$n" \
    "select count(*), min(n), max(n), count(distinct n) from $fr"
expect "frames at depth 0" 0 "select count(*) from $fr where depth != 0"
expect "each frame starts where the one before ended" 0 \
    "select count(*) from $fr a join $fr b on b.n = a.n + 1 where b.ts != a.ts + a.dur"
expect "GPU time and busy time on every frame, busy <= time" "$n,0" \
    "select count(g), sum(b > g) from $fr"
expect "a GPU frame time per frame, its own (ms)" "$n,0" \
    "select count(*), sum(abs(c.value * 1e6 - f.g) > 1) from $(ctr 'GPU frame time') c
     join $fr f on c.ts = f.ts"
intervals=$n
[ "$first" = 1 ] && intervals=$((n - 1))
expect "a frame interval per frame after the first, its duration (ms)" "$intervals,0" \
    "select count(*), sum(abs(c.value * 1e6 - f.dur) > 1) from $(ctr 'frame interval') c
     join $fr f on c.ts = f.ts"
expect "render stages: the window's frames' regions, each with its frame number" \
    "$stages_in_window,0,$first,$last" \
    "select count(*), sum(fn is null), min(fn), max(fn) from $st"
# Device time spans are converted to BOOTTIME: drift and rounding
# stay far below 1 us over a frame.
expect "GPU time = first command buffer start to last end" 0 \
    "select count(*) from (select f.n, f.g, max(s.ts + s.dur) - min(s.ts) as span
       from $fr f join $st s on s.fn = f.n where s.name = 'Command buffer' group by f.n)
     where abs(span - g) > 1000"
if [ "$test_case" = window ]; then
    # Host waits too only inside the window (docs/layer.md, "Frames"): the
    # workload waits for each frame's fences after its end, so the waits
    # made in frames 5..9 are those for frames 4..8.
    expect "fence waits: one per frame of the window, none outside it" "$n,0" \
        "select count(*) as waits,
                sum(s.ts < (select min(ts) from $fr)
                    or s.ts + s.dur > (select max(ts + dur) from $fr)) as outside
         from slice s where s.name = 'vkWaitForFences'"
fi
if [ "$version" = v58 ]; then
    expect "counter unit (v58)" "GPU frame time=ms
frame interval=ms" \
        "select t.name || '=' || t.unit from counter_track t
         where t.name in ('GPU frame time', 'frame interval') order by t.name"
fi
echo "PASS ($case_name): $checks checks"
