#!/bin/sh
# SPDX-License-Identifier: MIT
# output_test.sh CASE — the embedded backend's trace file (GPUTRACE_OUTPUT)
# under conditions users met, on lavapipe. The application must never
# block, crash or change its fate because of the layer; what is written
# must be readable, every process's events must be somewhere, and every
# loss must be counted.
#
#   fifo              a FIFO at the path (nobody reads it): refused at once
#   symlink           a link at the path (to a file, and dangling): refused,
#                     the target untouched / not created
#   directory-device  a directory, and /dev/null, at the path: refused
#   log-file          GPUTRACE_LOG_FILE at a FIFO nobody reads and at a
#                     symbolic link: refused at once (logging goes to
#                     stderr), the link's target untouched
#   shared-path       3 concurrent workloads, one path: one writes it, the
#                     others write <stem>.<pid>.pftrace; every process's
#                     events present; a later run replaces the finished file
#   pattern           %p %e %% in the path, 3 concurrent workloads: one file
#                     each; an unknown escape is kept and warned about
#   full-disk         RLIMIT_FSIZE (SIGXFSZ left at its default) below the
#                     trace's size: writes fail, a warning is logged, the
#                     loss is counted in the file, the workload succeeds
#   sigterm, sigint   the workload killed mid-run: it still dies of that
#                     signal, and the file is finished (TraceStats)
#   sigterm-off       the same with GPUTRACE_SIGNAL_WAIT_MS=0: no TraceStats
#                     (what the cases above would see without the handler)
#   sigint-ignored    an application that ignores SIGINT keeps ignoring it
#   app-handler-flag  signal_app's own handler (installed before
#                     vkCreateDevice) still runs; clean shutdown, whole trace
#   app-handler-exit  its handler _exit()s: the file still has TraceStats
#   app-handler-after the handler is installed after vkCreateDevice: it
#                     replaces the layer's, which is never put back
#
# Environment (meson.build): GT_TEST_LIB, GT_WORKLOAD, GT_SIGNAL_APP,
# GT_GPUTRACE_CHECK, GT_GPUTRACE_DUMP, GT_EXPLICIT_DIR. Exit 0 pass, 1
# fail, 77 skip.
set -eu

case_name=${1:?usage: output_test.sh CASE}
. "$GT_TEST_LIB"
. "$(dirname "$0")/faults_lib.sh"

need_exe "$GT_WORKLOAD" gputrace-workload
need_exe "$GT_GPUTRACE_CHECK" gputrace-check

export VK_ADD_LAYER_PATH="$GT_EXPLICIT_DIR" VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline
export GPUTRACE_LOG=debug GPUTRACE_LOG_FILE="$log"
unset GPUTRACE_SIGNAL_WAIT_MS GPUTRACE_BUFFER_KB

# check TRACE [ARGS...]: gputrace-check --json into $tmp/check; $crc,
# $events (GPU render stage events), $stats (TraceStats packets).
check() {
    [ -s "$1" ] || fail "no trace at $1"
    t=$1
    shift
    crc=0
    "$GT_GPUTRACE_CHECK" --no-progress --json $(clock_name_args) "$@" "$t" \
        > "$tmp/check" 2> "$tmp/check.err" || crc=$?
    [ $crc -le 1 ] || { cat "$tmp/check.err" >&2; fail "gputrace-check could not read $t"; }
    events=$(json_stat "$tmp/check" gpu_render_stage_events)
    stats=$(json_stat "$tmp/check" trace_stats_packets)
    echo "$(basename "$t"): $(wc -c < "$t") bytes, gputrace-check exit $crc, $events GPU events," \
         "$stats TraceStats, violations: $(json_violation_codes "$tmp/check")"
}

# Whatever the trace lost, what it holds imports cleanly.
no_errors() {
    if grep -q '"severity": "error"' "$tmp/check"; then
        grep '"severity": "error"' "$tmp/check" >&2
        fail "gputrace-check reports errors (not just counted loss)"
    fi
}

# A run whose trace file is refused: the program runs, untraced, at once.
refused_run() { # refused_run PATH WHAT-THE-LOG-SAYS
    rm -f "$log"
    t0=$(now_ms)
    run_ok 60 env GPUTRACE_OUTPUT="$1" "$GT_WORKLOAD" --frames 2
    took=$(($(now_ms) - t0))
    echo "GPUTRACE_OUTPUT=$1: $took ms, $(grep -o 'trace file .*' "$log" | head -n 1)"
    grep -q "trace file $1 $2" "$log" || fail "the log does not say '$1 $2'"
    grep -q 'not tracing' "$log" || fail "the layer did not say it is not tracing"
    workload_regions > /dev/null
}

# start_bg OUT CMD...: CMD in the background with SIGINT and SIGTERM at
# their default (a non-interactive shell ignores SIGINT in background
# jobs), stdout in OUT; its pid in $bg (env execs, so it is CMD's pid).
start_bg() {
    out=$1
    shift
    if [ -n "$gt_preload" ]; then
        env --default-signal=INT,TERM LD_PRELOAD="$gt_preload" "$@" > "$out" 2>> "$tmp/err" &
    else
        env --default-signal=INT,TERM "$@" > "$out" 2>> "$tmp/err" &
    fi
    bg=$!
}

# wait_bg PID SECONDS: waits for PID (killed after SECONDS: a failure); its
# exit status in $rc.
wait_bg() {
    n=0
    while kill -0 "$1" 2> /dev/null; do
        n=$((n + 1))
        if [ $n -gt $(($2 * 10)) ]; then
            gt_stacks "$1"
            kill -KILL "$1" 2> /dev/null || true
            fail "process $1 still running after $2 s"
        fi
        sleep 0.1
    done
    rc=0
    wait "$1" || rc=$?
}

# wait_for FILE PATTERN SECONDS: until FILE has a line matching PATTERN.
wait_for() {
    n=0
    until grep -q "$2" "$1" 2> /dev/null; do
        n=$((n + 1))
        [ $n -le $(($3 * 10)) ] || fail "no '$2' in $(basename "$1") after $3 s"
        sleep 0.1
    done
}

# written_events TRACE: the GPU events the file holds so far (the backend
# writes it out every 2 s; a packet cut at the end is not counted).
written_events() {
    { "$GT_GPUTRACE_DUMP" "$1" 2> /dev/null || true; } | grep -c 'gpu_render_stage_event' || true
}

# wait_written_events TRACE SECONDS: until a write-out has put GPU events
# into TRACE, their count in $before. The program is then past start-up
# (shader compilation) and its collector has emitted events: a signal one
# second after "tracing started", as this was, could come before either on
# a loaded machine, and a process killed while compiling took seconds to
# tear down (6 s with eight busy loops beside it). The deadline only
# catches a hang.
wait_written_events() {
    n=0
    while :; do
        before=$(written_events "$1")
        [ "$before" -eq 0 ] || break
        n=$((n + 1))
        [ $n -le $(($2 * 5)) ] || fail "no GPU events written to $(basename "$1") after $2 s"
        sleep 0.2
    done
}

# kill_mid_run SIGNAL: the workload, traced, killed with SIGNAL once a
# write-out has put GPU events in the file; $rc its exit status, $before the
# events written before the signal, $took_ms from the kill (printed only:
# process teardown on a loaded machine is no measure of the layer).
kill_mid_run() {
    rm -f "$log" "$trace"
    start_bg "$tmp/out" env GPUTRACE_OUTPUT="$trace" \
        "$GT_WORKLOAD" --duration-ms 120000 --frames 1000000 --threads 2
    wait_for "$log" 'tracing started' 60
    wait_written_events "$trace" 60
    t0=$(now_ms)
    kill -"$1" $bg
    wait_bg $bg 60
    took_ms=$(($(now_ms) - t0))
    echo "SIG$1: exit status $rc, $took_ms ms after the signal; $before GPU events written before it"
}

trace=$tmp/trace.pftrace

case $case_name in
fifo)
    mkfifo "$tmp/fifo.pftrace"
    refused_run "$tmp/fifo.pftrace" 'is a FIFO'
    [ -p "$tmp/fifo.pftrace" ] || fail "the FIFO is gone"
    ;;

symlink)
    echo precious > "$tmp/target"
    ln -s "$tmp/target" "$tmp/link.pftrace"
    refused_run "$tmp/link.pftrace" 'is a symbolic link'
    [ "$(cat "$tmp/target")" = precious ] || fail "the link's target was written"
    [ -L "$tmp/link.pftrace" ] || fail "the link was replaced"
    ln -s "$tmp/nowhere" "$tmp/dangling.pftrace"
    refused_run "$tmp/dangling.pftrace" 'is a symbolic link'
    [ ! -e "$tmp/nowhere" ] || fail "the dangling link's target was created"
    ;;

directory-device)
    mkdir "$tmp/dir.pftrace"
    refused_run "$tmp/dir.pftrace" 'is a directory'
    [ -d "$tmp/dir.pftrace" ] && [ -z "$(ls -A "$tmp/dir.pftrace")" ] || fail "the directory changed"
    refused_run /dev/null 'is a device'
    [ -c /dev/null ] || fail "/dev/null is not a device any more"
    ;;

log-file)
    mkfifo "$tmp/log.fifo"
    echo precious > "$tmp/log.target"
    ln -s "$tmp/log.target" "$tmp/log.link"
    for lf in "$tmp/log.fifo" "$tmp/log.link"; do
        t0=$(now_ms)
        run_ok 60 env GPUTRACE_LOG_FILE="$lf" GPUTRACE_OUTPUT="$trace" \
            "$GT_WORKLOAD" --frames 2
        echo "GPUTRACE_LOG_FILE=$lf: $(($(now_ms) - t0)) ms"
        grep -q "cannot open GPUTRACE_LOG_FILE" "$tmp/err" ||
            fail "no warning that $lf was refused"
        check "$trace"
        [ "$events" -gt 0 ] || fail "nothing traced with GPUTRACE_LOG_FILE=$lf"
    done
    [ "$(cat "$tmp/log.target")" = precious ] || fail "the log link's target was written"
    [ -p "$tmp/log.fifo" ] || fail "the FIFO is gone"
    ;;

shared-path | pattern)
    need_exe "${GT_GPUTRACE_DUMP:-}" gputrace-dump
    rm -f "$log"
    if [ "$case_name" = shared-path ]; then
        path=$tmp/shared.pftrace
    else
        path="$tmp/p-%p-%e-%%.pftrace"
    fi
    # Long enough to overlap: each opens its file at vkCreateDevice and
    # holds it until it exits.
    pids=
    for i in 1 2 3; do
        start_bg "$tmp/out.$i" env GPUTRACE_OUTPUT="$path" \
            "$GT_WORKLOAD" --duration-ms 3000 --frames 1000000
        pids="$pids $bg"
    done
    expected=0
    for i in 1 2 3; do
        p=$(echo $pids | cut -d ' ' -f $i)
        wait_bg "$p" 120
        [ $rc -eq 0 ] || fail "workload $i (pid $p) exited with $rc"
        r=$(workload_field regions "$tmp/out.$i")
        [ -n "$r" ] || fail "no summary from workload $i"
        expected=$((expected + r))
        if [ "$case_name" = shared-path ]; then
            # The one that got the path, or its own beside it.
            if [ -f "$tmp/shared.$p.pftrace" ]; then
                f=$tmp/shared.$p.pftrace
                grep -q "shared.pftrace is being written by another process; writing $f instead" "$log" ||
                    fail "no info line about the fallback of pid $p"
            else
                f=$path
            fi
        else
            f="$tmp/p-$p-gputrace-workload-%.pftrace"
        fi
        check "$f" --expect-gpu-events "$r"
        [ $crc -eq 0 ] || fail "gputrace-check failed on $f"
        [ "$events" -eq "$r" ] || fail "$f: $events GPU events for pid $p's $r regions"
        # Only that process's submissions.
        "$GT_GPUTRACE_DUMP" --verbose "$f" > "$tmp/dump" 2>&1 || fail "gputrace-dump failed on $f"
        others=$(sed -n 's/.* pid=\([0-9]*\) .*/\1/p' "$tmp/dump" | sort -u | grep -v "^$p\$" || true)
        [ -z "$others" ] || fail "$f holds submissions of pid(s) $others besides $p's"
        grep -q " pid=$p " "$tmp/dump" || fail "$f holds no submission of pid $p"
    done
    files=$(ls "$tmp" | grep -c 'pftrace$')
    echo "$files trace files for 3 processes, $expected regions in all"
    [ "$files" -eq 3 ] || fail "$files trace files, expected 3: $(ls "$tmp" | grep 'pftrace$' | tr '\n' ' ')"
    if [ "$case_name" = shared-path ]; then
        # Nobody writes it now: a new run replaces it, as any tool would.
        rm -f "$log"
        before=$(ls "$tmp" | grep -c 'pftrace$')
        run_ok 60 env GPUTRACE_OUTPUT="$path" "$GT_WORKLOAD" --frames 2
        check "$path" --expect-gpu-events "$(workload_regions)"
        [ $crc -eq 0 ] || fail "gputrace-check failed on the replaced file"
        [ "$(ls "$tmp" | grep -c 'pftrace$')" -eq "$before" ] || fail "a finished file was not replaced"
        ! grep -q 'being written by another process' "$log" || fail "a finished file was taken as busy"
    else
        rm -f "$log"
        run_ok 60 env GPUTRACE_OUTPUT="$tmp/q-%q.pftrace" "$GT_WORKLOAD" --frames 2
        grep -q 'unknown %-escape' "$log" || fail "no warning about %q"
        [ -s "$tmp/q-%q.pftrace" ] || fail "no trace at q-%q.pftrace"
    fi
    ;;

full-disk)
    command -v prlimit > /dev/null || skip "prlimit not installed (Debian: util-linux)"
    limit=262144
    # The log and the program's output share the limit: warnings only.
    export GPUTRACE_LOG=warn
    rm -f "$log"
    run_ok 120 env GPUTRACE_OUTPUT="$trace" prlimit --fsize=$limit "$GT_WORKLOAD" --frames 300 --threads 2
    regions=$(workload_regions)
    size=$(wc -c < "$trace")
    echo "limit $limit bytes: trace $size bytes for $regions regions"
    cat "$log"
    [ "$size" -le $limit ] || fail "the trace is larger than the limit"
    grep -q "warning: writing trace file $trace failed: File too large" "$log" ||
        fail "no warning about the failed write"
    grep -q "write-out(s) failed, [0-9]* bytes of trace data dropped" "$log" ||
        fail "no summary of the failed writes"
    check "$trace" --allow-loss
    no_errors
    [ "$events" -lt "$regions" ] || fail "all $regions regions fit under the limit: raise the frames"
    # What is in the file parses to the end, and the loss is counted in it:
    # the last packets make room for a TraceStats with the failed flushes,
    # and the packets after each gap are marked.
    grep -q '"severity": "data_loss"' "$tmp/check" || fail "the loss is not reported"
    [ "${stats:-0}" -ge 1 ] || fail "no TraceStats in the file"
    json_violation_codes "$tmp/check" | grep -q flushes_failed || fail "TraceStats without failed flushes"
    grep -q 'cut off to make room for its TraceStats' "$log" || fail "no note about the packets cut for TraceStats"
    ;;

sigterm | sigint | sigterm-off)
    sig=TERM num=15
    [ "$case_name" != sigint ] || { sig=INT num=2; }
    [ "$case_name" != sigterm-off ] || export GPUTRACE_SIGNAL_WAIT_MS=0
    kill_mid_run $sig
    [ $rc -eq $((128 + num)) ] || fail "exit status $rc: the workload did not die of SIG$sig"
    check "$trace" --allow-loss
    no_errors
    if [ "$case_name" = sigterm-off ]; then
        grep -q 'SIGTERM: the trace is finished' "$log" && fail "a handler was installed with GPUTRACE_SIGNAL_WAIT_MS=0"
        [ "${stats:-0}" -eq 0 ] || fail "TraceStats without the handler: this case no longer shows what the handler adds"
    else
        grep -q "SIG$sig: the trace is finished before the default action" "$log" || fail "no handler for SIG$sig"
        # Whatever the write-outs had put there is still there.
        [ "${events:-0}" -ge "$before" ] || fail "$events GPU events in the trace, $before before the signal"
        [ "${stats:-0}" -ge 1 ] || fail "no TraceStats: the file was not finished"
    fi
    ;;

sigint-ignored)
    rm -f "$log" "$trace"
    if [ -n "$gt_preload" ]; then
        env --ignore-signal=INT --default-signal=TERM LD_PRELOAD="$gt_preload" GPUTRACE_OUTPUT="$trace" \
            "$GT_WORKLOAD" --duration-ms 60000 --frames 1000000 > "$tmp/out" 2>> "$tmp/err" &
    else
        env --ignore-signal=INT --default-signal=TERM GPUTRACE_OUTPUT="$trace" \
            "$GT_WORKLOAD" --duration-ms 60000 --frames 1000000 > "$tmp/out" 2>> "$tmp/err" &
    fi
    bg=$!
    wait_for "$log" 'tracing started' 60
    kill -INT $bg
    sleep 1
    kill -0 $bg 2> /dev/null || fail "SIGINT ended a program that ignores it"
    grep -q 'SIGINT is ignored by the application: left alone' "$log" || fail "no note about the ignored SIGINT"
    kill -TERM $bg
    wait_bg $bg 30
    [ $rc -eq 143 ] || fail "exit status $rc after SIGTERM"
    check "$trace" --allow-loss
    [ "${stats:-0}" -ge 1 ] || fail "no TraceStats after SIGTERM"
    ;;

app-handler-flag | app-handler-exit | app-handler-after)
    need_exe "${GT_SIGNAL_APP:-}" signal_app
    rm -f "$log" "$trace"
    case $case_name in
    app-handler-flag) set -- --handler before --on-signal flag ;;
    app-handler-exit) set -- --handler before --on-signal exit ;;
    app-handler-after) set -- --handler after --on-signal flag ;;
    esac
    start_bg "$tmp/out" env GPUTRACE_OUTPUT="$trace" "$GT_SIGNAL_APP" "$@"
    wait_for "$tmp/out" 'signal_app: ready' 60
    wait_written_events "$trace" 60
    kill -TERM $bg
    wait_bg $bg 60
    cat "$tmp/out"
    if [ "$case_name" = app-handler-exit ]; then
        # Its handler ran (after ours): nothing else prints that or exits 42.
        [ $rc -eq 42 ] || fail "exit status $rc, expected the handler's 42"
        grep -q 'signal_app: handler exit' "$tmp/out" || fail "the application's handler did not run"
        check "$trace" --allow-loss
        no_errors
        [ "${stats:-0}" -ge 1 ] || fail "no TraceStats before the application's handler ran"
        [ "${events:-0}" -ge "$before" ] || fail "$events GPU events in the trace, $before before the signal"
        exit 0
    fi
    [ $rc -eq 3 ] || fail "exit status $rc, expected 3 (the handler set its flag)"
    grep -q 'signal_app: signal=15 ' "$tmp/out" || fail "the application's handler did not see SIGTERM"
    regions=$(sed -n 's/^signal_app: .* regions=\([0-9]*\).*/\1/p' "$tmp/out")
    check "$trace" --expect-gpu-events "$regions"
    [ $crc -eq 0 ] || fail "gputrace-check failed after a clean shutdown"
    [ "$events" -eq "$regions" ] || fail "$events GPU events for $regions regions"
    if [ "$case_name" = app-handler-flag ]; then
        # One TraceStats when the signal came, the final one at the end.
        [ "$stats" -ge 2 ] || fail "$stats TraceStats: no interim one at the signal"
        grep -q 'SIGTERM: the trace is finished before the application' "$log" ||
            fail "the layer did not find the application's handler"
    else
        [ "$stats" -eq 1 ] || fail "$stats TraceStats: the layer's handler ran although replaced"
        grep -q 'SIGTERM: the application replaced the layer' "$log" ||
            fail "no note that the application replaced the handler"
    fi
    ;;

*)
    echo "unknown case $case_name" >&2
    exit 2
    ;;
esac
echo "PASS ($case_name)"
