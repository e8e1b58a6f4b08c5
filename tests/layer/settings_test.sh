#!/bin/sh
# SPDX-License-Identifier: MIT
# settings_test.sh CASE — the layer's settings from each source and their
# precedence (docs/layer.md, "Settings"), and VK_EXT_tooling_info, on
# lavapipe through the loader.
#
# Environment (set by meson.build):
#   GT_SETTINGS_PROBE  settings_probe
#   GT_EXPLICIT_DIR    build-tree explicit manifest directory
#
# What is checked is what the layer did: the trace file it wrote (output)
# and its log, where GPUTRACE_LOG=info names each setting it took and
# where from ("gputrace: setting NAME=VALUE (from ORIGIN)").
#
#   env, env-vk          GPUTRACE_OUTPUT; VK_GPUTRACE_TIMELINE_OUTPUT
#   file-path, file-dir  VK_LAYER_SETTINGS_PATH naming the file; a directory
#   file-cwd, file-xdg   vk_layer_settings.txt in the working directory; in
#                        $XDG_DATA_HOME/vulkan/settings.d/
#   api                  VkLayerSettingsCreateInfoEXT (the log settings too)
#   api-types            every VkLayerSettingTypeEXT a setting can take; the
#                        ones it cannot, refused with a warning
#   api-later            a second instance's settings do not change the
#                        process-wide ones
#   prec-env-file, prec-env-api, prec-file-api, prec-xdg-path, prec-path-cwd
#                        two sources disagree: the first named wins
#   bad-file             malformed lines, unknown keys, other layers' keys
#   tools, tools-validation-above, tools-validation-below
#                        vkGetPhysicalDeviceToolProperties(EXT)
# Exit 0 pass, 1 fail, 77 skip.
set -eu

case_name=${1:?usage: settings_test.sh CASE}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gputrace-settings-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log=$tmp/gputrace.log

. "$(dirname "$0")/lavapipe_env.sh"

export VK_ADD_LAYER_PATH="$GT_EXPLICIT_DIR" VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline
mkdir -p "$tmp/wd"
cd "$tmp/wd"

# run [ARGS...]: the probe, failing on a non-zero exit.
run() {
    "$GT_SETTINGS_PROBE" "$@" > "$tmp/out" 2> "$tmp/err" || fail "settings_probe $* failed"
}

# logged PATTERN: a line of the log matches (grep -E).
logged() {
    grep -qE "$1" "$log" || fail "no log line matching: $1"
}

not_logged() {
    if grep -qE "$1" "$log" 2> /dev/null; then fail "unexpected log line: $1"; fi
}

# traced FILE / not_traced FILE: the layer wrote that trace file or not.
traced() {
    [ -s "$1" ] || fail "no trace written to $1"
}

not_traced() {
    [ ! -e "$1" ] || fail "a trace was written to $1"
}

# settings_file PATH LINES...: writes a vk_layer_settings.txt.
settings_file() {
    f=$1
    shift
    mkdir -p "$(dirname "$f")"
    printf '%s\n' "$@" > "$f"
}

info_env() {
    export GPUTRACE_LOG=info GPUTRACE_LOG_FILE="$log"
}

case $case_name in
env)
    info_env
    GPUTRACE_OUTPUT=$tmp/env.pftrace run --device
    traced "$tmp/env.pftrace"
    logged "^gputrace: setting GPUTRACE_OUTPUT=$tmp/env.pftrace\$"
    ;;
env-vk)
    info_env
    VK_GPUTRACE_TIMELINE_OUTPUT=$tmp/vk.pftrace VK_GPUTRACE_TIMELINE_BUFFER_KB=128 run --device
    traced "$tmp/vk.pftrace"
    logged "^gputrace: setting VK_GPUTRACE_TIMELINE_OUTPUT=$tmp/vk.pftrace\$"
    logged "^gputrace: setting VK_GPUTRACE_TIMELINE_BUFFER_KB=128\$"
    ;;
file-path | file-dir | file-cwd | file-xdg)
    # The log settings come from the file too.
    case $case_name in
    file-path) f=$tmp/conf/my-settings.txt && export VK_LAYER_SETTINGS_PATH=$f ;;
    file-dir) f=$tmp/conf/vk_layer_settings.txt && export VK_LAYER_SETTINGS_PATH=$tmp/conf ;;
    file-cwd) f=$tmp/wd/vk_layer_settings.txt ;;
    file-xdg) f=$XDG_DATA_HOME/vulkan/settings.d/vk_layer_settings.txt ;;
    esac
    settings_file "$f" "# written by hand" \
        "khronos_validation.validate_core = true" \
        "gputrace_timeline.log = info" \
        "gputrace_timeline.log_file = $log" \
        "   gputrace_timeline.output   =   $tmp/file.pftrace   # trailing comment" \
        'gputrace_timeline.clock_source = "bracket"'
    run --device
    traced "$tmp/file.pftrace"
    logged "^gputrace: setting gputrace_timeline.output=$tmp/file.pftrace \\(from $f:5\\)\$"
    logged "^gputrace: setting gputrace_timeline.clock_source=bracket \\(from $f:6\\)\$"
    logged "timing with bracket calibration"
    not_logged "warning"
    ;;
api)
    run --device --other-layer --set "log=str:info" --set "log_file=str:$log" \
        --set "output=str:$tmp/api.pftrace" --set "clock_source=str:bracket"
    traced "$tmp/api.pftrace"
    logged "^gputrace: setting output=$tmp/api.pftrace \\(from VkLayerSettingsCreateInfoEXT\\)\$"
    logged "timing with bracket calibration"
    not_logged "warning"
    ;;
api-types)
    info_env
    run --device --set "output=str:$tmp/types.pftrace" --set "buffer_kb=u32:128" \
        --set "clock_budget_ns=i64:2000" --set "max_pending_submissions=u64:100" \
        --set "startup_wait_ms=f64:250" --set "signal_wait_ms=i32:1000" \
        --set "host_query_reset=bool:0" --set "query_readback=str:driver" \
        --set "backend=bool:1" --set "clock_source=i32:1" --set "disable=f32:1" \
        --set "log_file=u32:3" --set "no_such_setting=bool:1"
    traced "$tmp/types.pftrace"
    for s in buffer_kb=128 clock_budget_ns=2000 max_pending_submissions=100 \
        startup_wait_ms=250 signal_wait_ms=1000 host_query_reset=0 query_readback=driver; do
        logged "^gputrace: setting $s \\(from VkLayerSettingsCreateInfoEXT\\)\$"
    done
    logged "warning: ignoring backend \\(from VkLayerSettingsCreateInfoEXT\\): not of type VK_LAYER_SETTING_TYPE_STRING_EXT; using the default"
    logged "warning: ignoring clock_source .*not of type VK_LAYER_SETTING_TYPE_STRING_EXT"
    logged "warning: ignoring disable .*of a type this setting cannot take"
    logged "warning: VkLayerSettingsCreateInfoEXT: unknown setting no_such_setting; ignored"
    logged "results read with vkGetQueryPoolResults"
    logged "layer active"
    # A fractional number is refused like any bad value.
    rm -f "$log"
    run --set "buffer_kb=f32:100.5"
    logged "warning: ignoring buffer_kb=100.5 \\(from VkLayerSettingsCreateInfoEXT\\): expected a number"
    ;;
api-later)
    info_env
    run --device --set "output=str:$tmp/first.pftrace" --second "output=str:$tmp/second.pftrace"
    traced "$tmp/first.pftrace"
    not_traced "$tmp/second.pftrace"
    logged "VkLayerSettingsCreateInfoEXT of a later instance: output is process-wide"
    # ... but `disable` is each instance's own.
    rm -f "$log"
    run --second "disable=bool:1"
    [ "$(grep -c 'layer active' "$log")" = 1 ] || fail "expected one active instance of two"
    logged "^gputrace: layer disabled by GPUTRACE_DISABLE"
    ;;
prec-env-file)
    info_env
    settings_file "$tmp/wd/vk_layer_settings.txt" "gputrace_timeline.output = $tmp/file.pftrace"
    GPUTRACE_OUTPUT=$tmp/env.pftrace run --device
    traced "$tmp/env.pftrace"
    not_traced "$tmp/file.pftrace"
    # An empty variable is unset: the file's value counts.
    rm -f "$tmp/env.pftrace"
    GPUTRACE_OUTPUT= run --device
    traced "$tmp/file.pftrace"
    not_traced "$tmp/env.pftrace"
    ;;
prec-env-api)
    info_env
    GPUTRACE_OUTPUT=$tmp/env.pftrace run --device --set "output=str:$tmp/api.pftrace"
    traced "$tmp/env.pftrace"
    not_traced "$tmp/api.pftrace"
    VK_GPUTRACE_TIMELINE_OUTPUT=$tmp/vk.pftrace run --device --set "output=str:$tmp/api.pftrace"
    traced "$tmp/vk.pftrace"
    not_traced "$tmp/api.pftrace"
    ;;
prec-file-api)
    info_env
    settings_file "$tmp/wd/vk_layer_settings.txt" "gputrace_timeline.output = $tmp/file.pftrace"
    run --device --set "output=str:$tmp/api.pftrace"
    traced "$tmp/file.pftrace"
    not_traced "$tmp/api.pftrace"
    ;;
prec-xdg-path | prec-path-cwd)
    # Only one file is read: the first found in the Khronos order.
    info_env
    settings_file "$XDG_DATA_HOME/vulkan/settings.d/vk_layer_settings.txt" \
        "gputrace_timeline.output = $tmp/xdg.pftrace"
    settings_file "$tmp/conf/vk_layer_settings.txt" \
        "gputrace_timeline.output = $tmp/path.pftrace" "gputrace_timeline.buffer_kb = 128"
    settings_file "$tmp/wd/vk_layer_settings.txt" "gputrace_timeline.output = $tmp/cwd.pftrace"
    export VK_LAYER_SETTINGS_PATH=$tmp/conf
    if [ "$case_name" = prec-xdg-path ]; then
        run --device
        traced "$tmp/xdg.pftrace"
        not_logged "buffer_kb"
    else
        rm "$XDG_DATA_HOME/vulkan/settings.d/vk_layer_settings.txt"
        run --device
        traced "$tmp/path.pftrace"
        logged "setting gputrace_timeline.buffer_kb=128"
        not_traced "$tmp/cwd.pftrace"
    fi
    ;;
bad-file)
    info_env
    long=$(head -c 5000 /dev/zero | tr '\0' x)
    settings_file "$tmp/wd/vk_layer_settings.txt" \
        "other_layer.output = /nonexistent/other.pftrace" \
        "gputrace_timeline.buffer_kb = lots" \
        "gputrace_timeline.no_such_key = 1" \
        "gputrace_timeline.backend" \
        "gputrace_timeline.clock_source = \"bracket" \
        "gputrace_timeline.output = $long" \
        "gputrace_timeline.output = $tmp/bad.pftrace"
    run --device
    traced "$tmp/bad.pftrace"
    f=$tmp/wd/vk_layer_settings.txt
    logged "warning: ignoring gputrace_timeline.buffer_kb=lots \\(from $f:2\\): expected a number"
    logged "warning: settings file $f:3: unknown setting gputrace_timeline.no_such_key; ignored"
    logged "warning: settings file $f: line 4: no '=' after the key; ignored"
    logged "warning: settings file $f: line 5: no closing quote; ignored"
    logged "warning: settings file $f: line 6: longer than 4096 bytes; ignored"
    not_logged "other_layer"
    # Not a regular file: refused without blocking (a FIFO would).
    rm -f "$f" "$log"
    mkfifo "$f"
    run
    logged "warning: settings file $f: not a regular file; ignored"
    ;;
tools | tools-validation-above | tools-validation-below)
    info_env
    case $case_name in
    tools-validation-above) export VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation:VK_LAYER_GPUTRACE_timeline ;;
    tools-validation-below) export VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline:VK_LAYER_KHRONOS_validation ;;
    esac
    if [ "$case_name" != tools ]; then
        ls /usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json > /dev/null 2>&1 ||
            skip "no validation layer (Debian: vulkan-validationlayers)"
    fi
    lenient=
    [ "$case_name" = tools-validation-above ] && lenient=--lenient
    run --tools $lenient
    for ep in core ext; do
        grep -qx "$ep tool gputrace timeline|1|0x6|VK_LAYER_GPUTRACE_timeline" "$tmp/out" ||
            fail "$ep: the layer is not listed as a tracing+profiling tool"
        grep -qx "$ep ours 1" "$tmp/out" || fail "$ep: the layer is not listed exactly once"
    done
    logged "layer active"
    if [ "$case_name" != tools ]; then
        # Debian 12's validation layer lists itself through the EXT entry
        # point only: ours must pass that call down to it.
        grep -q '^ext tool .*|VK_LAYER_KHRONOS_validation$' "$tmp/out" ||
            fail "the validation layer's tool entry is missing"
        grep -qx 'ext tools 2' "$tmp/out" || fail "expected two tools"
    else
        grep -qx 'core tools 1' "$tmp/out" || fail "expected one tool"
    fi
    # Disabled: passed through, the layer is not listed.
    GPUTRACE_DISABLE=1 run --tools --lenient
    if grep -q '|VK_LAYER_GPUTRACE_timeline$' "$tmp/out"; then
        fail "a disabled layer lists itself"
    fi
    ;;
*)
    echo "settings_test.sh: unknown case '$case_name'" >&2
    exit 2
    ;;
esac
cat "$tmp/out"
echo "ok: $case_name"
