#!/bin/sh
# SPDX-License-Identifier: MIT
# identity_test.sh CASE — whose the GPU work is (issue #16 items 2, 3):
#   embedded        one workload (2 threads, 2 queues), embedded backend: the
#                   trace lists the GPU in GpuInfo at the render stages' gpu_id
#                   with lavapipe's name, describes the process (name,
#                   command line) and every submitting thread, and has one
#                   vkQueueSubmit slice per submission on the submitter's
#                   track (context_check)
#   two-processes   two workloads at once through the system backend into
#                   gputrace-service, one trace: the same gpu_id in both,
#                   queue tracks named after each process and pid
#   stage-args      the workload's stage arguments (trace_check --print-args)
#                   and object names (gputrace-dump) in an embedded trace
#   names-repeated  object names written again after the workload slept
#                   8 s (the sequence's incremental state starts afresh once
#                   a second): the last copy of a name is dated after the
#                   sleep, not when the object was named, and gputrace-check
#                   finds no packets out of order
#   context-repeated  2.5 s of a two-thread workload: every sequence of
#                   CPU-side slices (the queue's vkQueueSubmit, the host
#                   waits) starts afresh and describes its tracks again at
#                   least once a second of its own timestamps, so a wrapped
#                   ring buffer keeps the process and thread tracks (and
#                   v47 the flows' extension descriptor)
#   trace-processor-v47, trace-processor-v58
#                   Perfetto's trace_processor_shell of that version on an
#                   embedded trace: process.name/cmdline, thread.name, the
#                   slices on the submitting threads' thread_track, the
#                   queues' tracks, no error or data_loss stat; v58 also
#                   the GPU in its gpu table (from GpuInfo). Needs that
#                   version (tests/perfetto/tp_lib.sh); SKIP without
# Environment (from meson): GT_WORKLOAD, GT_CONTEXT_CHECK, GT_EXPLICIT_DIR,
# GT_GPUTRACE_SERVICE, GT_TRACE_CHECK, GT_GPUTRACE_DUMP, GT_GPUTRACE_CHECK (these
# two may not be built). Exit 0 pass, 1 fail, 77 skip.
set -eu

case_name=${1:?usage: identity_test.sh CASE}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gputrace-identity.XXXXXX")
svc=
cleanup() {
    [ -z "$svc" ] || kill "$svc" 2> /dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
log=$tmp/gputrace.log
trace=$tmp/trace.pftrace
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lavapipe_env.sh"

export VK_ADD_LAYER_PATH="$GT_EXPLICIT_DIR" VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline
export GPUTRACE_LOG=info GPUTRACE_LOG_FILE="$log"
export PERFETTO_PRODUCER_SOCK_NAME="$tmp/producer.sock"
asan_keep_lavapipe "$GT_WORKLOAD"

# check TRACE: context_check must pass; its output in $tmp/check.
check() {
    "$GT_CONTEXT_CHECK" "$1" > "$tmp/check" 2>&1 || fail "context_check failed on $1"
    cat "$tmp/check"
}

# bg_workload NAME: gputrace-workload in the background, output in $tmp/NAME.out.
bg_workload() {
    if [ -n "$preload" ]; then
        LD_PRELOAD="$preload" "$GT_WORKLOAD" --frames 20 > "$tmp/$1.out" 2>&1 &
    else
        "$GT_WORKLOAD" --frames 20 > "$tmp/$1.out" 2>&1 &
    fi
}

# queues_used: how many queues the last run workload used (its stderr).
queues_used() {
    n=$(sed -n 's/.*, \([0-9]*\) queue(s) of family.*/\1/p' "$tmp/err")
    [ -n "$n" ] || fail "the workload did not say how many queues it used"
    echo "$n"
}

# gpu_line ID: the GpuInfo entry at index ID.
gpu_line() {
    grep "^gpu index=$1 " "$tmp/check" || true
}

case $case_name in
embedded)
    export GPUTRACE_OUTPUT=$trace
    run "$GT_WORKLOAD" --frames 3 --threads 2 --queues 2
    check "$trace"
    ids=$(sed -n 's/^stage_gpu_id //p' "$tmp/check")
    [ "$(echo "$ids" | wc -l)" -eq 1 ] && [ -n "$ids" ] || fail "render stages on gpu ids '$ids'"
    gpu_line "$ids" | grep -q ' name=llvmpipe' || fail "GpuInfo has no llvmpipe entry at gpu_id $ids"
    gpu_line "$ids" | grep -q ' vendor=Mesa ' || fail "lavapipe's vendor is not Mesa"
    gpu_line "$ids" | grep -q ' uuid=[0-9a-f]\{32\} ' || fail "no 16-byte uuid"
    gpu_line "$ids" | grep -q ' driver_name=llvmpipe' || fail "no driver_name"
    pid=$(sed -n 's/^process pid=\([0-9]*\) .*/\1/p' "$tmp/check")
    [ -n "$pid" ] || fail "no process descriptor"
    grep -q "^process pid=$pid name=gputrace-workload cmdline=$GT_WORKLOAD|--frames|3|--threads|2|--queues|2\$" \
        "$tmp/check" || fail "process descriptor without the workload's name and command line"
    [ "$(grep -c "^thread pid=$pid " "$tmp/check")" -ge 2 ] || fail "fewer than 2 thread descriptors"
    grep "^queue name=" "$tmp/check" | grep -qv "(gputrace-workload $pid)\$" &&
        fail "a queue track not named after the process"
    # --queues 2 asks for up to two: lavapipe has one, a hardware GPU may
    # have more; the workload says how many it used.
    nq=$(queues_used)
    [ "$(grep -c "^queue name=Vulkan queue 0\.[01] (gputrace-workload $pid)\$" "$tmp/check")" -eq "$nq" ] ||
        fail "not $nq queue track(s) named after the process"
    grep -q ' slices=[1-9]' "$tmp/check" || fail "no vkQueueSubmit slice"
    ;;

two-processes)
    [ -x "${GT_GPUTRACE_SERVICE:-}" ] || skip "gputrace-service not built"
    export GPUTRACE_BACKEND=system
    start_service "$trace"
    bg_workload a
    a=$!
    bg_workload b
    b=$!
    wait $a || fail "workload a failed: $(cat "$tmp/a.out")"
    wait $b || fail "workload b failed: $(cat "$tmp/b.out")"
    stop_service
    check "$trace"
    ids=$(sed -n 's/^stage_gpu_id //p' "$tmp/check")
    [ "$(echo "$ids" | wc -l)" -eq 1 ] && [ -n "$ids" ] ||
        fail "the two processes' render stages are on gpu ids '$(echo $ids)', not one"
    gpu_line "$ids" | grep -q ' name=llvmpipe' || fail "GpuInfo has no llvmpipe entry at gpu_id $ids"
    for p in $a $b; do
        grep -q "^process pid=$p name=gputrace-workload " "$tmp/check" || fail "no process $p"
        grep -q "^queue name=Vulkan queue 0\.0 (gputrace-workload $p)\$" "$tmp/check" ||
            fail "no queue track of process $p"
    done
    ;;

trace-processor-v*)
    version=${case_name#trace-processor-v}
    . "$here/../perfetto/tp_lib.sh"
    why=$(tp_missing "$version")
    [ -z "$why" ] || skip "$why"
    tp=$(tp_dir "$version")/trace_processor_shell
    echo "trace_processor v$version: $(tp_version_line "$version")"
    export GPUTRACE_OUTPUT=$trace
    run "$GT_WORKLOAD" --frames 3 --threads 2 --queues 2
    submissions=$(sed -n 's/.*submissions=\([0-9]*\).*/\1/p' "$tmp/out")
    [ -n "$submissions" ] || fail "no summary line"
    check "$trace" > /dev/null
    query() { # query SQL: the rows, no header
        printf '%s\n' "$1" > "$tmp/q.sql"
        "$tp" -q "$tmp/q.sql" "$trace" 2> "$tmp/tp.err" | tail -n +2 | tr -d '"'
    }
    got=$(query "select count(*) from stats where value > 0 and severity in ('error', 'data_loss')")
    [ "$got" = 0 ] || fail "error/data_loss stats: $(query "select name, value from stats where value > 0 and severity in ('error', 'data_loss')")"
    got=$(query "select name || ' ' || cmdline from process where cmdline like '%--queues 2'")
    echo "process: $got"
    case $got in
    *gputrace-workload" $GT_WORKLOAD --frames 3 --threads 2 --queues 2") ;;
    *) fail "process.name/cmdline: '$got'" ;;
    esac
    got=$(query "select count(distinct t.tid) from slice s join thread_track tt on s.track_id = tt.id
        join thread t using (utid) join process p using (upid)
        where s.name = 'vkQueueSubmit' and t.name = 'gputrace-worklo' and p.cmdline like '%--queues 2'")
    [ "$got" = 2 ] || fail "vkQueueSubmit slices on $got named threads of the workload, not 2"
    got=$(query "select count(*) from slice s join thread_track tt on s.track_id = tt.id
        where s.name = 'vkQueueSubmit' and s.dur >= 0 and extract_arg(s.arg_set_id, 'debug.submission_id') is not null")
    [ "$got" = "$submissions" ] || fail "$got vkQueueSubmit slices for $submissions submissions"
    nq=$(queues_used)
    # (v58 lays overlapping stages of one queue on further tracks of the
    # same name: queues are counted by name.)
    got=$(query "select count(distinct name) from gpu_track where name like 'Vulkan queue 0._ (gputrace-workload %)'")
    [ "$got" = "$nq" ] || fail "$got queue tracks named after the process, not $nq"
    if [ "$version" = 58 ]; then
        # GpuInfo: the stages' GPU, by the gpu id of their tracks.
        got=$(query "select count(*) from gpu g where g.name like 'llvmpipe%' and g.gpu in
            (select a.int_value from gpu_track t join args a on a.arg_set_id = t.dimension_arg_set_id
             where a.key = 'gpu' and t.name like 'Vulkan queue 0._ (gputrace-workload %)')")
        [ "$got" = 1 ] || fail "the gpu table holds $got llvmpipe row(s) at the stages' gpu id, not 1"
        echo "gpu: $(query "select name || ', ' || vendor || ', uuid ' || uuid from gpu")"
    fi
    ;;

stage-args)
    # Names and stage arguments as the trace carries them, without any
    # Perfetto binary (tests/perfetto/ checks what trace_processor makes of
    # them): trace_check --print-args lists each event's extra_data,
    # gputrace-dump the object names.
    export GPUTRACE_OUTPUT=$trace
    run "$GT_WORKLOAD" --frames 2
    "$GT_TRACE_CHECK" --print-args "$trace" > "$tmp/args" 2>&1 || fail "trace_check failed: $(tail -n 3 "$tmp/args")"
    has() { # WHAT PATTERN: some line of $tmp/args matches the extended regexp
        grep -Eq "$2" "$tmp/args" || fail "no $1 in the stage arguments (pattern: $2)"
    }
    has "dispatch with group counts and named pipeline" \
        '^stage_args stage=Dispatch api=vkCmdDispatch group_count_x=64 group_count_y=1 group_count_z=1 compute_pipeline=0x[0-9a-f]+ compute_pipeline_name=wl_compute_pipeline$'
    has "indirect dispatch" \
        '^stage_args stage=Dispatch api=vkCmdDispatchIndirect indirect_buffer=0x[0-9a-f]+ indirect_offset=0 '
    has "render pass with area, attachment, counts and pipeline" \
        '^stage_args stage=Render_pass api=vkCmdBeginRenderPass render_area_x=0 render_area_y=0 render_area_width=64 render_area_height=64 attachment_count=1 attachment_0_format=R8G8B8A8_UNORM attachment_0_load_op=LOAD attachment_0_store_op=STORE view_mask=0 subpass_count=2 draw_count=1 dispatch_count=0 graphics_pipeline=0x[0-9a-f]+ graphics_pipeline_name=wl_render_pass_pipeline$'
    has "dynamic rendering with its colour attachment" \
        '^stage_args stage=Dynamic_rendering .* color_attachment_0_format=R8G8B8A8_UNORM color_attachment_0_load_op=CLEAR color_attachment_0_store_op=STORE .*draw_count=1 '
    has "buffer copy bytes" '^stage_args stage=Copy api=vkCmdCopyBuffer regions=1 bytes=16384$'
    has "image copy texels" '^stage_args stage=Copy api=vkCmdCopyImageToBuffer regions=1 texels=4096$'
    has "fill bytes" '^stage_args stage=Fill api=vkCmdFillBuffer bytes=16384$'
    has "clear-attachments counts" '^stage_args stage=Clear api=vkCmdClearAttachments attachment_count=1 rect_count=1$'
    has "command buffer counts" '^stage_args stage=Command_buffer .*draw_count=0 dispatch_count=2$'
    # Label texts name their stages (one stage per text).
    for label in frame_0_compute frame_1_compute kernels clear overlay draw; do
        has "stage named after label '$label'" "^stage_args stage=$label\$"
    done
    grep -q '^stage_args stage=Debug_label' "$tmp/args" && fail "a label region kept the generic stage name"
    if [ -x "${GT_GPUTRACE_DUMP:-}" ]; then
        "$GT_GPUTRACE_DUMP" --verbose "$trace" > "$tmp/dump" 2>&1 || fail "gputrace-dump failed"
        for n in 'type=4 name="wl queue 0"' 'type=18 name="wl render pass"' \
            'type=19 name="wl compute pipeline"' 'type=6 name="wl compute cb 0"' \
            'type=24 name="wl framebuffer 0"' 'type=14 name="wl rp view 0"'; do
            grep -q "vk_debug_utils_object_name object=0x[0-9a-f]* $n" "$tmp/dump" ||
                fail "no object name $n in the trace"
        done
    fi
    ;;

names-repeated)
    for tool in "${GT_GPUTRACE_DUMP:-}" "${GT_GPUTRACE_CHECK:-}"; do
        [ -x "$tool" ] || { echo "SKIP: ${tool:-a toolkit program} is not built (needs glib)"; exit 77; }
    done
    # The workload names its objects before its first frame; its second
    # frame sleeps 8 s before its last submission. The collector starts its
    # sequence's incremental state afresh at that submission (more than a
    # second since the last time) and writes every name again, before the
    # submission's events.
    GPUTRACE_OUTPUT=$trace "$GT_WORKLOAD" --frames 2 --stall-every 2 --stall-ms 8000 \
        > "$tmp/out" 2>&1 || fail "workload failed: $(cat "$tmp/out")"
    "$GT_GPUTRACE_DUMP" --verbose "$trace" > "$tmp/dump" 2>&1 || fail "gputrace-dump failed"
    # The BOOTTIME of each packet naming the workload's queue, in file order.
    awk '/^[0-9]+ size=/ { ts = "" } / ts=[0-9]+ / { for (i = 1; i <= NF; i++)
             if ($i ~ /^ts=/) ts = substr($i, 4) }
         /vk_debug_utils_object_name .* type=4 name="wl queue 0"/ { print ts }' \
        "$tmp/dump" > "$tmp/named"
    copies=$(wc -l < "$tmp/named")
    [ "$copies" -ge 2 ] || fail "the queue's name was written $copies time(s); the test needs a repeat"
    first=$(head -n 1 "$tmp/named")
    last=$(tail -n 1 "$tmp/named")
    echo "queue name written $copies times; the last copy dated $(((last - first) / 1000000)) ms after the first"
    # The last copy precedes the events of the submission after the sleep,
    # so it is dated after the sleep began (less the clock model's slack,
    # microseconds): at least 7 s after the object was named, whatever the
    # machine's load. Dated when it was named, it lies 8 s behind the
    # packets written before it.
    [ $((last - first)) -ge 7000000000 ] ||
        fail "the repeated name is dated $(((last - first) / 1000000)) ms after the first: when the object was named, not where it was written again"
    "$GT_GPUTRACE_CHECK" --no-progress "$trace" > "$tmp/check" 2>&1 ||
        fail "gputrace-check failed: $(cat "$tmp/check")"
    if grep -q packets_out_of_order "$tmp/check"; then
        fail "gputrace-check: $(grep packets_out_of_order "$tmp/check")"
    fi
    ;;

context-repeated)
    [ -x "${GT_GPUTRACE_DUMP:-}" ] || { echo "SKIP: gputrace-dump is not built (needs glib)"; exit 77; }
    GPUTRACE_OUTPUT=$trace "$GT_WORKLOAD" --threads 2 --queues 1 --frames 100000 \
        --duration-ms 2500 > "$tmp/out" 2>&1 || fail "workload failed: $(cat "$tmp/out")"
    "$GT_GPUTRACE_DUMP" --verbose "$trace" > "$tmp/dump" 2>&1 || fail "gputrace-dump failed"
    # Per sequence: its restarts (a track descriptor that clears the
    # incremental state: the process's), and the widest distance from the
    # last restart to a slice begun after it. The layer starts a sequence
    # afresh at the first slice a second or more past its last restart, so
    # by its own timestamps no slice is a second away from one, however
    # slowly the program ran.
    awk '/^[0-9]+ size=/ {
             seq = ""; ts = ""
             for (i = 1; i <= NF; i++) {
                 if ($i ~ /^seq=/) seq = substr($i, 5)
                 if ($i ~ /^ts=/) ts = substr($i, 4)
             }
             if ($0 ~ / \[cleared\] track_descriptor$/) { last[seq] = ts; restarts[seq]++ }
             next
         }
         /^    track_event: 9=1 / && (seq in last) {
             d = ts - last[seq]
             if (d > worst[seq]) worst[seq] = d
             slices[seq]++
         }
         END { for (s in restarts) printf "%s %d %d %.0f\n", s, restarts[s], slices[s], worst[s] }' \
        "$tmp/dump" > "$tmp/restarts"
    [ -s "$tmp/restarts" ] || fail "no sequence of CPU-side slices in the trace"
    while read -r seq restarts slices worst; do
        echo "sequence $seq: $restarts restarts, $slices slices, the farthest $((worst / 1000000)) ms after its restart"
        [ "$worst" -lt 1000000000 ] ||
            fail "sequence $seq: a slice $((worst / 1000000)) ms after the last restart: its tracks were described only at its start"
    done < "$tmp/restarts"
    awk '$2 >= 2 && $3 > 0 { n++ } END { exit n >= 2 ? 0 : 1 }' "$tmp/restarts" ||
        fail "fewer than two sequences (the queue's, the host waits') with slices restarted twice in 2.5 s"
    ;;

*)
    echo "identity_test.sh: unknown case '$case_name'" >&2
    exit 2
    ;;
esac
echo "PASS ($case_name)"
