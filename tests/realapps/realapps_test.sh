#!/bin/sh
# SPDX-License-Identifier: MIT
# realapps_test.sh CASE — a real program from Debian, run twice on lavapipe
# under Khronos validation: once without VK_LAYER_GPUTRACE_timeline, once
# with it (ours above validation, so validation also sees what the layer
# records and submits). The layer must not change what the program does:
#
#   1. it exits with the same status as without the layer (a crash, a hang
#      or another status fails);
#   2. validation reports no message (error, warning, performance warning;
#      by VUID, severity and message number, counts and handles ignored)
#      that it does not report without the layer;
#   3. the trace passes gputrace-check with warnings fatal, every
#      vk_queue_submit that carries command buffers has at least one GPU
#      render stage event, and there are at least as many such submissions
#      as frames the program says it rendered;
#   4. Perfetto's trace_processor_shell, v47 and v58 (tests/perfetto/
#      tp_lib.sh), imports the trace with no error or data_loss stat and
#      one render-stage slice per GPU event. A version that is not there
#      is named in the output as not checked (the checks above do not
#      need Perfetto; scripts/run-tests has both).
#   5. Memory events (GPUTRACE_MEMORY=1, issue #28), in v58: the
#      allocations, frees, buffers and images the layer counted over each
#      device's life (its log line at vkDestroyDevice) are the trace's
#      rows, and for the programs that free everything (vkcube,
#      vkd3d-gears, ffmpeg, mpv) nothing is left: no object alive at
#      vkDestroyDevice, every counter of allocated and bound memory back
#      at 0. For vkcube also the flows: each vkQueueSubmit slice linked to
#      its command buffer's stage, fence waits to the stages they waited
#      for.
#   6. (vkcube, mpv, glxgears: zink loaded as the DRI driver presents
#      with Vulkan, kopper) the trace's frames track has the program's own
#      frame count, give or take one (vkcube --c, mpv --frames, the
#      glXSwapBuffers calls of glxgears counted by swap_count.so), and
#      --frames statistics that pass; each trace processor of 4. finds
#      those frames, each with its GPU time.
#
# Cases (Debian package):
#   vkcube          vkcube --c 300 (vulkan-tools)
#   vkd3d-gears     Direct3D 12 on Vulkan (vkd3d-demos); runs until Escape
#   glmark2         two short glmark2 scenes through zink (glmark2-x11)
#   glxgears        glxgears through zink (mesa-utils); runs until Escape
#   ffmpeg          a chain of ffmpeg's Vulkan filters on a test source
#   mpv-gpu         mpv --vo=gpu --gpu-api=vulkan on a clip ffmpeg made
#   mpv-gpu-next    mpv --vo=gpu-next (libplacebo) on the same clip
#
# Windowed programs draw into a private Xvfb; programs that run until told
# to stop get an Escape key press (xdotool), so both runs end the same
# clean way and the layer's exit path runs. A missing program skips (77)
# and says which package has it; scripts/run-tests installs them all.
#
# Environment (meson.build): GT_TEST_LIB, GT_TP_LIB, GT_EXPLICIT_DIR,
# GT_GPUTRACE_CHECK, GT_GPUTRACE_DUMP; PERFETTO_BIN, PERFETTO_V58_BIN.
set -eu

case_name=${1:?usage: realapps_test.sh CASE}
. "$GT_TEST_LIB"
. "$GT_TP_LIB"
# No gputrace setting of the caller's may decide an outcome.
for v in $(env | sed -n 's/^\(GPUTRACE_[A-Za-z0-9_]*\)=.*/\1/p'); do
    unset "$v"
done

need_exe "$GT_GPUTRACE_CHECK" gputrace-check
need_exe "$GT_GPUTRACE_DUMP" gputrace-dump
[ -f "$GT_EXPLICIT_DIR/VkLayer_gputrace_timeline.json" ] ||
    skip "layer manifest not built ($GT_EXPLICIT_DIR)"

need_cmd() { # need_cmd PROGRAM PACKAGE
    command -v "$1" > /dev/null || skip "$1 not installed (Debian: $2)"
}

need_validation() {
    for d in $(echo "${XDG_DATA_DIRS:-/usr/local/share:/usr/share}" | tr ':' ' '); do
        [ -f "$d/vulkan/explicit_layer.d/VkLayer_khronos_validation.json" ] && return 0
    done
    skip "VkLayer_khronos_validation.json not installed (Debian: vulkan-validationlayers)"
}

# ---- a private X server -------------------------------------------------------

xvfb_pid=
cleanup() {
    [ -z "$xvfb_pid" ] || kill "$xvfb_pid" 2> /dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT

# Xvfb picks a free display itself (-displayfd) and reports it once it
# accepts connections: no display-number races with other X servers.
start_xvfb() {
    need_cmd Xvfb xvfb
    Xvfb -displayfd 3 -screen 0 640x480x24 -nolisten tcp 3> "$tmp/display" \
        > "$tmp/xvfb.log" 2>&1 &
    xvfb_pid=$!
    i=0
    while [ ! -s "$tmp/display" ]; do
        kill -0 "$xvfb_pid" 2> /dev/null || fail "Xvfb did not start: $(cat "$tmp/xvfb.log")"
        i=$((i + 1))
        [ $i -lt 200 ] || fail "Xvfb did not report a display within 20 s"
        sleep 0.1
    done
    DISPLAY=:$(head -n 1 "$tmp/display")
    export DISPLAY
}

# ---- the two runs -------------------------------------------------------------

# use_layers MODE: Khronos validation with synchronization validation, all
# messages to $tmp/MODE.validation (info too: its start-up message proves
# these settings were read; info is not compared), and for MODE=ours our
# layer above it, tracing to $tmp/trace.pftrace.
use_layers() {
    mkdir -p "$tmp/settings-$1"
    cat > "$tmp/settings-$1/vk_layer_settings.txt" <<EOF
khronos_validation.debug_action = VK_DBG_LAYER_ACTION_LOG_MSG
khronos_validation.report_flags = error,warn,perf,info
khronos_validation.log_filename = $tmp/$1.validation
khronos_validation.enables = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT
EOF
    export VK_LAYER_SETTINGS_PATH="$tmp/settings-$1"
    export VK_ADD_LAYER_PATH="$GT_EXPLICIT_DIR"
    unset GPUTRACE_OUTPUT GPUTRACE_LOG GPUTRACE_LOG_FILE GPUTRACE_DISABLE GPUTRACE_MEMORY
    if [ "$1" = ours ]; then
        export VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline:VK_LAYER_KHRONOS_validation
        export GPUTRACE_OUTPUT="$tmp/trace.pftrace" GPUTRACE_LOG=info GPUTRACE_LOG_FILE="$log"
        export GPUTRACE_MEMORY=1
    else
        export VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation
        # Should an installed implicit manifest of ours exist: keep it out.
        export GPUTRACE_DISABLE=1
    fi
}

# run_app MODE SECONDS CMD...: runs CMD (output in $tmp/MODE.out and .err),
# killed after SECONDS; its exit status in $tmp/MODE.rc.
run_app() {
    mode=$1 secs=$2
    shift 2
    use_layers "$mode"
    r=0
    timeout -k 5 "$secs" "$@" > "$tmp/$mode.out" 2> "$tmp/$mode.err" || r=$?
    echo "$r" > "$tmp/$mode.rc"
}

# run_windowed MODE SECONDS WINDOW_NAME CMD...: starts CMD, waits for its
# window, lets it draw for SECONDS, then focuses the window and presses
# Escape, on which it must exit by itself (killed SECONDS + 120 s after
# its start otherwise).
run_windowed() {
    mode=$1 secs=$2 name=$3
    shift 3
    use_layers "$mode"
    timeout -k 5 $((secs + 120)) "$@" > "$tmp/$mode.out" 2> "$tmp/$mode.err" &
    pid=$!
    wid=$(timeout 60 xdotool search --sync --onlyvisible --name "$name" 2> /dev/null | head -n 1) || true
    if [ -n "$wid" ] && kill -0 "$pid" 2> /dev/null; then
        sleep "$secs"
        xdotool windowfocus --sync "$wid" 2> /dev/null || true
        xdotool key Escape 2> /dev/null || true
    fi
    r=0
    wait "$pid" || r=$?
    [ -n "$wid" ] || echo "(no window named '$name' appeared within 60 s)" >> "$tmp/$mode.err"
    echo "$r" > "$tmp/$mode.rc"
}

describe_status() { # describe_status RC
    case $1 in
    124 | 137) echo "did not finish in time (exit $1)" ;;
    *) if [ "$1" -gt 128 ]; then
           echo "crashed (exit $1, signal $(($1 - 128)): $(kill -l $(($1 - 128)) 2> /dev/null || echo '?'))"
       else
           echo "exited with $1"
       fi ;;
    esac
}

show() { # show FILE TITLE
    if [ -s "$1" ]; then
        echo "--- $2 (last 25 lines):" >&2
        tail -n 25 "$1" >&2
    fi
}

# The program must work without our layer (else this machine cannot test
# it), and exit the same way with it.
check_exit() {
    base=$(cat "$tmp/base.rc") ours=$(cat "$tmp/ours.rc")
    echo "exit status: without our layer $base, with it $ours"
    if [ "$base" != 0 ]; then
        show "$tmp/base.err" "stderr without our layer"
        fail "without our layer the program $(describe_status "$base"): the environment is broken"
    fi
    if [ "$ours" != "$base" ]; then
        show "$tmp/ours.err" "stderr with our layer"
        if [ -s "$tmp/ours.validation" ]; then
            echo "--- validation with our layer (last 10 messages):" >&2
            grep 'msgNum' "$tmp/ours.validation" | tail -n 10 | cut -c 1-300 >&2
        fi
        fail "with our layer the program $(describe_status "$ours"), without it $(describe_status "$base")"
    fi
}

# validation_ids MODE: "VUID SEVERITY/TYPE msgNum" of every message but
# info, one line per distinct message.
validation_ids() {
    f=$tmp/$1.validation
    [ -e "$f" ] || fail "validation wrote no log ($1 run): layer not loaded?"
    grep -q 'createinstance-status-message' "$f" ||
        fail "validation's start-up message is missing ($1 run): settings not read?"
    grep -q 'Current Enables:.*SYNCHRONIZATION_VALIDATION' "$f" ||
        fail "synchronization validation is not on ($1 run)"
    sed -n 's/^\([^ (]*\)(\([A-Z]*\) \/ \([A-Z]*\)): msgNum: \(-\{0,1\}[0-9]*\) .*/\1 \2\/\3 \4/p' "$f" |
        grep -v ' INFO/' | sort -u || true
}

check_validation() {
    validation_ids base > "$tmp/ids-base"
    validation_ids ours > "$tmp/ids-ours"
    echo "validation: $(wc -l < "$tmp/ids-base") distinct message(s) without our layer, $(wc -l < "$tmp/ids-ours") with it"
    comm -12 "$tmp/ids-base" "$tmp/ids-ours" | sed 's/^/  both:            /'
    comm -23 "$tmp/ids-base" "$tmp/ids-ours" | sed 's/^/  only without us: /'
    comm -13 "$tmp/ids-base" "$tmp/ids-ours" > "$tmp/ids-added"
    if [ -n "$tolerated_vuid" ] && grep -q "^$tolerated_vuid " "$tmp/ids-added"; then
        # Tolerated only if every such message is the known one.
        if ! grep "^$tolerated_vuid(" "$tmp/ours.validation" | grep -v -q -F "$tolerated_text"; then
            echo "  tolerated:       $(grep "^$tolerated_vuid " "$tmp/ids-added") ($tolerated_why)"
            grep -v "^$tolerated_vuid " "$tmp/ids-added" > "$tmp/ids-left" || true
            mv "$tmp/ids-left" "$tmp/ids-added"
        fi
    fi
    if [ -s "$tmp/ids-added" ]; then
        while read -r vuid sev num; do
            echo "--- only with our layer: $vuid ($sev), first message:" >&2
            grep -F -m 1 "$vuid($(echo "$sev" | sed 's|/| / |')): msgNum: $num " "$tmp/ours.validation" |
                cut -c 1-1500 >&2
        done < "$tmp/ids-added"
        fail "$(wc -l < "$tmp/ids-added") validation message(s) only with our layer: $(cut -d ' ' -f 1 "$tmp/ids-added" | tr '\n' ' ')"
    fi
}

# check_trace FRAMES [WHY_UNTIMED]: gputrace-check passes with warnings
# fatal; at least FRAMES submissions (the frames the program rendered)
# have GPU events; and every submission that carries command buffers has
# one, unless WHY_UNTIMED says why some of this program's do not (then at
# most one a frame, plus two, may not).
check_trace() {
    trace=$tmp/trace.pftrace
    [ -s "$trace" ] || fail "no trace written ($trace)"
    crc=0
    "$GT_GPUTRACE_CHECK" --no-progress --fatal-warnings "$trace" > "$tmp/check" 2>&1 || crc=$?
    [ $crc -eq 0 ] || fail "gputrace-check fails the trace (exit $crc)"
    "$GT_GPUTRACE_DUMP" --verbose "$trace" > "$tmp/dump" 2> "$tmp/dump.err" ||
        fail "gputrace-dump cannot read the trace: $(cat "$tmp/dump.err")"
    # vk_queue_submit lines carry command_buffers= and submission_id=;
    # render stage lines carry event_id= and submission_id=.
    awk '
        function field(name,   i) {
            for (i = 1; i <= NF; i++)
                if (index($i, name "=") == 1) return substr($i, length(name) + 2)
            return ""
        }
        $1 == "vk_queue_submit" {
            n++
            if (field("command_buffers") + 0 > 0) { work[field("submission_id")] = 1; nwork++ }
        }
        $1 ~ /^event_id=/ { events++; covered[field("submission_id")] = 1 }
        END {
            for (s in work) {
                if (s in covered) timed++
                else { untimed++; if (length(list) < 120) list = list " " s }
            }
            printf "%d %d %d %d %d%s\n", n, nwork, events, timed, untimed, list
        }' "$tmp/dump" > "$tmp/coverage"
    read -r subs work events timed untimed list < "$tmp/coverage" || true
    echo "trace: $subs submission(s), $work with command buffers, $timed of them with GPU events ($events events); frames rendered: at least $1"
    grep -E '^  (warning|error|data_loss)|verdict' "$tmp/check" || true
    [ "$timed" -ge "$1" ] ||
        fail "only $timed submission(s) with GPU events for at least $1 frame(s)"
    if [ "$untimed" -gt 0 ]; then
        [ -n "${2:-}" ] ||
            fail "$untimed submission(s) with command buffers have no GPU event (submission ids:$list)"
        # At most one such submission a frame, and two more for start-up
        # and teardown (a 60-frame mpv run once left 61 untimed).
        [ "$untimed" -le $(($1 + 2)) ] ||
            fail "$untimed submission(s) with command buffers have no GPU event, more than one a frame ($1) and 2"
        echo "  $untimed submission(s) without GPU events: $2"
    fi
    check_import "$events"
}

# check_import EVENTS: each trace_processor there is imports the trace
# with no error or data_loss stat and EVENTS render-stage slices.
check_import() {
    cat > "$tmp/import.sql" <<'SQL'
select (select count(*) from gpu_slice s join gpu_track t on s.track_id = t.id
        where t.scope = 'gpu_render_stage')
    || '|' || ifnull((select group_concat(name || '=' || value, ' ') from stats
                      where severity in ('error', 'data_loss') and value > 0), '') as r
SQL
    for v in $(tp_versions); do
        why=$(tp_missing "$v")
        if [ -n "$why" ]; then
            echo "import: not checked in trace_processor v$v: $why"
            continue
        fi
        got=$(tp_query "$v" "$tmp/import.sql" "$tmp/trace.pftrace") ||
            fail "trace_processor v$v cannot import the trace"
        [ "${got#*|}" = "" ] || fail "trace_processor v$v: error/data_loss stats: ${got#*|}"
        [ "${got%%|*}" = "$1" ] ||
            fail "trace_processor v$v: ${got%%|*} render-stage slices for $1 GPU events"
        echo "import: trace_processor v$v ($(tp_version_line "$v")): $1 render-stage slices, no error or data_loss stat"
    done
}

# v58's answer to the SQL in $tmp/q.sql (empty when v58 is missing: the
# caller says so).
tp58() {
    tp_query 58 "$tmp/q.sql" "$tmp/trace.pftrace" || fail "trace_processor v58 failed on: $(cat "$tmp/q.sql")"
}

# check_memory [all-freed]: the layer's own count of each device's memory
# objects (logged at vkDestroyDevice) against the trace's memory events;
# with all-freed, nothing may be left at vkDestroyDevice.
check_memory() {
    why=$(tp_missing 58)
    if [ -n "$why" ]; then
        echo "memory: not checked (trace_processor v58: $why)"
        return 0
    fi
    # "device N memory at vkDestroyDevice: allocations=A bytes=B frees=F
    # freed_bytes=FB buffers=U images=I alive_memory=M alive_buffers=X
    # alive_images=Y"
    grep 'memory at vkDestroyDevice' "$log" > "$tmp/memlog" ||
        fail "the layer logged no memory count at vkDestroyDevice (device never destroyed?)"
    sum_of() {
        sed -n "s/.* $1=\([0-9]*\)\( .*\)\{0,1\}\$/\1/p" "$tmp/memlog" |
            awk '{ n += $1 } END { print n + 0 }'
    }
    want="$(sum_of allocations),$(sum_of bytes),$(sum_of frees),$(sum_of freed_bytes),$(sum_of buffers),$(sum_of images)"
    cat > "$tmp/q.sql" <<'SQL'
select (select count(*) from vulkan_memory_allocations where source = 'GPU_DEVICE_MEMORY' and operation = 'CREATE')
       || ',' || (select ifnull(sum(memory_size), 0) from vulkan_memory_allocations where source = 'GPU_DEVICE_MEMORY' and operation = 'CREATE')
       || ',' || (select count(*) from vulkan_memory_allocations where source = 'GPU_DEVICE_MEMORY' and operation = 'DESTROY')
       || ',' || (select ifnull(sum(memory_size), 0) from vulkan_memory_allocations where source = 'GPU_DEVICE_MEMORY' and operation = 'DESTROY')
       || ',' || (select count(*) from vulkan_memory_allocations where source = 'GPU_BUFFER' and operation = 'CREATE')
       || ',' || (select count(*) from vulkan_memory_allocations where source = 'GPU_IMAGE' and operation = 'CREATE') as r
SQL
    got=$(tp58)
    echo "memory: the layer counted (allocations,bytes,frees,freed bytes,buffers,images) $want; the trace has $got"
    [ "$got" = "$want" ] || fail "memory events in the trace ($got) are not what the layer counted ($want)"
    [ "${1:-}" = all-freed ] || return 0
    alive=$(sed -n 's/.* alive_memory=\([0-9]*\) alive_buffers=\([0-9]*\) alive_images=\([0-9]*\).*/\1 \2 \3/p' "$tmp/memlog" |
            awk '{ n += $1 + $2 + $3 } END { print n + 0 }')
    [ "$alive" -eq 0 ] || fail "$alive memory object(s) still alive at vkDestroyDevice: $(cat "$tmp/memlog")"
    cat > "$tmp/q.sql" <<'SQL'
select t.name || '=' || cast(c.value as int) from counter_track t join counter c on c.track_id = t.id
where (t.type in ('vulkan_device_mem_allocation', 'vulkan_device_mem_bind')
       or t.name glob 'Vulkan heap * allocated*' or t.name glob 'Vulkan heap * bound*')
  and c.ts = (select max(ts) from counter where track_id = t.id) and c.value <> 0
SQL
    left=$(tp58)
    [ -z "$left" ] || fail "memory counters not back at 0 at the end: $(echo $left)"
    echo "memory: nothing alive at vkDestroyDevice, every allocation and bind counter back at 0"
}

# check_flows: each thread's vkQueueSubmit slice whose submission has a
# command-buffer stage links to it, and fence waits to what they waited
# for.
check_flows() {
    why=$(tp_missing 58)
    if [ -n "$why" ]; then
        echo "flows: not checked (trace_processor v58: $why)"
        return 0
    fi
    cat > "$tmp/q.sql" <<'SQL'
select (select count(*) from slice s join thread_track t on s.track_id = t.id
        where s.name = 'vkQueueSubmit'
          and exists (select 1 from gpu_slice g where g.name = 'Command buffer'
                      and g.submission_id = extract_arg(s.arg_set_id, 'debug.submission_id'))
          and not exists (select 1 from flow f join slice g on g.id = f.slice_in
                          where f.slice_out = s.id and g.name = 'Command buffer'
                            and extract_arg(g.arg_set_id, 'submission_id')
                                = extract_arg(s.arg_set_id, 'debug.submission_id')))
       || ',' || (select count(*) from flow f join slice s on s.id = f.slice_out
                  join slice w on w.id = f.slice_in
                  where w.name = 'vkQueueSubmit' or s.name = 'vkQueueSubmit')
       || ',' || (select count(*) from flow f join slice w on w.id = f.slice_in
                  where w.name = 'vkWaitForFences') as r
SQL
    got=$(tp58)
    echo "flows: submits without their command buffer's flow, submit flows, fence-wait flows: $got"
    [ "${got%%,*}" = 0 ] || fail "${got%%,*} vkQueueSubmit slice(s) without a flow to their command buffer"
    rest=${got#*,}
    [ "${rest%%,*}" -gt 0 ] || fail "no flow from a vkQueueSubmit slice"
    [ "${rest#*,}" -gt 0 ] || fail "no flow to a vkWaitForFences slice"
}

# check_frames COUNT: the frames track of the program's process holds COUNT
# frames, give or take one (the program's own count of what it showed;
# one more or fewer where its first or last present is not one of its
# frames), and gputrace-check's frame statistics pass (thresholds only a
# broken trace exceeds: the figures depend on the machine).
check_frames() {
    want=$1
    crc=0
    "$GT_GPUTRACE_CHECK" --no-progress --json --frames --max-frame-p99-ms 60000 \
        --max-gpu-frame-p99-ms 60000 --max-stutters 1000000 "$tmp/trace.pftrace" \
        > "$tmp/frames.json" 2> "$tmp/frames.err" || crc=$?
    [ $crc -eq 0 ] || fail "gputrace-check --frames fails the trace (exit $crc)"
    got=$(python3 - "$tmp/frames.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for t in d["frames"]:
    i, g = t["frame_interval_ms"], t["gpu_frame_time_ms"]
    print("  %s (pid %d): %d frames; interval p50 %.2f p99 %.2f ms; GPU time p50 %.2f p99 %.2f ms; %d stutter(s)"
          % (t["track"], t["pid"], t["frames"], i["p50"] or 0, i["p99"] or 0, g["p50"] or 0,
             g["p99"] or 0, t["stutters"]), file=sys.stderr)
print(sum(t["frames"] for t in d["frames"]), len(d["frames"]))
PY
) || fail "cannot read gputrace-check's report"
    set -- $got
    echo "frames: $1 in $2 frames track(s); the program's own count: $want"
    [ "$2" = 1 ] || fail "$2 frames tracks, expected one"
    [ "$1" -ge $((want - 1)) ] && [ "$1" -le $((want + 1)) ] ||
        fail "$1 frames in the trace, the program counted $want"
    trace_processor_frames "$1"
}

# trace_processor_frames COUNT: each trace_processor there is (tp_lib.sh)
# must import COUNT frames on a "Frames" track of the program's process,
# every one with its GPU time; a version that is not there is named as not
# checked (check_import has already looked for error and data_loss stats).
trace_processor_frames() {
    pid=$(sed -n 's/.*layer active (pid \([0-9]*\),.*/\1/p' "$log" | head -n 1)
    [ -n "$pid" ] || fail "the layer's log names no pid"
    cat > "$tmp/frames.sql" <<EOF
select count(*) || ',' || count(extract_arg(s.arg_set_id, 'debug.gpu_time_ns'))
from slice s join process_track pt on s.track_id = pt.id join process p using (upid)
where p.pid = $pid and pt.name = 'Frames';
EOF
    for v in $(tp_versions); do
        why=$(tp_missing "$v")
        if [ -n "$why" ]; then
            echo "frames: not checked in trace_processor v$v: $why"
            continue
        fi
        row=$(tp_query "$v" "$tmp/frames.sql" "$tmp/trace.pftrace") ||
            fail "trace_processor v$v cannot import the trace"
        [ "$row" = "$1,$1" ] ||
            fail "trace_processor v$v: frames, with GPU time: $row (expected $1,$1)"
        echo "frames in trace_processor v$v: $row"
    done
}

# ---- cases --------------------------------------------------------------------

need_validation
need_cmd timeout coreutils

# One message a case may show only with our layer: an application race
# that shows without the layer too, only less often (its VUID, a text
# every such message must contain, and why).
tolerated_vuid= tolerated_text= tolerated_why=

case $case_name in
vkcube)
    need_cmd vkcube vulkan-tools
    start_xvfb
    for mode in base ours; do
        run_app "$mode" 120 vkcube --c 300
    done
    check_exit
    check_validation
    # vkcube submits once per frame.
    check_trace 300
    check_memory all-freed
    check_flows
    # And presents each of its 300 frames.
    check_frames 300
    ;;
vkd3d-gears)
    need_cmd vkd3d-gears vkd3d-demos
    need_cmd xdotool xdotool
    start_xvfb
    for mode in base ours; do
        run_windowed "$mode" 2 '^Vkd3d Gears$' vkd3d-gears
    done
    check_exit
    check_validation
    # It prints no frame count; one frame a submission, far more than 10
    # in 2 s even on lavapipe under validation.
    check_trace 10
    check_memory all-freed
    ;;
glmark2 | glxgears)
    need_cmd glxinfo mesa-utils
    if [ "$case_name" = glmark2 ]; then
        need_cmd glmark2 glmark2-x11
    else
        need_cmd glxgears mesa-utils
        need_cmd xdotool xdotool
    fi
    start_xvfb
    # OpenGL through zink on lavapipe: zink only takes a CPU device when
    # software rendering is asked for. glmark2 runs zink as a gallium
    # driver of the software window system (drisw: each swap copied out
    # through Xlib); glxgears loads zink as the DRI driver itself, which
    # Mesa 22.3 then runs on kopper even without DRI3: every swap is a
    # vkQueuePresentKHR, as on a desktop, so its frames can be counted.
    export LIBGL_ALWAYS_SOFTWARE=1
    if [ "$case_name" = glmark2 ]; then
        export GALLIUM_DRIVER=zink
    else
        export MESA_LOADER_DRIVER_OVERRIDE=zink
    fi
    glxinfo -B > "$tmp/glxinfo" 2>&1 || true
    grep -q 'OpenGL renderer string: zink' "$tmp/glxinfo" ||
        fail "OpenGL does not run on zink: $(grep -i 'renderer\|error' "$tmp/glxinfo" | head -n 3)"
    echo "$(grep 'OpenGL renderer string' "$tmp/glxinfo")"
    if [ "$case_name" = glmark2 ]; then
        for mode in base ours; do
            run_app "$mode" 120 glmark2 -s 320x240 -b build:duration=1 -b shading:duration=1
        done
        check_exit
        grep -q 'GL_RENDERER: *zink' "$tmp/ours.out" || fail "glmark2 did not run on zink"
        # "[scene] ...: FPS: F FrameTime: ..." over one second each: at
        # least F frames per scene (less a margin for the rounded rate).
        frames=$(sed -n 's/.* FPS: \([0-9]*\) .*/\1/p' "$tmp/ours.out" |
                 awk '{ n += $1 } END { printf "%d\n", n * 0.95 }')
        echo "glmark2 score without our layer: $(sed -n 's/.*Score: \([0-9]*\).*/\1/p' "$tmp/base.out"), with it: $(sed -n 's/.*Score: \([0-9]*\).*/\1/p' "$tmp/ours.out")"
    else
        # Its frames: glXSwapBuffers calls, counted by swap_count.so.
        export LD_PRELOAD="$GT_SWAP_COUNT" GT_SWAP_COUNT_FILE="$tmp/swaps"
        for mode in base ours; do
            run_windowed "$mode" 6 '^glxgears$' glxgears
        done
        unset LD_PRELOAD
        check_exit
        # "N frames in 5.0 seconds = ..." after its first five seconds.
        frames=$(sed -n 's/^\([0-9]*\) frames in .*/\1/p' "$tmp/ours.out" | head -n 1)
        [ -n "$frames" ] || fail "glxgears printed no frame count: $(cat "$tmp/ours.out")"
        echo "glxgears: $(grep -m1 " frames in " "$tmp/base.out") without our layer, $(grep -m1 " frames in " "$tmp/ours.out") with it"
    fi
    check_validation
    # zink submits at least once per swap; now and then it flushes a
    # command buffer it recorded nothing into (1 submission in a glmark2
    # run of ~500), which the layer, timing no empty command buffer, leaves
    # untimed.
    check_trace "$frames" "empty command buffers (zink flushes with nothing recorded)"
    check_memory
    if [ "$case_name" = glxgears ]; then
        # The run with our layer wrote the last line.
        swaps=$(sed -n 's/^swaps=//p' "$tmp/swaps" 2> /dev/null | tail -n 1)
        [ -n "$swaps" ] || fail "swap_count.so wrote no count"
        # Each swap a present (kopper): the frames track counts them.
        check_frames "$swaps"
    fi
    ;;
ffmpeg)
    need_cmd ffmpeg ffmpeg
    ffmpeg -hide_banner -filters 2> /dev/null | grep -q ' scale_vulkan ' ||
        skip "this ffmpeg has no Vulkan filters"
    filters=format=yuv420p,hwupload,scale_vulkan=w=256:h=192,avgblur_vulkan,chromaber_vulkan,transpose_vulkan,flip_vulkan,hwdownload,format=yuv420p
    for mode in base ours; do
        run_app "$mode" 120 ffmpeg -hide_banner -nostdin -init_hw_device vulkan=vk:0 \
            -filter_hw_device vk -f lavfi -i testsrc=size=320x240:rate=30 -frames:v 60 \
            -vf "$filters" -f null -
    done
    check_exit
    check_validation
    frames=$(tr '\r' '\n' < "$tmp/ours.err" | sed -n 's/^frame= *\([0-9]*\) .*/\1/p' | tail -n 1)
    [ "${frames:-0}" -eq 60 ] || fail "ffmpeg reports ${frames:-no} frame(s), not 60"
    # Each frame is uploaded, filtered and downloaded in its own submissions.
    check_trace 60
    check_memory all-freed
    ;;
mpv-gpu | mpv-gpu-next)
    need_cmd mpv mpv
    need_cmd ffmpeg ffmpeg
    need_cmd vulkaninfo vulkan-tools
    ffmpeg -hide_banner -nostdin -loglevel error -f lavfi -i testsrc=size=320x240:rate=30 \
        -t 3 -c:v mpeg4 -q:v 5 "$tmp/clip.mkv" > "$tmp/ffmpeg.log" 2>&1 ||
        fail "ffmpeg cannot make the clip: $(cat "$tmp/ffmpeg.log")"
    # libplacebo passes over software devices unless one is named.
    device=$(vulkaninfo --summary 2> /dev/null | sed -n 's/^[[:space:]]*deviceName[[:space:]]*= //p' | head -n 1)
    [ -n "$device" ] || fail "vulkaninfo names no device"
    # libplacebo (both outputs draw with it) destroys its swapchain
    # semaphores at exit while the last present may still wait on one.
    # Counted over 20 runs each of --vo=gpu-next: 1 without our layer, 4
    # without it but with a busy loop beside, 6 with our layer in the chain
    # but disabled (GPUTRACE_DISABLE=1, it hooks nothing), 8 with it
    # tracing: timing, not our commands.
    tolerated_vuid=VUID-vkDestroySemaphore-semaphore-01137
    tolerated_text='[swapchain out] that is currently in use'
    tolerated_why="libplacebo's exit race, also seen without our layer"
    start_xvfb
    for mode in base ours; do
        run_app "$mode" 120 mpv --no-config --msg-level=all=warn --ao=null \
            --vo="${case_name#mpv-}" --gpu-api=vulkan --vulkan-device="$device" \
            --untimed --framedrop=no --frames=60 "$tmp/clip.mkv"
    done
    check_exit
    check_validation
    # 60 frames decoded and presented, each rendered in its own submission.
    # libplacebo also submits, once a frame, a command buffer with nothing
    # recorded in it (seen with breakpoints on the layer's hooks): no GPU
    # work, so the layer times nothing there (docs/layer.md, "Suspended
    # rendering").
    check_trace 60 "empty command buffers (libplacebo signals semaphores with them)"
    check_memory all-freed
    check_frames 60
    ;;
*)
    echo "realapps_test.sh: unknown case '$case_name'" >&2
    exit 2
    ;;
esac
echo "ok: $case_name"
