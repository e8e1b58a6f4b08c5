# SPDX-License-Identifier: MIT
# checks.sh — sourced by perfetto_test.sh: SQL checks of a workload trace
# as trace_processor_shell ($tp, Perfetto version $tpv: 47 or 58) imports
# it. Every expected value comes from the workload's own summary line or
# from its pid, never from the trace itself. Where the two versions show a
# thing differently, the check has one form per version (v58 lays
# overlapping render stages on further tracks of the same name, all at
# depth 0, where v47 nests them by depth on one track; v58 reads GpuInfo).
checks=0

# sql QUERY: trace_processor's rows for one statement, without the header
# line and the quotes, fields separated by ','.
sql() {
    printf '%s\n' "$1" > "$tmp/q.sql"
    "$tp" -q "$tmp/q.sql" "$trace" > "$tmp/q.csv" 2> "$tmp/q.err" ||
        fail "trace_processor v$tpv failed on: $1: $(grep -v '^\[' "$tmp/q.err" | tail -n 3)"
    tail -n +2 "$tmp/q.csv" | tr -d '"'
}

# expect WHAT VALUE QUERY: the query's whole answer (one column; rows one
# a line) must be VALUE. expect_nonzero WHAT QUERY: a single positive
# number. Both only note the check: checks_run asks trace_processor all of
# them at once (one import of the trace instead of one per check) and
# reports each.
pending_what=() pending_value=() pending_sql=()
expect() {
    pending_what+=("$1")
    pending_value+=("$2")
    pending_sql+=("$3")
}
expect_nonzero() {
    pending_what+=("$1")
    pending_value+=("<positive>")
    pending_sql+=("$2")
}

# checks_run: the noted checks, in one query of trace_processor ($tp) on
# $trace: one row "INDEX|ANSWER" per check, its rows joined by '~'. Should
# that query fail, each check is asked alone, to name the one at fault.
checks_run() {
    local n=${#pending_sql[@]} i got want line
    [ "$n" -gt 0 ] || return 0
    for ((i = 0; i < n; i++)); do
        [ "$i" = 0 ] || echo "union all"
        printf "select '%d|' || ifnull((with q(v) as (%s) select group_concat(v, '~') from q), '') as r\n" \
            "$i" "${pending_sql[$i]}"
    done > "$tmp/batch.sql"
    if ! "$tp" -q "$tmp/batch.sql" "$trace" > "$tmp/batch.csv" 2> "$tmp/batch.err"; then
        for ((i = 0; i < n; i++)); do
            sql "${pending_sql[$i]}" > /dev/null
        done
        fail "trace_processor v$tpv failed on the checks: $(grep -v '^\[' "$tmp/batch.err" | tail -n 3)"
    fi
    tail -n +2 "$tmp/batch.csv" | sed 's/^"//; s/"$//' > "$tmp/batch.rows"
    [ "$(wc -l < "$tmp/batch.rows")" = "$n" ] ||
        fail "trace_processor v$tpv answered $(wc -l < "$tmp/batch.rows") of $n checks"
    i=0
    while IFS= read -r line; do
        [ "${line%%|*}" = "$i" ] || fail "check $i answered out of order: $line"
        got=${line#*|}
        want=${pending_value[$i]//$'\n'/\~}
        checks=$((checks + 1))
        if [ "$want" = "<positive>" ]; then
            [ -n "$got" ] && [ "$got" -gt 0 ] 2> /dev/null ||
                fail "${pending_what[$i]}: expected a positive count, trace_processor v$tpv answers '$got' to: ${pending_sql[$i]}"
        elif [ "$got" != "$want" ]; then
            fail "${pending_what[$i]}: expected '$want', trace_processor v$tpv answers '$got' to: ${pending_sql[$i]}"
        fi
        echo "ok: ${pending_what[$i]}: ${got//\~/ }"
        i=$((i + 1))
    done < "$tmp/batch.rows"
    pending_what=() pending_value=() pending_sql=()
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

# check_nesting NAME STAGES: command buffers at the top, every other stage
# inside one of its own submission (README: "nested inside by time"),
# exactly: the layer never puts a clock snapshot inside work it has not
# written, so a submission's stages convert with one offset (docs/layer.md,
# "Snapshot placement"; before it, children stuck out by a few ns and these
# checks allowed 1 us).
check_nesting() {
    local name=$1 st=$2
    if [ "$tpv" = 47 ]; then
        # v47 nests the stages of a queue by depth on one track.
        expect "$name: command buffers at depth 0, nothing else" 0 \
            "select count(*) from $st where (depth = 0) <> (name = 'Command buffer')"
        expect "$name: every nested slice inside a slice of its own submission" 0 \
            "select count(*) from $st s join gpu_slice p on s.parent_id = p.id
             where s.depth > 0 and (p.submission_id <> s.submission_id or p.ts > s.ts
                                    or p.ts + p.dur < s.ts + s.dur)"
        expect "$name: render passes, dispatches, copies nested in their command buffer" 0 \
            "select count(*) from $st where depth < 1
               and name in ('Render pass', 'Dynamic rendering', 'Dispatch', 'Copy')"
    else
        # v58 puts a stage that overlaps another onto a further track of
        # the same name (gpu_track's track_compressor_idx): every slice at
        # depth 0, nesting shown by time alone.
        expect "$name: every stage at depth 0 (overlaps on further tracks)" 0 \
            "select count(*) from $st where depth <> 0"
        expect "$name: every stage but command buffers inside a command buffer of its own submission" 0 \
            "select count(*) from $st s where s.name <> 'Command buffer' and not exists (
               select 1 from $st c where c.name = 'Command buffer' and c.submission_id = s.submission_id
                 and c.ts <= s.ts and c.ts + c.dur >= s.ts + s.dur)"
    fi
}

# check_gpu_info NAME STAGES: the GPU the stages ran on. v58 reads GpuInfo
# into its gpu table (one row per GPU, keyed by the stages' gpu_id); v47
# skips GpuInfo, and the queue track's description names the GPU instead.
check_gpu_info() {
    local name=$1 st=$2
    [ "$tpv" = 58 ] || return 0
    expect "$name: GpuInfo: the stages' GPU in the gpu table, with name, vendor, UUID and driver" 1 \
        "select count(*) from gpu g
           where g.gpu in (select a.int_value from $st s join gpu_track t on s.track_id = t.id
                             join args a on a.arg_set_id = t.dimension_arg_set_id and a.key = 'gpu')
             and g.name like 'llvmpipe%' and g.vendor = 'Mesa' and length(g.uuid) = 32
             and extract_arg(g.arg_set_id, 'driver_name') = 'llvmpipe'
             and extract_arg(g.arg_set_id, 'driver_info') like 'Mesa %'"
}

# check_cpu_side NAME PID SUBMISSIONS STAGES: README's "The CPU side":
# every vkQueueSubmit a slice on its (named) thread's track, with a
# submission_id argument, and the GPU slices' submission_id leading back
# to one of them.
check_cpu_side() {
    local name=$1 pid=$2 submissions=$3 st=$4 cpu
    cpu="(select s.*, t.name as thread_name, extract_arg(s.arg_set_id, 'debug.submission_id') as sid
          from slice s join thread_track tt on s.track_id = tt.id join thread t using (utid)
          join process p on t.upid = p.upid where p.pid = $pid and s.name = 'vkQueueSubmit')"
    expect "$name: a vkQueueSubmit slice per submission on its thread's track, with submission_id" \
        "$submissions" "select count(*) from $cpu where sid is not null"
    expect "$name: the submitting thread named" 0 \
        "select count(*) from $cpu where thread_name is null or thread_name not like 'gputrace-work%'"
    expect "$name: every GPU slice's submission_id leads to its vkQueueSubmit slice" 0 \
        "select count(*) from $st where submission_id not in (select sid from $cpu)"
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
    # The layer describes its process (ProcessDescriptor) and each thread
    # that submits (ThreadDescriptor); with traced, traced_probes' scan
    # names them too.
    expect "$name: process name and command line" 1 \
        "select count(*) from process where pid = $pid and name like '%gputrace-workload'
           and cmdline like '%gputrace-workload --frames %'"
    check_cpu_side "$name" "$pid" "$submissions" "$st"
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
    check_nesting "$name" "$st"
    expect "$name: every render-stage slice carries its stage description" 0 \
        "select count(*) from $st s where not exists (select 1 from args a
           where a.arg_set_id = s.arg_set_id and a.key = 'description')"
    expect "$name: submission ids of the stages are those of its vkQueueSubmit slices" 0 \
        "select count(*) from $st where submission_id not in (select submission_id from $sub)"
    expect "$name: its stages on its queue's track(s), all named after the queue" \
        "Vulkan queue 0.0 (gputrace-workload $pid)" \
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
    expect "$name: its queue's track(s) describe the GPU and the queue" 1 \
        "select count(*) > 0 and sum(description like 'llvmpipe%(gpu %), queue family 0 (%), index 0;%') = count(*)
         from gpu_track where name = 'Vulkan queue 0.0 (gputrace-workload $pid)'"
    check_gpu_info "$name" "$st"
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
        "select sum(name = 'Render pass') || ',' || sum(name = 'Dynamic rendering') from $st"
    expect "low overhead: vkQueueSubmit slices = its submissions" "$submissions" \
        "select count(*) from $sub"
    if [ "$tpv" = 47 ]; then
        expect "low overhead: render passes nested in their command buffer" 0 \
            "select count(*) from $st where (depth = 0) <> (name = 'Command buffer')"
    else
        expect "low overhead: render passes inside a command buffer of their submission" 0 \
            "select count(*) from $st s where s.name <> 'Command buffer' and not exists (
               select 1 from $st c where c.name = 'Command buffer' and c.submission_id = s.submission_id
                 and c.ts <= s.ts and c.ts + c.dur >= s.ts + s.dur)"
    fi
}

# check_zstd_compressed: the trace of the zstd case really is compressed
# with zstd, and gputrace-check passes it (reading inside), as does
# gputrace-dump.
check_zstd_compressed() {
    local zstd deflate
    [ -x "${GT_GPUTRACE_CHECK:-}" ] || skip "gputrace-check not built (it needs glib, zlib and libzstd)"
    "$GT_GPUTRACE_CHECK" --no-progress --json "$trace" > "$tmp/check.json" 2>&1 ||
        fail "gputrace-check fails the zstd trace: $(cat "$tmp/check.json")"
    zstd=$(sed -n 's/^ *"zstd_compressed_packets": \([0-9]*\).*/\1/p' "$tmp/check.json")
    deflate=$(sed -n 's/^ *"compressed_packets": \([0-9]*\).*/\1/p' "$tmp/check.json")
    checks=$((checks + 1))
    [ "${zstd:-0}" -gt 0 ] && [ "${deflate:-1}" = 0 ] ||
        fail "traced did not compress with zstd: zstd_compressed_packets=$zstd compressed_packets=$deflate"
    echo "ok: gputrace-check passes the trace: $zstd zstd_compressed_packets field(s), $(sed -n 's/^ *"compressed_bytes_inflated": \([0-9]*\).*/\1/p' "$tmp/check.json") bytes inside, $(stat -c %s "$trace") in the file"
    if [ -x "${GT_GPUTRACE_DUMP:-}" ]; then
        "$GT_GPUTRACE_DUMP" "$trace" > "$tmp/dump" 2> "$tmp/dump.err" ||
            fail "gputrace-dump cannot read the zstd trace: $(cat "$tmp/dump.err")"
        checks=$((checks + 1))
        grep -q '^  > .*gpu_render_stage_event' "$tmp/dump" ||
            fail "gputrace-dump lists no GPU stage inside the zstd packets"
        echo "ok: gputrace-dump lists $(grep -c '^  > ' "$tmp/dump") packets inside the zstd packets"
    fi
}

# check_zstd_trace NAME: v58 reads zstd_compressed_packets: the whole
# workload check. v47 skips them: it imports the file, and all it shows is
# what traced wrote outside them: no GPU slice, no process of the workload.
check_zstd_trace() {
    if [ "$tpv" = 58 ]; then
        check_workload_trace traced "$1"
        return
    fi
    expect "v47: imports without an error or data_loss stat" "" \
        "select name || ' ' || ifnull(idx, '') || ' ' || value from stats
         where severity in ('error', 'data_loss') and value > 0"
    expect "v47: skips zstd_compressed_packets: no GPU slice" 0 "select count(*) from gpu_slice"
    expect "v47: skips zstd_compressed_packets: not the workload's process" 0 \
        "select count(*) from process where pid = ${workload_pids[0]}"
}