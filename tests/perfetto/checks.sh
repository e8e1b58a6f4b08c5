# SPDX-License-Identifier: MIT
# checks.sh — sourced by perfetto_test.sh: SQL checks of a workload trace
# as trace_processor_shell ($tp) imports it. Every expected value comes
# from the workload's own summary line or from its pid, never from the
# trace itself.

checks=0

# sql QUERY: trace_processor's rows for one statement, without the header
# line and the quotes, fields separated by ','.
sql() {
    printf '%s\n' "$1" > "$tmp/q.sql"
    "$tp" -q "$tmp/q.sql" "$trace" > "$tmp/q.csv" 2> "$tmp/q.err" ||
        fail "trace_processor failed on: $1: $(grep -v '^\[' "$tmp/q.err" | tail -n 3)"
    tail -n +2 "$tmp/q.csv" | tr -d '"'
}

# expect WHAT VALUE QUERY: the query's whole answer must be VALUE.
expect() {
    local got
    got=$(sql "$3") || exit 1
    checks=$((checks + 1))
    [ "$got" = "$2" ] || fail "$1: expected '$2', trace_processor answers '$got' to: $3"
    echo "ok: $1: $(printf '%s' "$got" | tr '\n' ' ')"
}

# expect_nonzero WHAT QUERY: a single positive number.
expect_nonzero() {
    local got
    got=$(sql "$2") || exit 1
    checks=$((checks + 1))
    [ -n "$got" ] && [ "$got" -gt 0 ] 2> /dev/null ||
        fail "$1: expected a positive count, trace_processor answers '$got' to: $2"
    echo "ok: $1: $got"
}

summary_field() { # NAME FIELD: a figure from the workload's summary line
    sed -n "s/.*: .* $2=\([0-9]*\).*/\1/p; s/.*: $2=\([0-9]*\).*/\1/p" "$tmp/$1.out" | head -n 1
}

# The render-stage slices (the vkQueueSubmit slices sit on the "Vulkan
# Events" track, scope vulkan_events) and the submit slices of one pid.
stages_of() { # PID
    echo "(select s.* from gpu_slice s join gpu_track t on s.track_id = t.id
            join process p on s.upid = p.upid
            where t.scope = 'gpu_render_stage' and p.pid = $1)"
}
submits_of() { # PID
    echo "(select s.* from gpu_slice s join gpu_track t on s.track_id = t.id
            join args a on a.arg_set_id = s.arg_set_id and a.key = 'pid'
            where t.scope = 'vulkan_events' and s.name = 'vkQueueSubmit'
              and a.int_value = $1)"
}

# check_one_workload MODE NAME PID: the slices, tracks and process of one
# workload process.
check_one_workload() {
    local mode=$1 name=$2 pid=$3 frames submissions regions st sub
    frames=$(summary_field "$name" frames)
    submissions=$(summary_field "$name" submissions)
    regions=$(summary_field "$name" regions)
    [ -n "$regions" ] && [ -n "$submissions" ] && [ -n "$frames" ] ||
        fail "$name: no frames/submissions/regions in its summary line"
    st=$(stages_of "$pid")
    sub=$(submits_of "$pid")

    expect "$name: one process row for pid $pid" 1 \
        "select count(*) from process where pid = $pid"
    if [ "$mode" = traced ]; then
        # traced_probes' scan names it after its command line.
        expect "$name: process name" 1 \
            "select count(*) from process where pid = $pid and name like '%gputrace-workload'"
    fi
    expect "$name: render-stage slices = the workload's regions" "$regions" \
        "select count(*) from $st"
    expect "$name: vkQueueSubmit slices = its submissions" "$submissions" \
        "select count(*) from $sub"
    expect "$name: command buffers, one per submission" "$submissions" \
        "select count(*) from $st where name = 'Command buffer'"
    # Each frame: a render pass, dynamic rendering (Vulkan 1.3: lavapipe
    # has it), dispatches, copies.
    local stage
    for stage in 'Render pass' 'Dynamic rendering' 'Dispatch' 'Copy'; do
        expect "$name: '$stage' slices, at least one per frame" 1 \
            "select count(*) >= $frames from $st where name = '$stage'"
    done
    expect "$name: command buffers at depth 0, nothing else" 0 \
        "select count(*) from $st where (depth = 0) <> (name = 'Command buffer')"
    # trace_processor converts a stage's start through the clock snapshot
    # nearest before it and adds the duration as it is: a child whose start
    # lies past a newer snapshot than its parent's moves by the drift
    # between the two (a few ns), so its edges may stick out by that much.
    expect "$name: every nested slice inside a slice of its own submission (±1 µs)" 0 \
        "select count(*) from $st s join gpu_slice p on s.parent_id = p.id
         where s.depth > 0 and (p.submission_id <> s.submission_id or p.ts > s.ts + 1000
                                or p.ts + p.dur + 1000 < s.ts + s.dur)"
    expect "$name: render passes, dispatches, copies nested in their command buffer" 0 \
        "select count(*) from $st where depth < 1
           and name in ('Render pass', 'Dynamic rendering', 'Dispatch', 'Copy')"
    expect "$name: every render-stage slice carries its stage description" 0 \
        "select count(*) from $st s where not exists (select 1 from args a
           where a.arg_set_id = s.arg_set_id and a.key = 'description')"
    expect "$name: submission ids of the stages are those of its vkQueueSubmit slices" 0 \
        "select count(*) from $st where submission_id not in (select submission_id from $sub)"
    expect "$name: its stages on one queue track, named after it" "Vulkan queue 0.0 (gputrace-workload $pid)" \
        "select distinct t.name from $st s join gpu_track t on s.track_id = t.id"
    # Names (docs/layer.md, "Names"): label texts name their slices,
    # vkSetDebugUtilsObjectNameEXT names fill gpu_slice's *_name columns
    # (the workload's names: tests/workload/wl_names.c).
    expect "$name: a 'kernels' label slice per frame" "$frames" \
        "select count(*) from $st where name = 'kernels'"
    expect "$name: no stage named after an unnamed label" 0 \
        "select count(*) from $st where name = 'Debug label'"
    expect "$name: every stage names its command buffer" 0 \
        "select count(*) from $st where command_buffer_name is null
           or command_buffer_name not like 'wl % cb 0'"
    expect "$name: render passes name their render pass and framebuffer" 0 \
        "select count(*) from $st where name = 'Render pass'
           and (render_pass_name is not 'wl render pass'
                or render_target_name is not 'wl framebuffer 0')"
    # Stage arguments (docs/layer.md, "Stage arguments").
    expect "$name: dispatches carry their group counts or indirect buffer, and the pipeline" 0 \
        "select count(*) from $st s where name = 'Dispatch'
           and (extract_arg(s.arg_set_id, 'compute_pipeline_name') is not 'wl compute pipeline'
                or (extract_arg(s.arg_set_id, 'group_count_x') is null
                    and extract_arg(s.arg_set_id, 'indirect_buffer') is null))"
    expect "$name: dynamic rendering names its attachment's format and load op" 0 \
        "select count(*) from $st s where name = 'Dynamic rendering'
           and (extract_arg(s.arg_set_id, 'color_attachment_0_format') is not 'R8G8B8A8_UNORM'
                or extract_arg(s.arg_set_id, 'color_attachment_0_load_op') is not 'CLEAR'
                or extract_arg(s.arg_set_id, 'draw_count') is not '1')"
    expect "$name: render passes carry their area and draw count" 0 \
        "select count(*) from $st s where name = 'Render pass'
           and (extract_arg(s.arg_set_id, 'render_area_width') is null
                or extract_arg(s.arg_set_id, 'draw_count') is not '1'
                or extract_arg(s.arg_set_id, 'attachment_0_format') is not 'R8G8B8A8_UNORM')"
    expect "$name: copies say how much they copied" 0 \
        "select count(*) from $st s where name = 'Copy'
           and extract_arg(s.arg_set_id, 'bytes') is null
           and extract_arg(s.arg_set_id, 'texels') is null"
    expect "$name: its queue track's description names the GPU and the queue" 1 \
        "select count(*) from gpu_track where name = 'Vulkan queue 0.0 (gputrace-workload $pid)'
           and description like 'llvmpipe%(gpu %), queue family 0 (%), index 0;%'"
    expect "$name: one submitting thread, named in the submit slices' args" 1 \
        "select count(distinct a.int_value) from $sub s join args a
           on a.arg_set_id = s.arg_set_id and a.key = 'tid' where a.int_value > 0"
}

# check_stage_times VERDICT: gputrace-check's trace-clock time of every GPU
# render stage (--gpu-stages) is trace_processor's gpu_slice.ts, with the
# same submission_id (sorted lists: gpu_slice has no event_id). VERDICT=1:
# the trace must also pass gputrace-check; 0: only be read (it matches
# stages to submissions by submission_id alone, which two processes both
# count from 1).
check_stage_times() {
    local rc=0
    if [ ! -x "${GT_GPUTRACE_CHECK:-}" ]; then
        echo "not compared: GPU stage times (gputrace-check not built: it needs glib and zlib)"
        return
    fi
    "$GT_GPUTRACE_CHECK" --no-progress --gpu-stages "$tmp/ours.stages" "$trace" \
        > "$tmp/check" 2>&1 || rc=$?
    [ $rc -eq 0 ] || { [ $rc -eq 1 ] && [ "$1" = 0 ]; } ||
        fail "gputrace-check exited $rc: $(cat "$tmp/check")"
    [ $rc -eq 0 ] || echo "gputrace-check's verdict (not judged here): $(grep -m 1 ERROR "$tmp/check")"
    awk '!/^#/ { print $2 "," $3 }' "$tmp/ours.stages" | sort -t, -k1,1n -k2,2n > "$tmp/ours.sorted"
    sql "select s.ts, s.submission_id from gpu_slice s join gpu_track t on s.track_id = t.id
         where t.scope = 'gpu_render_stage' order by s.ts, s.submission_id" > "$tmp/tp.sorted" ||
        exit 1
    checks=$((checks + 1))
    cmp -s "$tmp/ours.sorted" "$tmp/tp.sorted" ||
        fail "GPU stage times differ (trace_processor < > gputrace-check):" \
            "$(diff "$tmp/tp.sorted" "$tmp/ours.sorted" | head -n 6)"
    echo "ok: gputrace-check's trace-clock times of $(wc -l < "$tmp/tp.sorted") GPU stages = gpu_slice.ts"
}

# check_workload_trace MODE NAME...: the whole trace ($trace) of the
# workloads NAME... (started in that order; MODE embedded or traced).
check_workload_trace() {
    local mode=$1 i=0 name all_pids= alone=1
    shift
    # Two processes both count submission ids from 1 (see check_stage_times).
    [ $# -eq 1 ] || alone=0
    expect "no error or data_loss stat" "" \
        "select name || ' ' || ifnull(idx, '') || ' ' || value from stats
         where severity in ('error', 'data_loss') and value > 0"
    for name in "$@"; do
        check_one_workload "$mode" "$name" "${workload_pids[$i]}"
        all_pids=$all_pids${all_pids:+,}${workload_pids[$i]}
        i=$((i + 1))
    done
    check_stage_times "$alone"
    expect "every render-stage slice belongs to a workload process" 0 \
        "select count(*) from gpu_slice s join gpu_track t on s.track_id = t.id
         where t.scope = 'gpu_render_stage' and (s.upid is null or s.upid not in
           (select upid from process where pid in ($all_pids)))"
}

# check_coarse_trace NAME: the trace ($trace) of a session that asked for
# low overhead (GpuRenderStagesConfig.low_overhead, GPUTRACE_LOW_OVERHEAD):
# command buffers and render pass / dynamic rendering instances only, all
# of them, and every submission.
check_coarse_trace() {
    local name=$1 pid=${workload_pids[0]} frames submissions st sub
    frames=$(summary_field "$name" frames)
    submissions=$(summary_field "$name" submissions)
    [ -n "$submissions" ] && [ -n "$frames" ] || fail "$name: no frames/submissions in its summary line"
    st=$(stages_of "$pid")
    sub=$(submits_of "$pid")
    expect "low overhead: no error or data_loss stat" "" \
        "select name || ' ' || ifnull(idx, '') || ' ' || value from stats
         where severity in ('error', 'data_loss') and value > 0"
    expect "low overhead: only command buffers, render passes, dynamic rendering" \
        "$(printf 'Command buffer\nDynamic rendering\nRender pass')" \
        "select distinct name from $st order by name"
    expect "low overhead: command buffers, one per submission" "$submissions" \
        "select count(*) from $st where name = 'Command buffer'"
    expect "low overhead: a render pass and a dynamic rendering instance per frame" "$frames,$frames" \
        "select sum(name = 'Render pass'), sum(name = 'Dynamic rendering') from $st"
    expect "low overhead: vkQueueSubmit slices = its submissions" "$submissions" \
        "select count(*) from $sub"
    expect "low overhead: render passes nested in their command buffer" 0 \
        "select count(*) from $st where (depth = 0) <> (name = 'Command buffer')"
}
