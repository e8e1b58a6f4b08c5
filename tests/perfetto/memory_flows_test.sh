#!/bin/bash
# SPDX-License-Identifier: MIT
# memory_flows_test.sh CASE — Vulkan memory events and flows (issue #28)
# as Perfetto v58's trace_processor imports them, checked with SQL against
# what the programs say they did; Perfetto v47 must import the same trace
# with no error or data_loss stat.
#
#   workload      gputrace-workload --threads 2 --queues 2
#                 --cross-queue-semaphore under the embedded backend with
#                 GPUTRACE_MEMORY=1, VK_LAYER_GPUTRACE_cmdcheck below the
#                 layer offering two queues (lavapipe has one)
#   traced        the same through v58's traced: one session running both
#                 data sources, gpu.renderstages and vulkan.memory_tracker
#   late-session  a session of v58's traced that starts after the workload
#                 made its objects and stops before it frees them: the
#                 snapshot of what was alive, then the frames
#   cases         tests/layer/timeline_cases (re-submissions, batches,
#                 simultaneous use, suspended rendering, two VkDevices)
#                 under the embedded backend with GPUTRACE_MEMORY=1
#
# Memory (the workload's memory line: allocations=A bytes=B buffers=U
# images=I heap0=H): A rows CREATE and A rows DESTROY of GPU_DEVICE_MEMORY
# summing to B each, U buffers and I images created, bound and destroyed
# bound, every row of the workload's process; v58's counters per memory
# type and the layer's per heap rise to what was allocated or bound and end
# at 0; "Vulkan heap 0 size" is H; names as annotations.
# Flows (the summary line: submissions=S, semaphore_waits=W, host_waits=H):
# S links vkQueueSubmit -> its own "Command buffer" stage (same
# submission_id), W links stage -> stage between the two queues (the
# waiting stage starts after the signalling one ended), H links stage ->
# vkWaitSemaphores, S links stage -> vkWaitForFences, and vkDeviceWaitIdle
# names both queues' last stages. Comparing a stage's time with another's
# or with the host's allows for the clock conversion: GPU stages are placed
# on the trace clock within GPUTRACE_CLOCK_BUDGET_NS (1 us) plus the
# calibration's deviation (SLACK below).
#
# Environment (meson.build): GT_WORKLOAD, GT_CASES, GT_EXPLICIT_DIR,
# GT_CMDCHECK_DIR; PERFETTO_V58_BIN (and PERFETTO_BIN for v47) through
# tp_lib.sh. Without v58: SKIP (77). Exit 0 pass, 1 fail, 77 skip.
set -eu

case_name=${1:?usage: memory_flows_test.sh workload|traced|late-session|cases}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gputrace-memory-flows.XXXXXX")
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
    wait 2> /dev/null || true
    [ -z "${GT_KEEP:-}" ] || cp -r "$tmp" "$GT_KEEP"
    rm -rf "$tmp"
}
trap cleanup EXIT
log=$tmp/gputrace.log
trace=$tmp/trace.pftrace

. "$here/../layer/lavapipe_env.sh"
. "$here/tp_lib.sh"

why=$(tp_missing 58 traced perfetto)
[ -z "$why" ] || skip "$why"
export PERFETTO_PRODUCER_SOCK_NAME=$tmp/producer.sock PERFETTO_CONSUMER_SOCK_NAME=$tmp/consumer.sock
export VK_ADD_LAYER_PATH="$GT_EXPLICIT_DIR:$GT_CMDCHECK_DIR"
export VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline:VK_LAYER_GPUTRACE_cmdcheck
export GPUTRACE_CMDCHECK_QUEUES=2
export GPUTRACE_LOG=info GPUTRACE_LOG_FILE="$log"
asan_keep_lavapipe "$GT_WORKLOAD"
preload_env=()
[ -z "$preload" ] || preload_env=(LD_PRELOAD="$preload")

checks=0
SLACK=2000 # ns, see the top
# expect WHAT VALUE SQL: v58's whole answer must be VALUE.
expect() {
    printf '%s\n' "$3" > "$tmp/q.sql"
    local got
    got=$(tp_query 58 "$tmp/q.sql" "$trace") || fail "trace_processor v58 failed on: $3"
    checks=$((checks + 1))
    [ "$got" = "$2" ] || fail "$1: expected '$2', trace_processor v58 answers '$got' to: $3"
    echo "ok: $1: $(printf '%s' "$got" | tr '\n' ' ')"
}

# field FILE NAME: a figure NAME=N of the program's output.
field() {
    sed -n "s/.* $2=\([0-9]*\).*/\1/p" "$1" | head -n 1
}

# v47 and v58 import the trace with no error or data_loss stat.
check_stats() {
    printf '%s\n' "select name || '=' || value from stats where severity in ('error', 'data_loss')
                     and value > 0 order by name" > "$tmp/stats.sql"
    local v got why
    for v in $(tp_versions); do
        why=$(tp_missing "$v")
        if [ -n "$why" ]; then
            echo "stats: not checked in trace_processor v$v: $why"
            continue
        fi
        got=$(tp_query "$v" "$tmp/stats.sql" "$trace") || fail "trace_processor v$v cannot import the trace"
        [ -z "$got" ] || fail "trace_processor v$v: error/data_loss stats: $(echo $got)"
        echo "ok: trace_processor v$v ($(tp_version_line "$v")): no error or data_loss stat"
        checks=$((checks + 1))
    done
}

# The rows of one process (PID) in vulkan_memory_allocations.
rows_of() {
    echo "(select m.* from vulkan_memory_allocations m join process p using (upid) where p.pid = $1)"
}

# check_memory OUT PID: what the workload's memory line says, in the trace.
check_memory() {
    local out=$1 pid=$2 allocations bytes buffers images heap0 m
    allocations=$(field "$out" allocations)
    bytes=$(field "$out" bytes)
    buffers=$(field "$out" buffers)
    images=$(field "$out" images)
    heap0=$(field "$out" heap0)
    [ -n "$allocations" ] && [ -n "$bytes" ] && [ -n "$buffers" ] && [ -n "$images" ] ||
        fail "no memory line from the workload: $(cat "$out")"
    [ "$allocations" -gt 0 ] || fail "the workload allocated nothing"
    m=$(rows_of "$pid")
    expect "every memory event of the workload's process" 0 \
        "select count(*) from vulkan_memory_allocations m left join process p using (upid)
         where p.pid is not $pid"
    expect "allocations (count, bytes)" "$allocations,$bytes" \
        "select count(*), sum(memory_size) from $m where source = 'GPU_DEVICE_MEMORY'
           and operation = 'CREATE'"
    expect "frees (count, bytes)" "$allocations,$bytes" \
        "select count(*), sum(memory_size) from $m where source = 'GPU_DEVICE_MEMORY'
           and operation = 'DESTROY'"
    expect "buffers created, bound, destroyed bound" "$buffers,$buffers,$buffers" \
        "select sum(operation = 'CREATE'), sum(operation = 'BIND'), sum(operation = 'DESTROY_BOUND')
         from $m where source = 'GPU_BUFFER'"
    expect "images created, bound, destroyed bound" "$images,$images,$images" \
        "select sum(operation = 'CREATE'), sum(operation = 'BIND'), sum(operation = 'DESTROY_BOUND')
         from $m where source = 'GPU_IMAGE'"
    expect "every memory event names its function" 0 \
        "select count(*) from $m where function_name is null"
    expect "binds name their memory's type and heap" 0 \
        "select count(*) from $m where operation in ('BIND', 'DESTROY_BOUND')
           and (memory_type is null or heap is null or device_memory is null)"
    # Perfetto's own counters, one per memory type: up to what was
    # allocated (bound) of that type, back to 0.
    expect "v58's allocation counters: peak = allocated per type, last = 0" "" \
        "select t.name from counter_track t where t.type = 'vulkan_device_mem_allocation'
           and ((select max(value) from counter where track_id = t.id) is not
                (select sum(memory_size) from $m where source = 'GPU_DEVICE_MEMORY'
                 and operation = 'CREATE'
                 and t.name = 'vulkan.mem.device.memory.type.' || memory_type || '.allocation')
             or (select value from counter where track_id = t.id order by ts desc limit 1) <> 0)"
    expect "v58's bind counters: peak = bound per type, last = 0" "" \
        "select t.name from counter_track t where t.type = 'vulkan_device_mem_bind'
           and ((select max(value) from counter where track_id = t.id) is not
                (select sum(memory_size) from $m where operation = 'BIND'
                 and t.name = 'vulkan.mem.device.memory.type.' || memory_type || '.bind')
             or (select value from counter where track_id = t.id order by ts desc limit 1) <> 0)"
    expect "allocation counters exist" 1 \
        "select count(*) > 0 from counter_track where type = 'vulkan_device_mem_allocation'"
    # The layer's own per-heap counters, under the process.
    expect "'Vulkan heap 0 allocated' peaks at the bytes allocated, ends at 0" "$bytes,0" \
        "select cast(max(c.value) as int) as peak,
                (select cast(value as int) from counter where track_id = t.id order by ts desc limit 1) as last
         from process_counter_track t join process p using (upid) join counter c on c.track_id = t.id
         where p.pid = $pid and t.name = 'Vulkan heap 0 allocated'"
    local bound
    bound=$(echo "select sum(memory_size) from $m where operation = 'BIND' and heap = 0" | tp_sql)
    expect "'Vulkan heap 0 bound' peaks at the bytes bound, ends at 0" "$bound,0" \
        "select cast(max(c.value) as int) as peak,
                (select cast(value as int) from counter where track_id = t.id order by ts desc limit 1) as last
         from process_counter_track t join process p using (upid) join counter c on c.track_id = t.id
         where p.pid = $pid and t.name = 'Vulkan heap 0 bound'"
    expect "'Vulkan heap 0 size' is the heap's size" "$heap0" \
        "select distinct cast(c.value as int) from process_counter_track t join process p using (upid)
         join counter c on c.track_id = t.id where p.pid = $pid and t.name = 'Vulkan heap 0 size'"
    expect "heap counters are in bytes" "bytes" \
        "select distinct unit from counter_track where name glob 'Vulkan heap *'"
    # wl_names.c names every buffer, image and allocation once it is made:
    # an event says so (or the snapshot has it, when the session started
    # in between), and the later ones carry the name.
    expect "every buffer and image named" "$((buffers + images))" \
        "select count(distinct object_handle) from $m where source in ('GPU_BUFFER', 'GPU_IMAGE')
           and extract_arg(arg_set_id, 'name') glob 'wl *'"
    expect "every allocation named" "$allocations" \
        "select count(distinct device_memory) from $m where source = 'GPU_DEVICE_MEMORY'
           and extract_arg(arg_set_id, 'name') glob 'wl *'"
    expect "every buffer and image destroyed with its name" 0 \
        "select count(*) from $m where operation = 'DESTROY_BOUND'
           and extract_arg(arg_set_id, 'name') is null"
}

# tp_sql: v58's answer to the SQL on stdin.
tp_sql() {
    cat > "$tmp/sub.sql"
    tp_query 58 "$tmp/sub.sql" "$trace"
}

# The flows of the trace with what each end is.
FLOWS="(select so.name as oname, si.name as iname, tso.type as otype, tsi.type as itype,
               so.ts as ots, so.dur as odur, si.ts as its, si.dur as idur,
               so.arg_set_id as oargs, si.arg_set_id as iargs, tso.name as otrack,
               tsi.name as itrack
        from flow f join slice so on so.id = f.slice_out join track tso on tso.id = so.track_id
        join slice si on si.id = f.slice_in join track tsi on tsi.id = si.track_id)"

# check_flows OUT: what the workload's summary line says, as flows.
check_flows() {
    local out=$1 submissions waits host
    submissions=$(field "$out" submissions)
    waits=$(field "$out" semaphore_waits)
    host=$(field "$out" host_waits)
    [ -n "$submissions" ] && [ -n "$waits" ] && [ -n "$host" ] ||
        fail "no submissions/semaphore_waits/host_waits in the workload's summary: $(cat "$out")"
    expect "submit -> its command buffer, one per submission" "$submissions,0" \
        "select count(*) as n, sum(extract_arg(oargs, 'debug.submission_id')
                                   <> extract_arg(iargs, 'submission_id')) as mismatched
         from $FLOWS where oname = 'vkQueueSubmit' and iname = 'Command buffer'
           and itype = 'gpu_render_stage'"
    expect "no other flow from a submit" 0 \
        "select count(*) from $FLOWS where oname = 'vkQueueSubmit' and iname <> 'Command buffer'"
    expect "semaphore waits: stage -> stage across the two queues" "$waits,$waits,0" \
        "select count(*) as n, sum(otrack <> itrack) as across, sum(its + $SLACK < ots + odur) as early
         from $FLOWS where otype = 'gpu_render_stage' and itype = 'gpu_render_stage'"
    expect "both queues in the trace" 2 \
        "select count(distinct name) from gpu_track where name glob 'Vulkan queue 0.*'"
    # (The render pass runs on the queue after the thread's own: 0.1 for
    # the first thread, 0.0 for the second.)
    expect "host waits on the timeline semaphore: render pass -> vkWaitSemaphores" "$host" \
        "select count(*) from $FLOWS where iname = 'vkWaitSemaphores'
           and otype = 'gpu_render_stage' and otrack glob 'Vulkan queue 0.*'"
    expect "fence waits: each frame's stages -> vkWaitForFences" "$submissions" \
        "select count(*) from $FLOWS where iname = 'vkWaitForFences' and otype = 'gpu_render_stage'"
    expect "host waits end after what they waited for" 0 \
        "select count(*) from $FLOWS where itype <> 'gpu_render_stage' and iname glob 'vkWait*'
           and its + idur + $SLACK < ots + odur"
    expect "vkDeviceWaitIdle names both queues' last stages" 2 \
        "select count(distinct otrack) from $FLOWS where iname = 'vkDeviceWaitIdle'"
}

wait_for() { # FILE PATTERN SECONDS
    local i
    for ((i = 0; i < $3 * 20; i++)); do
        grep -q "$2" "$1" 2> /dev/null && return 0
        sleep 0.05
    done
    return 1
}

start_traced() {
    "$(tp_dir 58)/traced" > "$tmp/traced.log" 2>&1 &
    pids+=($!)
    wait_for "$tmp/traced.log" "Started traced" 5 || fail "traced did not start: $(cat "$tmp/traced.log")"
}

start_session() {
    "$(tp_dir 58)/perfetto" --txt -c "$here/memory_flows.cfg.txt" -o "$trace" \
        > "$tmp/perfetto.log" 2>&1 &
    perfetto_pid=$!
    wait_for "$tmp/perfetto.log" "Connected to the Perfetto traced service" 5 ||
        fail "perfetto did not connect: $(cat "$tmp/perfetto.log")"
}

stop_session() {
    kill -INT "$perfetto_pid"
    wait "$perfetto_pid" || fail "perfetto failed: $(cat "$tmp/perfetto.log")"
    [ -s "$trace" ] || fail "perfetto wrote no trace: $(cat "$tmp/perfetto.log")"
}

workload_args=(--frames 3 --threads 2 --queues 2 --cross-queue-semaphore)

run_workload() { # NAME ARGS...: in the foreground; its pid in $workload_pid
    local name=$1
    shift
    env "${preload_env[@]}" "$GT_WORKLOAD" "$@" > "$tmp/$name.out" 2> "$tmp/$name.err" &
    workload_pid=$!
    wait "$workload_pid" || fail "gputrace-workload failed: $(cat "$tmp/$name.out" "$tmp/$name.err")"
    grep -q '2 queue(s) of family' "$tmp/$name.err" ||
        fail "the workload did not get two queues (cmdcheck's GPUTRACE_CMDCHECK_QUEUES): $(cat "$tmp/$name.err")"
    grep 'gputrace-workload: ' "$tmp/$name.out"
}

case $case_name in
workload)
    export GPUTRACE_OUTPUT="$trace" GPUTRACE_MEMORY=1
    run_workload w1 "${workload_args[@]}"
    check_stats
    check_memory "$tmp/w1.out" "$workload_pid"
    check_flows "$tmp/w1.out"
    ;;
traced)
    start_traced
    start_session
    export GPUTRACE_BACKEND=system GPUTRACE_STARTUP_WAIT_MS=5000
    run_workload w1 "${workload_args[@]}"
    stop_session
    check_stats
    check_memory "$tmp/w1.out" "$workload_pid"
    check_flows "$tmp/w1.out"
    ;;
late-session)
    # The workload makes every object at its start and frees them at its
    # end; the session runs in between.
    start_traced
    export GPUTRACE_BACKEND=system
    env "${preload_env[@]}" "$GT_WORKLOAD" --duration-ms 5000 --queues 2 --cross-queue-semaphore \
        > "$tmp/w1.out" 2> "$tmp/w1.err" &
    workload_pid=$!
    wait_for "$log" "the service has no session for" 10 ||
        fail "the layer did not hear from traced: $(cat "$log")"
    sleep 1
    start_session
    wait_for "$log" "tracing started (data source vulkan.memory_tracker" 10 ||
        fail "the session did not start vulkan.memory_tracker: $(cat "$log")"
    sleep 1
    stop_session
    wait "$workload_pid" || fail "gputrace-workload failed: $(cat "$tmp/w1.out" "$tmp/w1.err")"
    grep 'gputrace-workload: ' "$tmp/w1.out"
    check_stats
    allocations=$(field "$tmp/w1.out" allocations)
    bytes=$(field "$tmp/w1.out" bytes)
    buffers=$(field "$tmp/w1.out" buffers)
    images=$(field "$tmp/w1.out" images)
    m=$(rows_of "$workload_pid")
    expect "the snapshot: every allocation, alive before the session" "$allocations,$bytes" \
        "select count(*), sum(memory_size) from $m where source = 'GPU_DEVICE_MEMORY'
           and operation = 'CREATE' and extract_arg(arg_set_id, 'before_session') = 1"
    expect "the snapshot: every buffer and image, created and bound" \
        "$buffers,$buffers,$images,$images" \
        "select sum(source = 'GPU_BUFFER' and operation = 'CREATE') as a,
                sum(source = 'GPU_BUFFER' and operation = 'BIND') as b,
                sum(source = 'GPU_IMAGE' and operation = 'CREATE') as c,
                sum(source = 'GPU_IMAGE' and operation = 'BIND') as d
         from $m where extract_arg(arg_set_id, 'before_session') = 1"
    expect "nothing freed while the session ran" 0 \
        "select count(*) from $m where operation in ('DESTROY', 'DESTROY_BOUND')"
    expect "'Vulkan heap 0 allocated' starts at what was alive" "$bytes" \
        "select cast(c.value as int) from process_counter_track t join process p using (upid)
         join counter c on c.track_id = t.id where p.pid = $workload_pid
           and t.name = 'Vulkan heap 0 allocated' order by c.ts limit 1"
    # (One value per snapshot event, all at the snapshot's time.)
    expect "v58's allocation counter starts there too" "$bytes" \
        "select cast(max(c.value) as int) from counter_track t join counter c on c.track_id = t.id
         where t.type = 'vulkan_device_mem_allocation'
           and c.ts = (select min(ts) from counter where track_id = t.id)"
    expect "flows of the frames traced: submit -> command buffer" 1 \
        "select count(*) > 0 from $FLOWS where oname = 'vkQueueSubmit' and iname = 'Command buffer'"
    ;;
cases)
    export GPUTRACE_OUTPUT="$trace" GPUTRACE_MEMORY=1
    unset GPUTRACE_CMDCHECK_QUEUES
    env "${preload_env[@]}" "$GT_CASES" > "$tmp/c.out" 2> "$tmp/c.err" ||
        fail "timeline_cases failed: $(cat "$tmp/c.out" "$tmp/c.err")"
    grep 'timeline_cases: events=' "$tmp/c.out"
    check_stats
    # Every stage a submission's slice names is a stage of that submission
    # (event ids unique across the two devices), and every top stage
    # ("Command buffer", or "Submission" for simultaneous use) has its
    # submit.
    expect "submit -> stage flows stay in their submission" 0 \
        "select count(*) from $FLOWS where oname = 'vkQueueSubmit'
           and extract_arg(oargs, 'debug.submission_id') <> extract_arg(iargs, 'submission_id')"
    expect "every command buffer and submission stage has exactly one submit" "" \
        "select s.id from slice s join gpu_track t on s.track_id = t.id
         where s.name in ('Command buffer', 'Submission')
           and (select count(*) from flow f join slice o on o.id = f.slice_out
                where f.slice_in = s.id and o.name = 'vkQueueSubmit') <> 1"
    # (The thread's vkQueueSubmit slices, not those of the Vulkan Events
    # track.)
    expect "every submit slice names some stage" "" \
        "select s.id from slice s join thread_track t on s.track_id = t.id
         where s.name = 'vkQueueSubmit'
           and not exists (select 1 from flow f where f.slice_out = s.id)"
    # (A "Submission" span ends with a timestamp of the layer's own command
    # buffer, submitted after the application's batch: it may end after the
    # batch's fence signalled.)
    expect "every fence wait names what it waited for, finished before it returned" "" \
        "select s.id from slice s where s.name = 'vkWaitForFences'
           and not exists (select 1 from flow f join slice o on o.id = f.slice_out
                           where f.slice_in = s.id and (o.ts + o.dur <= s.ts + s.dur + $SLACK
                                                        or o.name = 'Submission'))"
    expect "both devices' last stages named by vkDeviceWaitIdle" 1 \
        "select count(*) >= 2 from $FLOWS where iname = 'vkDeviceWaitIdle'"
    expect "memory events of both devices" 2 \
        "select count(distinct device) from vulkan_memory_allocations"
    expect "every allocation freed" "0" \
        "select sum(operation = 'CREATE') - sum(operation = 'DESTROY') as left from vulkan_memory_allocations
         where source = 'GPU_DEVICE_MEMORY'"
    ;;
*)
    echo "memory_flows_test.sh: unknown case $case_name" >&2
    exit 2
    ;;
esac
echo "PASS ($case_name): $checks SQL checks"
