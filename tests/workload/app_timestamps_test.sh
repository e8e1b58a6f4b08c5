#!/bin/sh
# SPDX-License-Identifier: MIT
# app_timestamps_test.sh — gputrace-workload --app-timestamps, the control of
# the layer-limit benchmark, must write as many timestamps per submission as
# VK_LAYER_GPUTRACE_timeline writes into the same work (else the benchmark
# compares the layer with something else), and be valid Vulkan.
# VK_LAYER_GPUTRACE_cmdcheck counts the timestamps reaching the driver: once
# below the timing layer, once below the control alone.
# Environment (from meson): GT_WORKLOAD, GT_EXPLICIT_DIR, GT_CMDCHECK_DIR.
set -eu

case_name=app-timestamps
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gputrace-appts.XXXXXX")
log=
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/../layer/lavapipe_env.sh"

args="--frames 6 --submissions-per-frame 5"

# counts FILE: "batches timestamps inside violations" of the cmdcheck line
counts() {
    sed -n 's/^cmdcheck: batches=\([0-9]*\) timestamps=\([0-9]*\) inside=\([0-9]*\) .* violations=\([0-9]*\)$/\1 \2 \3 \4/p' "$1"
}

# shellcheck disable=SC2086
VK_ADD_LAYER_PATH="$GT_EXPLICIT_DIR:$GT_CMDCHECK_DIR" \
    VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline:VK_LAYER_GPUTRACE_cmdcheck \
    GPUTRACE_OUTPUT="$tmp/trace.pftrace" "$GT_WORKLOAD" $args > "$tmp/out" 2> "$tmp/err" ||
    fail "workload under the layer failed"
layer=$(counts "$tmp/err")
[ -n "$layer" ] || fail "no cmdcheck summary under the layer"
cp "$tmp/err" "$tmp/layer.err"

# shellcheck disable=SC2086
VK_ADD_LAYER_PATH="$GT_CMDCHECK_DIR" VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_cmdcheck \
    "$GT_WORKLOAD" $args --app-timestamps > "$tmp/out" 2> "$tmp/err" ||
    fail "workload --app-timestamps failed"
control=$(counts "$tmp/err")
[ -n "$control" ] || fail "no cmdcheck summary under the control"
said=$(sed -n 's/.* timestamps=\([0-9]*\)$/\1/p' "$tmp/out")

echo "layer:   batches timestamps inside violations = $layer"
echo "control: batches timestamps inside violations = $control (the workload says $said)"
set -- $control
[ "$2" -gt 0 ] || fail "the control wrote no timestamp"
[ "$4" = 0 ] || fail "cmdcheck found violations in the control"
[ "$said" = "$2" ] || fail "the workload counted $said timestamps, cmdcheck $2"
[ "$layer" = "$control" ] ||
    fail "the control writes other timestamps than the layer: layer $layer, control $control"

# Valid Vulkan, synchronization validation included.
# shellcheck disable=SC2086
"$GT_WORKLOAD" --frames 3 --submissions-per-frame 2 --app-timestamps --validate \
    > "$tmp/out" 2> "$tmp/err" || fail "workload --app-timestamps --validate failed"
echo "ok: $case_name"
