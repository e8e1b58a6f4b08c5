#!/bin/bash
# SPDX-License-Identifier: MIT
# readme_examples.sh local|perfetto — README's examples (its ```sh blocks),
# every command exactly as written, against an installed tree: `meson install`
# into a private DESTDIR, whose bindir comes first on PATH, whose libdir the
# dynamic linker searches and whose datadir is the loader's only layer
# directory. Each block runs through `bash -e` in a fresh directory of its
# own, and what it should have done is checked: the trace it writes passes
# the installed gputrace-check with one GPU render stage per region the
# program counted, the output it shows is what README says.
#   local     the blocks that need nothing but this build and Debian's packages
#   perfetto  the blocks that run `tracebox` (Perfetto's traced and perfetto),
#             taken from Perfetto v58 in $PERFETTO_V58_BIN (default: the
#             source tree's ../shared/perfetto/v58/bin); SKIP (77) without it
#
# What README's commands meet in the block's directory:
#   ./my-vulkan-app  a stand-in for the reader's program: gputrace-workload of
#                    this build (a test program, never installed), with the
#                    arguments given. Where the block started a tracing
#                    service in the background just before it, it first waits
#                    (at most 60 s) until the service is ready for it (the
#                    socket of gputrace-service; a started `perfetto`
#                    session), as a reader typing one command after another
#                    would have; and the layer's start-up wait is 5 s instead
#                    of 500 ms (GPUTRACE_STARTUP_WAIT_MS) on a busy machine.
#   tracebox         `tracebox traced|perfetto ARGS` runs v58's program, at
#                    once: the blocks wait for traced as README tells readers.
# Service sockets are private (PERFETTO_PRODUCER/CONSUMER_SOCK_NAME); what a
# block leaves running is ended when its perfetto sessions have ended.
#
# Blocks not run, on purpose (matched by their first line in block_kind):
#   scripts/run-demo / scripts/run-tests   install Debian packages as root,
#                    then build and test the whole tree (run-tests runs the
#                    suite this test is part of)
#   scripts/run-flaky                      builds the tree and runs whole
#                    suites, this test's included, again and again beside
#                    busy loops
#   scripts/run-fence-gap                  a build tree's programs under gdb,
#                    minutes of lavapipe's fence race on purpose
#   meson test -C build --list ...         commands for a build tree, not an
#                    installed one: one runs the whole fuzz suite, and any
#                    `meson test` inside this one would rebuild the tree
#                    under test
# A block this script does not know fails it: add its check.
#
# Environment (set by meson.build): as install_test.sh, and GT_README.
# Exit 0 pass, 1 fail, 77 skip.
set -eu

part=${1:?usage: readme_examples.sh local|perfetto}
case $part in local | perfetto) ;; *) echo "unknown part '$part'" >&2; exit 2 ;; esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gputrace-readme.XXXXXX")
started=()
cleanup() {
    local p
    # What the blocks started through the tracebox shim, then our own.
    for p in $(cat "$tmp/pids/"* 2> /dev/null) "${started[@]}"; do
        kill "$p" 2> /dev/null || true
    done
    [ -z "${GT_KEEP:-}" ] || cp -r "$tmp" "$GT_KEEP"
    rm -rf "$tmp"
}
trap cleanup EXIT
root=$tmp/root
layer=VK_LAYER_GPUTRACE_timeline

fail() {
    echo "FAIL: $*" >&2
    local f
    for f in ${block_dir:+"$block_dir.out" "$block_dir.err" "$block_dir.log"} "$tmp/check"; do
        if [ -s "$f" ]; then
            echo "--- $(basename "$f"):" >&2
            tail -n 30 "$f" >&2
        fi
    done
    if [ -s "$tmp/stacks" ]; then
        echo "--- stacks of what was still running at the deadline:" >&2
        cat "$tmp/stacks" >&2
    fi
    exit 1
}

# ---- README's blocks ----
mkdir -p "$tmp/blocks"
python3 - "$GT_README" "$tmp/blocks" << 'PYEOF'
import sys
blocks, cur = [], None
for line in open(sys.argv[1], encoding="utf-8"):
    if cur is None and line.strip() == "```sh":
        cur = []
    elif cur is not None and line.strip() == "```":
        blocks.append("".join(cur))
        cur = None
    elif cur is not None:
        cur.append(line)
if cur is not None:
    sys.exit("README.md: a ```sh block is not closed")
for i, b in enumerate(blocks, 1):
    with open(f"{sys.argv[2]}/{i}.sh", "w", encoding="utf-8") as f:
        f.write(b)
PYEOF
n_blocks=$(find "$tmp/blocks" -name '*.sh' | wc -l)
[ "$n_blocks" -gt 0 ] || fail "no \`\`\`sh block found in $GT_README"

# Perfetto v58, for the tracebox blocks.
if [ -z "${PERFETTO_V58_BIN:-}" ] && [ -d "$GT_SOURCE_ROOT/../shared/perfetto/v58/bin" ]; then
    PERFETTO_V58_BIN=$(cd "$GT_SOURCE_ROOT/../shared/perfetto/v58/bin" && pwd)
fi
perfetto_missing=
if [ -z "${PERFETTO_V58_BIN:-}" ]; then
    perfetto_missing="PERFETTO_V58_BIN is not set and ../shared/perfetto/v58/bin does not exist"
else
    for b in traced perfetto; do
        [ -x "$PERFETTO_V58_BIN/$b" ] || perfetto_missing="$PERFETTO_V58_BIN/$b is missing"
    done
fi

# block_kind FIRST_LINE: excluded, local, perfetto or unknown.
block_kind() {
    case $1 in
    'scripts/run-demo'* | 'scripts/run-flaky'* | 'scripts/run-fence-gap'* | 'meson test -C build --list'*) echo excluded ;;
    'cat > gputrace.cfg <<'* | 'cat > coarse.cfg <<'* | 'cat > memory.cfg <<'*) echo perfetto ;;
    'VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline GPUTRACE_OUTPUT=app.pftrace ./my-vulkan-app' | \
        '# from a build tree, without installing' | 'GPUTRACE_QUERY_READBACK=bulk '* | \
        'GPUTRACE_ENABLE=1 GPUTRACE_OUTPUT=demo.pftrace ./my-vulkan-app' | \
        'gputrace-service '* | 'gputrace-ci '* | 'gputrace-probe '* | \
        'VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline GPUTRACE_OUTPUT=frames.pftrace \' | \
        'VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline GPUTRACE_OUTPUT=gears.pftrace \' | \
        'GPUTRACE_TRIGGER=file:snap.now '*) echo local ;;
    *) echo unknown ;;
    esac
}

mine=()
for ((i = 1; i <= n_blocks; i++)); do
    first=$(head -n 1 "$tmp/blocks/$i.sh")
    kind=$(block_kind "$first")
    case $kind in
    unknown) fail "README block $i ('$first') is not known to $(basename "$0"): add its check" ;;
    excluded) [ "$part" != local ] || echo "not run (excluded, see the header of $(basename "$0")): block $i, '$first'" ;;
    "$part") mine+=("$i") ;;
    esac
done
if [ "$part" = perfetto ] && [ -n "$perfetto_missing" ]; then
    for i in "${mine[@]}"; do
        echo "SKIP: block $i, '$(head -n 1 "$tmp/blocks/$i.sh")', needs tracebox"
    done
    echo "SKIP: $perfetto_missing (Perfetto v58's traced and perfetto; scripts/lib.sh sets it)"
    exit 77
fi
[ ${#mine[@]} -gt 0 ] || fail "README has no $part block: the block list in $(basename "$0") is stale"
. "$(dirname "$0")/../common/hang_stacks.sh"

# ---- the install tree, and only it ----
"$GT_MESON" install -C "$GT_BUILD_ROOT" --destdir "$root" --no-rebuild --quiet \
    > "$tmp/install.log" 2>&1 || { cat "$tmp/install.log" >&2; fail "meson install --destdir failed"; }
. "$(dirname "$0")/../common/lavapipe_driver.sh"
gt_find_lavapipe || fail "lavapipe ICD manifest not found (Debian: mesa-vulkan-drivers, scripts/lib.sh)"
mkdir -p "$tmp/empty" "$tmp/shims" "$tmp/pids"
gt_use_lavapipe
export HOME="$tmp/empty" XDG_DATA_HOME="$tmp/empty" XDG_CONFIG_HOME="$tmp/empty" \
    XDG_CONFIG_DIRS="$tmp/empty" XDG_DATA_DIRS="$root$GT_DATADIR"
export LD_LIBRARY_PATH="$root$GT_LIBDIR"
export PATH="$root$GT_BINDIR:$tmp/shims:$PATH"
unset VK_LAYER_PATH VK_ADD_LAYER_PATH VK_IMPLICIT_LAYER_PATH VK_ADD_IMPLICIT_LAYER_PATH \
      VK_INSTANCE_LAYERS VK_LOADER_LAYERS_ENABLE VK_LOADER_LAYERS_DISABLE VK_LOADER_DEBUG \
      VK_LAYER_SETTINGS_PATH DISPLAY
for v in $(env | sed -n 's/^\(\(VK_\)\{0,1\}GPUTRACE_[A-Za-z0-9_]*\)=.*/\1/p'); do
    unset "$v"
done
export GT_WORKLOAD GT_PIDS="$tmp/pids" PERFETTO_V58_BIN="${PERFETTO_V58_BIN:-}"
asan_rt=$(ldd "$root$GT_LIBDIR/libVkLayer_gputrace_timeline.so" 2> /dev/null |
    awk '/libasan\.so/ { print $3; exit }')
[ -z "$asan_rt" ] || export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
check_tool=$root$GT_BINDIR/gputrace-check
dump_tool=$root$GT_BINDIR/gputrace-dump
[ -x "$check_tool" ] && [ -x "$dump_tool" ] || fail "gputrace-check or gputrace-dump is not installed"

cat > "$tmp/my-vulkan-app" << 'EOF'
#!/bin/sh
# README's stand-in application (readme_examples.sh): gputrace-workload.
i=0
if [ -n "${GT_AWAIT_SESSION:-}" ]; then
    until "$PERFETTO_V58_BIN/perfetto" --query 2> /dev/null | grep -q 'started: [1-9]'; do
        i=$((i + 1))
        [ $i -lt 600 ] || break
        sleep 0.1
    done
fi
if [ -n "${GT_AWAIT_SOCKET:-}" ]; then
    until [ -S "$PERFETTO_PRODUCER_SOCK_NAME" ]; do
        i=$((i + 1))
        [ $i -lt 600 ] || break
        sleep 0.1
    done
fi
exec "$GT_WORKLOAD" "$@"
EOF
cat > "$tmp/shims/tracebox" << 'EOF'
#!/bin/sh
# tracebox APPLET ARGS... (readme_examples.sh): Perfetto v58's APPLET.
applet=${1:?usage: tracebox APPLET ARGS...}
shift
case $applet in
traced | traced_probes | perfetto | trace_processor_shell) ;;
*) echo "tracebox (test shim): no applet '$applet' here" >&2; exit 2 ;;
esac
# No wait here for traced: README's blocks wait for it themselves, as a
# reader pasting them needs (a `perfetto --query` that answers). The
# queries end on their own, so their PIDs are not kept for the clean-up.
case " $* " in
*" --query "*) ;;
*) echo $$ >> "$GT_PIDS/$applet" ;;
esac
exec "$PERFETTO_V58_BIN/$applet" "$@"
EOF
chmod +x "$tmp/my-vulkan-app" "$tmp/shims/tracebox"

# wait_until SECONDS CMD...: polls CMD every 0.1 s; 1 when it never held.
wait_until() {
    local n=$(($1 * 10)) i=0
    shift
    until "$@"; do
        i=$((i + 1))
        [ $i -lt $n ] || return 1
        sleep 0.1
    done
}
alive() { kill -0 "$1" 2> /dev/null; }
gone() { ! kill -0 "$1" 2> /dev/null; }
exists() { [ -e "$1" ]; }

# start_block N [VAR=VALUE...]: block N in the background, in its own
# directory $block_dir (with ./my-vulkan-app), the variables added; its pid
# in $block_pid. The block ends by waiting for what it left running.
start_block() {
    local n=$1
    shift
    block_dir=$tmp/b$n
    mkdir -p "$block_dir"
    cp "$tmp/my-vulkan-app" "$block_dir/"
    rm -f "$tmp/pids/"*
    { cat "$tmp/blocks/$n.sh"; printf '\ntouch %q\nwait\n' "$block_dir.done"; } > "$block_dir.run"
    (cd "$block_dir" && exec env PERFETTO_PRODUCER_SOCK_NAME="$block_dir.producer" \
        PERFETTO_CONSUMER_SOCK_NAME="$block_dir.consumer" GPUTRACE_LOG=info \
        GPUTRACE_LOG_FILE="$block_dir.log" "$@" timeout -k 5 240 bash -e "$block_dir.run" \
        > "$block_dir.out" 2> "$block_dir.err") &
    block_pid=$!
    started+=("$block_pid")
    gt_watch 230 # the block's own deadline is 240 s

}

# finish_block: waits for the block's own commands, then for the perfetto
# sessions it started to end (their duration), then stops the traced it
# left; block_rc is its exit status.
finish_block() {
    local p
    wait_until 240 block_settled || true
    for p in $(cat "$tmp/pids/perfetto" 2> /dev/null); do
        wait_until 60 gone "$p" || fail "perfetto (pid $p) is still running 60 s after the block"
    done
    for p in $(cat "$tmp/pids/traced" 2> /dev/null); do
        kill "$p" 2> /dev/null || true
    done
    block_rc=0
    wait "$block_pid" || block_rc=$?
    gt_unwatch
}
block_settled() { exists "$block_dir.done" || gone "$block_pid"; }

# run_block N [VAR=VALUE...]: start_block, finish_block; the block must succeed.
run_block() {
    start_block "$@"
    finish_block
    [ "$block_rc" = 0 ] || fail "block $1 exited with $block_rc"
}

# read_summary: r and submissions, what the one my-vulkan-app run of the
# block counted (its summary line).
read_summary() {
    local line
    line=$(grep -h '^gputrace-workload: frames=' "$block_dir.out" "$block_dir.err" || true)
    [ "$(echo "$line" | grep -c .)" = 1 ] || fail "expected one summary line of my-vulkan-app, got '$line'"
    r=$(echo "$line" | sed -n 's/.* regions=\([0-9]*\).*/\1/p')
    submissions=$(echo "$line" | sed -n 's/.* submissions=\([0-9]*\).*/\1/p')
    [ -n "$r" ] && [ -n "$submissions" ] || fail "unreadable summary line '$line'"
}

# check_trace FILE MIN [EXACT]: FILE passes the installed gputrace-check with
# at least MIN GPU render stages (exactly EXACT when given); $stages is the count.
check_trace() {
    [ -s "$1" ] || fail "no trace $1"
    "$check_tool" --no-progress --json --expect-gpu-events "$2" "$1" > "$tmp/check" 2>&1 ||
        fail "gputrace-check fails $1"
    stages=$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["gpu_render_stage_events"])' "$tmp/check")
    [ -z "${3:-}" ] || [ "$stages" = "$3" ] || fail "$1: $stages GPU render stages, expected $3"
}

# ---- each block, and what it must have done ----
xvfb_display() {
    [ -z "${DISPLAY:-}" ] || return 0
    command -v Xvfb > /dev/null || fail "Xvfb not found (Debian: xvfb, scripts/lib.sh)"
    Xvfb -displayfd 3 -screen 0 640x480x24 -nolisten tcp 3> "$tmp/display" > "$tmp/xvfb.log" 2>&1 &
    started+=("$!")
    wait_until 30 test -s "$tmp/display" || fail "Xvfb reported no display: $(cat "$tmp/xvfb.log")"
    export DISPLAY=:$(head -n 1 "$tmp/display")
}

# run_glxgears_block N: block N runs glxgears (drawing until Escape) in a
# private Xvfb; once it has counted frames (every 5 s) its window gets an
# Escape key press, and the block must then end well.
run_glxgears_block() {
    local n=$1 wid
    command -v glxgears > /dev/null || fail "glxgears not found (Debian: mesa-utils, scripts/lib.sh)"
    command -v xdotool > /dev/null || fail "xdotool not found (Debian: xdotool, scripts/lib.sh)"
    xvfb_display
    start_block "$n" ${asan_rt:+LD_PRELOAD="$asan_rt"}
    wait_until 120 grep -q 'frames in' "$block_dir.out" || fail "glxgears counted no frames in 120 s"
    wid=$(timeout 60 xdotool search --sync --onlyvisible --name '^glxgears$' 2> /dev/null | head -n 1) ||
        true
    [ -n "$wid" ] || fail "no glxgears window"
    xdotool windowfocus --sync "$wid" 2> /dev/null || true
    xdotool key Escape
    finish_block
    [ "$block_rc" = 0 ] || fail "block $n exited with $block_rc"
}

check_block() {
    local n=$1 first
    first=$(head -n 1 "$tmp/blocks/$n.sh")
    case $first in
    'VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline GPUTRACE_OUTPUT=app.pftrace ./my-vulkan-app')
        run_block "$n"
        read_summary
        check_trace "$block_dir/app.pftrace" "$r" "$r"
        grep -q '^verdict: pass' "$block_dir.out" || fail "gputrace-check printed no passing verdict"
        echo "ok: block $n: the installed layer traced my-vulkan-app by VK_INSTANCE_LAYERS, $stages stages = regions; gputrace-check passes"
        ;;
    '# from a build tree, without installing')
        # The build tree's layer only: the loader and linker see no install tree.
        mkdir -p "$tmp/b$n"
        ln -s "$GT_BUILD_ROOT" "$tmp/b$n/build"
        run_block "$n" XDG_DATA_DIRS="$tmp/empty" LD_LIBRARY_PATH=
        read_summary
        check_trace "$block_dir/app.pftrace" "$r" "$r"
        grep -q '^verdict: pass' "$block_dir.out" || fail "build/toolkit/gputrace-check printed no passing verdict"
        echo "ok: block $n: the build tree's layer traced my-vulkan-app, $stages stages = regions"
        ;;
    'GPUTRACE_QUERY_READBACK=bulk '*)
        run_glxgears_block "$n"
        grep -q 'in bulk' "$block_dir.log" || fail "the layer did not read one-time-submit command buffers in bulk"
        check_trace "$block_dir/gears.pftrace" 1
        echo "ok: block $n: glxgears on zink traced with bulk read-back, $stages stages; gputrace-check passes"
        ;;
    'VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline GPUTRACE_OUTPUT=gears.pftrace \')
        # glxgears on zink as the DRI driver; then the block's
        # gputrace-check --frames reports its frames.
        run_glxgears_block "$n"
        local counted shown
        check_trace "$block_dir/gears.pftrace" 1
        # Frames presented: at least what glxgears counted in its first 5 s.
        counted=$(sed -n 's/^\([0-9]*\) frames in .*/\1/p' "$block_dir.out" | head -n 1)
        shown=$(sed -n 's/.*frames: "Frames" (pid [0-9]*): \([0-9]*\) frame(s).*/\1/p' "$block_dir.out")
        [ -n "$shown" ] || fail "gputrace-check --frames reported no frames track: $(grep -i frames "$block_dir.out" | tail -n 3)"
        [ "$shown" -ge "$counted" ] || fail "$shown frames in the trace, glxgears counted $counted in its first 5 s"
        echo "ok: block $n: glxgears on zink (DRI driver) presented $shown frames (it counted $counted in its first 5 s); gputrace-check --frames passes"
        ;;
    'GPUTRACE_ENABLE=1 GPUTRACE_OUTPUT=demo.pftrace ./my-vulkan-app')
        run_block "$n"
        read_summary
        check_trace "$block_dir/demo.pftrace" "$r" "$r"
        [ "$(grep -c ' seq=' "$block_dir.out")" = 10 ] || fail "expected 10 packet lines from gputrace-dump | head"
        grep -m 1 ' seq=' "$block_dir.out" | grep -q ' seq=1 trace_uuid$' ||
            fail "the dump does not open with the service sequence's trace_uuid"
        grep -q ' seq=1 clock_snapshot$' "$block_dir.out" || fail "no service clock snapshot in the first lines"
        grep -Eq ' seq=([2-9]|[1-9][0-9]+) .*vulkan_api_event$' "$block_dir.out" ||
            fail "no vkQueueSubmit event of a writer sequence in the first lines"
        echo "ok: block $n: GPUTRACE_ENABLE=1 traced ($stages stages = regions); gputrace-dump shows the sequences README describes"
        ;;
    'gputrace-service '*)
        run_block "$n" GT_AWAIT_SOCKET=1 GPUTRACE_STARTUP_WAIT_MS=5000
        read_summary
        check_trace "$block_dir/trace.pftrace" "$r" "$r"
        echo "ok: block $n: gputrace-service recorded my-vulkan-app, $stages stages = regions"
        ;;
    'gputrace-ci '*)
        run_block "$n"
        grep -q '^gputrace-ci: PASS' "$block_dir.out" || fail "gputrace-ci printed no PASS"
        [ -s "$block_dir/results.xml" ] || fail "no results.xml"
        grep -q '<testcase' "$block_dir/results.xml" || fail "results.xml has no testcase"
        ! grep -q '<failure' "$block_dir/results.xml" || fail "results.xml reports a failure"
        echo "ok: block $n: $(grep '^gputrace-ci: PASS' "$block_dir.out")"
        ;;
    'gputrace-probe '*)
        run_block "$n"
        grep -q '^gputrace-probe: PASS: ' "$block_dir.out" || fail "gputrace-probe printed no PASS"
        grep -q '"schema": "gputrace-probe/1"' "$block_dir/probe.json" || fail "no probe.json"
        grep -q 'name="written-vs-calibrated family 0"' "$block_dir/probe.xml" ||
            fail "probe.xml lacks the probe's test cases"
        grep -q '^gputrace-ci: PASS .*; driver probe pass; ' "$block_dir.out" ||
            fail "gputrace-ci --probe printed no PASS with the probe's"
        grep -q 'classname="gputrace-probe.device0"' "$block_dir/results.xml" ||
            fail "results.xml lacks the probe's test cases"
        ! grep -q '<failure' "$block_dir/results.xml" || fail "results.xml reports a failure"
        echo "ok: block $n: $(grep -m 1 '^gputrace-probe: PASS' "$block_dir.out"); gputrace-ci --probe passes"
        ;;
    'cat > gputrace.cfg <<'*)
        run_block "$n" GT_AWAIT_SESSION=1 GPUTRACE_STARTUP_WAIT_MS=5000
        read_summary
        check_trace "$block_dir/trace.pftrace" "$r" "$r"
        echo "ok: block $n: v58's traced and perfetto recorded my-vulkan-app, $stages stages = regions"
        ;;
    'cat > coarse.cfg <<'*)
        # "With traced running as above": one started the same way.
        mkdir -p "$tmp/b$n"
        (cd "$tmp/b$n" && exec env PERFETTO_PRODUCER_SOCK_NAME="$tmp/b$n.producer" \
            PERFETTO_CONSUMER_SOCK_NAME="$tmp/b$n.consumer" tracebox traced \
            > "$tmp/b$n.traced.log" 2>&1) &
        started+=("$!")
        local traced_pid=$!
        # Its socket file exists before it listens: wait until it answers.
        wait_until 30 env PERFETTO_CONSUMER_SOCK_NAME="$tmp/b$n.consumer" \
            "$PERFETTO_V58_BIN/perfetto" --query > /dev/null 2>&1 ||
            fail "traced did not start: $(cat "$tmp/b$n.traced.log")"
        run_block "$n" GT_AWAIT_SESSION=1 GPUTRACE_STARTUP_WAIT_MS=5000
        kill "$traced_pid" 2> /dev/null || true
        read_summary
        check_trace "$block_dir/coarse.pftrace" "$submissions"
        [ "$stages" -lt "$r" ] || fail "low overhead: $stages stages, not fewer than the $r regions"
        "$dump_tool" -v "$block_dir/coarse.pftrace" > "$tmp/dump" 2>&1 || fail "gputrace-dump failed"
        python3 - "$tmp/dump" "$submissions" << 'PYEOF' || fail "the low-overhead trace has other stages"
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
names = dict(re.findall(r'interned gpu_specification iid=(\d+) name="([^"]*)"', text))
used = re.findall(r"\bstage_iid=(\d+)", text)
counts = {}
for iid in used:
    counts[names.get(iid, "?" + iid)] = counts.get(names.get(iid, "?" + iid), 0) + 1
print("stages:", counts)
allowed = {"Command buffer", "Render pass", "Dynamic rendering"}
if set(counts) - allowed or counts.get("Command buffer") != int(sys.argv[2]):
    sys.exit(1)
PYEOF
        echo "ok: block $n: low_overhead through v58's --txt config: $stages stages, command buffers and render passes only"
        ;;
    'cat > memory.cfg <<'*)
        run_block "$n" GT_AWAIT_SESSION=1 GPUTRACE_STARTUP_WAIT_MS=5000
        read_summary
        check_trace "$block_dir/memory.pftrace" "$r" "$r"
        # What README's query shows: the allocations my-vulkan-app made.
        local allocations got
        allocations=$(sed -n 's/^gputrace-workload: memory: allocations=\([0-9]*\) bytes=\([0-9]*\) .*/\1,\2/p' \
            "$block_dir.out" "$block_dir.err" | head -n 1)
        [ -n "$allocations" ] || fail "no memory line from my-vulkan-app"
        printf '%s\n' "select count(*) || ',' || sum(memory_size) from vulkan_memory_allocations
                        where source = 'GPU_DEVICE_MEMORY' and operation = 'CREATE'" > "$tmp/memory.sql"
        got=$("$PERFETTO_V58_BIN/trace_processor_shell" -q "$tmp/memory.sql" "$block_dir/memory.pftrace" \
                  2> /dev/null | tail -n +2 | tr -d '"') || fail "trace_processor v58 cannot read memory.pftrace"
        [ "$got" = "$allocations" ] ||
            fail "memory.pftrace: allocations (count,bytes) $got, my-vulkan-app made $allocations"
        echo "ok: block $n: both data sources through v58's traced, $stages stages = regions, allocations $got = what my-vulkan-app made"
        ;;
    'VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline GPUTRACE_OUTPUT=frames.pftrace \')
        run_block "$n"
        read_summary
        check_trace "$block_dir/frames.pftrace" "$r" "$r"
        grep -q '^  frames: "Frames" (pid [0-9]*): 120 frame(s), 1\.\.120; ' "$block_dir.out" ||
            fail "gputrace-check --frames printed no line for the 120 frames"
        grep -q '^verdict: pass' "$block_dir.out" || fail "gputrace-check printed no passing verdict"
        grep -q 'frame interval' "$block_dir/frames.svg" 2> /dev/null || fail "no frames plot in frames.svg"
        echo "ok: block $n: 120 frames, their statistics and plot; gputrace-check --frames passes"
        ;;
    'GPUTRACE_TRIGGER=file:snap.now '*)
        run_block "$n"
        for k in 1 2; do
            check_trace "$block_dir/snap-$k.pftrace" 1
        done
        [ ! -e "$block_dir/snap-3.pftrace" ] || fail "a third window file without a third trigger"
        [ "$(grep -c '^  frames: "Frames"' "$block_dir.out")" = 2 ] ||
            fail "gputrace-check --frames found no frames in both window files"
        grep -q '^verdict: pass' "$block_dir.out" || fail "gputrace-check printed no passing verdict"
        echo "ok: block $n: the flight recorder wrote two windows, each with frames; gputrace-check passes"
        ;;
    *) fail "block $n: no check for '$first'" ;;
    esac
}

for i in "${mine[@]}"; do
    check_block "$i"
done
echo "PASS: ${#mine[@]} $part block(s) of README"
