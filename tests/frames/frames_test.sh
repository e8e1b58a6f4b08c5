#!/bin/sh
# SPDX-License-Identifier: MIT
# frames_test.sh CASE — frames and capture control of VK_LAYER_GPUTRACE_timeline
# on lavapipe, read back with gputrace-check (docs/layer.md, "Frames" and
# "Flight recorder"). Every expected figure comes from the program's own
# summary line or from what the case asked for, never from the trace.
#
#   boundary         gputrace-workload --frame-boundary under Khronos
#                    validation (the layer provides VK_EXT_frame_boundary to
#                    lavapipe): no validation error, and the trace's frames
#                    track has exactly the workload's frames, numbered 1..F,
#                    each with its GPU time
#   boundary-alone   the same without the layer: the workload finds no
#                    VK_EXT_frame_boundary and says so (exit 1)
#   stutter          --stall-every 5 --stall-ms 200, run by gputrace-ci:
#                    every fifth frame's interval is a stutter; --max-stutters
#                    below their number fails the run (gputrace-ci passes
#                    --frames and the threshold to gputrace-check) and the
#                    check of its kept trace (frame_stutters_exceeded), above
#                    it passes
#   window           GPUTRACE_FRAMES=5..9: frames 5 to 9 only, and only their
#                    render stages (5 of the workload's frames' regions)
#   window-open      gputrace_timeline.frames = 18.. in vk_layer_settings.txt
#                    (VK_LAYER_SETTINGS_PATH): the last three of 20 frames
#   window-api       frames=12..15 from the workload's own
#                    VkLayerSettingsCreateInfoEXT (--layer-setting): frames
#                    12 to 15 only, and only their render stages
#   window-bad       GPUTRACE_FRAMES=9..5: one warning, every frame timed
#   window-system    GPUTRACE_FRAMES=5..9 with the system backend (gputrace-ci
#                    --service): the same five frames and render stages
#   trigger-signal   GPUTRACE_TRIGGER=signal:USR1, three signals two seconds
#                    apart: three window files (and no other), each passing
#                    gputrace-check with frames later than the last file's,
#                    spanning about GPUTRACE_TRIGGER_SECONDS; the workload
#                    (which has no SIGUSR1 handler) runs on to its end
#   trigger-file     GPUTRACE_TRIGGER=file:PATH, touched twice: two files
#   trigger-handler  trigger_app handles SIGUSR1 itself and raises it three
#                    times: its handler ran three times, three files
#
# Environment (meson.build): GT_TEST_LIB, GT_WORKLOAD, GT_TRIGGER_APP,
# GT_EXPLICIT_DIR, GT_GPUTRACE_CHECK, GT_CI (gputrace-ci).
set -eu

case_name=${1:?usage: frames_test.sh CASE}
. "$GT_TEST_LIB"
need_exe "$GT_WORKLOAD" gputrace-workload
need_exe "$GT_GPUTRACE_CHECK" gputrace-check
[ -f "$GT_EXPLICIT_DIR/VkLayer_gputrace_timeline.json" ] ||
    skip "layer manifest not built ($GT_EXPLICIT_DIR)"
command -v python3 > /dev/null || skip "python3 not installed"

with_layer() {
    export VK_ADD_LAYER_PATH="$GT_EXPLICIT_DIR" VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline
    export GPUTRACE_LOG=info GPUTRACE_LOG_FILE="$log"
}

# check_json TRACE [OPTIONS...]: gputrace-check --json --frames into
# $tmp/check.json; its exit status in $crc.
check_json() {
    trace=$1
    shift
    crc=0
    "$GT_GPUTRACE_CHECK" --no-progress --json --frames "$@" "$trace" > "$tmp/check.json" \
        2> "$tmp/check" || crc=$?
}

# frames_field PYTHON-EXPR: evaluated with t = the only frames track and
# d = the whole report (fails unless there is exactly one track).
frames_field() {
    python3 - "$tmp/check.json" "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
if len(d["frames"]) != 1:
    print("tracks=%d" % len(d["frames"]))
    sys.exit(1)
t = d["frames"][0]
print(eval(sys.argv[2]))
PY
}

expect_eq() { # WHAT GOT WANT
    [ "$2" = "$3" ] || fail "$1: got $2, expected $3"
    echo "ok: $1 = $2"
}

case $case_name in
boundary)
    with_layer
    export GPUTRACE_OUTPUT="$tmp/trace.pftrace"
    run_ok 300 "$GT_WORKLOAD" --frame-boundary --frames 30 --validate
    grep -q 'validation: 0 error(s)' "$tmp/err" || fail "validation reported errors"
    grep -q 'VK_EXT_frame_boundary provided by the layer' "$log" ||
        fail "the layer did not say it provides VK_EXT_frame_boundary"
    frames=$(workload_field frames)
    check_json "$tmp/trace.pftrace"
    [ $crc -eq 0 ] || fail "gputrace-check fails the trace (exit $crc)"
    expect_eq "frames in the trace" "$(frames_field 't["frames"]')" "$frames"
    expect_eq "first frame" "$(frames_field 't["first_frame"]')" 1
    expect_eq "last frame" "$(frames_field 't["last_frame"]')" "$frames"
    expect_eq "frames with GPU time" "$(frames_field 't["gpu_frame_time_ms"]["count"]')" "$frames"
    expect_eq "intervals" "$(frames_field 't["frame_interval_ms"]["count"]')" $((frames - 1))
    expect_eq "track pid" "$(frames_field 't["pid"] > 0')" True
    expect_eq "GPU render stages" "$(frames_field 'd["gpu_render_stage_events"]')" \
        "$(workload_field regions)"
    ;;
boundary-alone)
    run_bounded 120 "$GT_WORKLOAD" --frame-boundary --frames 3
    [ $rc -eq 1 ] || fail "without the layer --frame-boundary exited $rc, expected 1"
    grep -q 'has no VK_EXT_frame_boundary' "$tmp/err" || fail "no message saying why"
    echo "ok: without the layer: $(grep 'frame-boundary' "$tmp/err")"
    ;;
stutter)
    need_exe "$GT_CI" gputrace-ci
    # A driver's CI job: gputrace-ci runs the program under the layer and
    # fails it on the frame thresholds it passes to gputrace-check.
    run_bounded 300 "$GT_CI" --lavapipe --timeout 240 --keep-trace "$tmp/trace.pftrace" \
        --frames --max-stutters 7 -- \
        "$GT_WORKLOAD" --frame-boundary --frames 40 --stall-every 5 --stall-ms 200
    [ $rc -eq 1 ] || fail "gputrace-ci --max-stutters 7 exited $rc, expected 1: $(tail -n 3 "$tmp/err")"
    grep -q 'ERROR frame_stutters_exceeded' "$tmp/out" ||
        fail "gputrace-ci reported no frame_stutters_exceeded: $(tail -n 5 "$tmp/out")"
    grep -q 'gputrace-workload: frames=40 ' "$tmp/out" "$tmp/err" ||
        fail "the workload did not run its 40 frames"
    echo "ok: gputrace-ci --frames --max-stutters 7 fails the run"
    # Frames 5, 10, ..., 40 sleep 200 ms: 8 stutters at least (others may
    # come of a busy machine, never fewer).
    check_json "$tmp/trace.pftrace" --max-stutters 7
    [ $crc -eq 1 ] || fail "--max-stutters 7 passes a trace with 8 injected stutters (exit $crc)"
    grep -q '"code": "frame_stutters_exceeded"' "$tmp/check.json" ||
        fail "no frame_stutters_exceeded violation"
    stutters=$(frames_field 't["stutters"]')
    [ "$stutters" -ge 8 ] || fail "$stutters stutter(s) reported, 8 injected"
    echo "ok: $stutters stutter(s) (8 injected), --max-stutters 7 fails"
    expect_eq "a slow run" "$(frames_field 't["longest_slow_run"] >= 1')" True
    expect_eq "the stalls are the largest intervals" \
        "$(frames_field 't["frame_interval_ms"]["max"] >= 200')" True
    check_json "$tmp/trace.pftrace" --max-stutters 40 --max-frame-p99-ms 100000
    [ $crc -eq 0 ] || fail "--max-stutters 40 fails the trace (exit $crc)"
    echo "ok: --max-stutters 40 passes"
    ;;
window | window-open | window-api | window-bad | window-system)
    with_layer
    export GPUTRACE_OUTPUT="$tmp/trace.pftrace"
    workload_setting=
    case $case_name in
    window | window-system) export GPUTRACE_FRAMES=5..9 first=5 last=9 ;;
    window-open)
        # The same setting from the settings file (docs/layer.md, "Settings").
        printf 'gputrace_timeline.frames = 18..\n' > "$tmp/vk_layer_settings.txt"
        export VK_LAYER_SETTINGS_PATH="$tmp/vk_layer_settings.txt" first=18 last=20
        ;;
    window-api)
        # The application's own VK_EXT_layer_settings (docs/layer.md,
        # "Settings"); no file, no variable holds the setting.
        workload_setting=--layer-setting=frames=12..15 first=12 last=15
        ;;
    window-bad) export GPUTRACE_FRAMES=9..5 first=1 last=20 ;;
    esac
    if [ "$case_name" = window-system ]; then
        need_exe "$GT_CI" gputrace-ci
        unset GPUTRACE_OUTPUT
        run_ok 300 "$GT_CI" --lavapipe --service --timeout 240 --keep-trace "$tmp/trace.pftrace" \
            -- "$GT_WORKLOAD" --frame-boundary --frames 20
        grep -q 'gputrace-ci: PASS (gputrace-service backend)' "$tmp/out" ||
            fail "not traced through gputrace-service: $(grep 'gputrace-ci:' "$tmp/out" "$tmp/err")"
    else
        run_ok 300 "$GT_WORKLOAD" --frame-boundary --frames 20 $workload_setting
    fi
    if [ "$case_name" = window-bad ]; then
        grep -q 'ignoring GPUTRACE_FRAMES=9..5' "$log" || fail "no warning about GPUTRACE_FRAMES=9..5"
    fi
    if [ "$case_name" = window-open ]; then
        grep -q "setting gputrace_timeline.frames=18\.\. (from $tmp/vk_layer_settings.txt:1)" "$log" ||
            fail "the layer did not take frames=18.. from the settings file"
    fi
    if [ "$case_name" = window-api ]; then
        grep -q '^gputrace: setting frames=12\.\.15 (from VkLayerSettingsCreateInfoEXT)$' "$log" ||
            fail "the layer did not take frames=12..15 from VkLayerSettingsCreateInfoEXT"
        echo "ok: $(grep 'setting frames=' "$log")"
    fi
    frames=$(workload_field frames)
    regions=$(workload_field regions)
    n=$((last - first + 1))
    check_json "$tmp/trace.pftrace"
    [ $crc -eq 0 ] || fail "gputrace-check fails the trace (exit $crc)"
    expect_eq "frames in the trace" "$(frames_field 't["frames"]')" "$n"
    expect_eq "first frame" "$(frames_field 't["first_frame"]')" "$first"
    expect_eq "last frame" "$(frames_field 't["last_frame"]')" "$last"
    expect_eq "GPU render stages (the window's frames' regions)" \
        "$(frames_field 'd["gpu_render_stage_events"]')" $((regions / frames * n))
    ;;
trigger-signal | trigger-file)
    with_layer
    export GPUTRACE_OUTPUT="$tmp/snap-%n.pftrace" GPUTRACE_TRIGGER_SECONDS=2
    if [ "$case_name" = trigger-signal ]; then
        export GPUTRACE_TRIGGER=signal:USR1 fire=3
    else
        export GPUTRACE_TRIGGER=file:$tmp/go fire=2
    fi
    "$GT_WORKLOAD" --frame-boundary --duration-ms 60000 --frames 1000000 > "$tmp/out" \
        2> "$tmp/err" &
    pid=$!
    # The trigger is live once the layer says so (before, SIGUSR1 would
    # end the workload: that is its default action).
    i=0
    until grep -q 'flight recorder, on' "$log" 2> /dev/null; do
        kill -0 "$pid" 2> /dev/null || fail "the workload ended before tracing started"
        i=$((i + 1))
        [ $i -lt 600 ] || { kill "$pid"; fail "no flight recorder within 60 s"; }
        sleep 0.1
    done
    k=0
    while [ $k -lt $fire ]; do
        sleep 2.5
        if [ "$case_name" = trigger-signal ]; then
            kill -USR1 "$pid"
        else
            touch "$tmp/go"
        fi
        k=$((k + 1))
        # Each trigger's file, before the next trigger.
        i=0
        until [ -s "$tmp/snap-$k.pftrace" ] && grep -q "wrote $tmp/snap-$k.pftrace" "$log"; do
            i=$((i + 1))
            [ $i -lt 300 ] || { kill "$pid"; fail "no window file $k within 30 s of its trigger"; }
            sleep 0.1
        done
    done
    kill -TERM "$pid"
    rc=0
    wait "$pid" || rc=$?
    # SIGTERM's default action ends it; the layer installs nothing for it
    # as a flight recorder.
    [ $rc -eq 143 ] || fail "the workload ended with $rc, expected 143 (SIGTERM)"
    n=$(ls "$tmp"/snap-*.pftrace | wc -l)
    expect_eq "window files" "$n" "$fire"
    prev_first=0 prev_last=0 k=1
    while [ $k -le $fire ]; do
        check_json "$tmp/snap-$k.pftrace"
        [ $crc -eq 0 ] || fail "gputrace-check fails window file $k (exit $crc)"
        first=$(frames_field 't["first_frame"]')
        last=$(frames_field 't["last_frame"]')
        span=$(frames_field 'round(t["frame_interval_ms"]["mean"] * t["frame_interval_ms"]["count"])')
        echo "window $k: frames $first..$last, about $span ms of frames"
        [ "$first" -gt "$prev_first" ] && [ "$last" -gt "$prev_last" ] ||
            fail "window $k (frames $first..$last) is not later than window $((k - 1))"
        # 2 s, the restart period before it (0.5 s) and the GPU's lag.
        [ "$span" -ge 1000 ] && [ "$span" -le 4000 ] ||
            fail "window $k spans $span ms of frames, expected about 2000"
        expect_eq "GPU stages in window $k" "$(frames_field 'd["gpu_render_stage_events"] > 0')" True
        prev_first=$first prev_last=$last
        k=$((k + 1))
    done
    ;;
trigger-handler)
    need_exe "$GT_TRIGGER_APP" trigger_app
    with_layer
    export GPUTRACE_OUTPUT="$tmp/snap-%n.pftrace" GPUTRACE_TRIGGER=signal:USR1
    export GPUTRACE_TRIGGER_SECONDS=1
    run_ok 300 "$GT_TRIGGER_APP" --signals 3 --gap-ms 1500
    grep -q 'trigger_app: raised=3 handled=3 ' "$tmp/out" ||
        fail "the application's own SIGUSR1 handler did not run 3 times: $(cat "$tmp/out")"
    echo "ok: $(cat "$tmp/out")"
    expect_eq "window files" "$(ls "$tmp"/snap-*.pftrace | wc -l)" 3
    for k in 1 2 3; do
        crc=0
        "$GT_GPUTRACE_CHECK" --no-progress --json "$tmp/snap-$k.pftrace" > "$tmp/check.json" \
            2> "$tmp/check" || crc=$?
        [ $crc -eq 0 ] || fail "gputrace-check fails window file $k (exit $crc)"
        stages=$(json_stat "$tmp/check.json" gpu_render_stage_events)
        [ "${stages:-0}" -gt 0 ] || fail "window file $k has no GPU render stage"
        echo "ok: window $k: $stages GPU render stages"
    done
    ;;
*)
    fail "unknown case $case_name"
    ;;
esac
echo "PASS ($case_name)"
