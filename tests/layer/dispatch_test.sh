#!/bin/sh
# SPDX-License-Identifier: MIT
# dispatch_test.sh CASE — the layer's vkGet*ProcAddr answers and hooks against
# the same chain without it, on lavapipe (tests/layer/dispatch_probe.c says
# what the probe does and records).
#
# Environment (set by meson.build):
#   GT_DISPATCH_PROBE  dispatch_probe
#   GT_LAYER_LIB       the built layer
#   GT_EXPLICIT_DIR    build-tree explicit manifest directory
#   GT_IMPLICIT_MANIFEST  build-tree implicit manifest
#
# Each configuration runs the probe once without the layer (the baseline)
# and once per way of putting the layer in, and every run's --out file must
# equal the baseline's: same lookups NULL or not for every command of
# vulkan_core.h, same calls made with the same results, same effects on the
# GPU. A crash fails the run. The layer traces into a file meanwhile
# (GPUTRACE_OUTPUT), so its timing code is at work too.
#
#   plain       API 1.0 and 1.3 with and without VK_EXT_debug_utils, the
#               instance extensions and the device extensions; the layer
#               enabled through the loader (VK_INSTANCE_LAYERS) and loaded by
#               the probe itself (dispatch_probe --layer, which also asks it
#               for device commands through vkGetInstanceProcAddr and calls
#               its hooks for commands the device lacks: --absent). Then
#               coverage: every name the layer answers with a function of
#               its own was called, device commands through both lookups.
#   validation  the same with VK_LAYER_KHRONOS_validation in the chain:
#               above the layer, below it, and below the probe-loaded layer;
#               the baseline is validation alone. SKIP without it.
#   withhold    the probe-loaded layer over a next entity whose
#               vkGetDeviceProcAddr answers NULL for every command that is
#               not Vulkan 1.0 (its vkGetInstanceProcAddr still answers);
#               then for one Vulkan 1.0 function the layer needs, which must
#               leave the device passed through untouched.
#   memory      the memory hooks (vkAllocateMemory ... vkBindImageMemory2)
#               are handed out only where a session may ever want memory
#               events: the probe-loaded layer with the embedded backend and
#               no GPUTRACE_MEMORY (and with GPUTRACE_BACKEND=none) answers
#               the next entity's functions through both lookups, while the
#               flow hooks stay its own; with GPUTRACE_MEMORY=1 (from the
#               environment or vk_layer_settings.txt) or the system backend
#               (no service) it answers its own, and the hooks are called.
#               Every run equals the baseline.
#
# Exit 0 pass, 1 fail, 77 skip.
set -eu

case_name=${1:?usage: dispatch_test.sh CASE}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gputrace-dispatch-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log=$tmp/gputrace.log

. "$(dirname "$0")/lavapipe_env.sh"

asan_keep_lavapipe "$GT_DISPATCH_PROBE"

runs=0
active=0

# The layer says "layer active" once per instance it takes part in.
active_count() {
    if [ -f "$log" ]; then grep -c '^gputrace: layer active' "$log" || true; else echo 0; fi
}

# probe NAME CONFIG [ARGS...]: runs the probe into $tmp/NAME.out/.notes with
# the environment as it is; fails on a non-zero exit (a crash included).
probe() {
    name=$1 config=$2
    shift 2
    rc=0
    if [ -n "$preload" ]; then
        LD_PRELOAD="$preload" "$GT_DISPATCH_PROBE" --out "$tmp/$name.out" \
            --notes "$tmp/$name.notes" "$@" "$config" > "$tmp/out" 2> "$tmp/err" || rc=$?
    else
        "$GT_DISPATCH_PROBE" --out "$tmp/$name.out" --notes "$tmp/$name.notes" "$@" \
            "$config" > "$tmp/out" 2> "$tmp/err" || rc=$?
    fi
    runs=$((runs + 1))
    if [ $rc -ne 0 ]; then
        echo "--- last lines of $name.out:" >&2
        tail -n 5 "$tmp/$name.out" >&2 || true
        fail "dispatch_probe $* $config ($name) exited with $rc"
    fi
    grep -q '^end$' "$tmp/$name.out" || fail "$name: the probe did not finish"
    was=$active
    active=$(active_count)
    case $name in
    base*) [ "$active" -eq "$was" ] || fail "$name: the layer was loaded for the baseline" ;;
    *) [ "$active" -gt "$was" ] || fail "$name: the layer was not loaded" ;;
    esac
}

# same BASE OTHER: OTHER's record equals BASE's.
same() {
    if ! diff "$tmp/$1.out" "$tmp/$2.out" > "$tmp/diff"; then
        echo "--- $1.out vs $2.out:" >&2
        head -n 40 "$tmp/diff" >&2
        fail "$2 differs from $1"
    fi
}

layer_env() { # layer_env LAYERS: the loader enables these (ours from the build tree)
    export VK_ADD_LAYER_PATH="$GT_EXPLICIT_DIR" VK_INSTANCE_LAYERS="$1"
}

no_layers() {
    unset VK_ADD_LAYER_PATH VK_INSTANCE_LAYERS
}

# The implicit manifest is found (loader 1.3.239) only in XDG directories;
# GPUTRACE_ENABLE=1 loads it.
mkdir -p "$XDG_DATA_HOME/vulkan/implicit_layer.d"
cp "$GT_IMPLICIT_MANIFEST" "$XDG_DATA_HOME/vulkan/implicit_layer.d/"

# Tracing on, so the hooks' timing work runs; warnings and errors logged.
export GPUTRACE_OUTPUT="$tmp/trace.pftrace" GPUTRACE_LOG=info GPUTRACE_LOG_FILE="$log"

ours=VK_LAYER_GPUTRACE_timeline
vvl=VK_LAYER_KHRONOS_validation

have_validation() {
    for d in $(echo "${XDG_DATA_DIRS:-/usr/local/share:/usr/share}" | tr ':' ' '); do
        [ -f "$d/vulkan/explicit_layer.d/VkLayer_khronos_validation.json" ] && return 0
    done
    return 1
}

# coverage: every name some direct run saw the layer answer with a function
# of its own was called through the lookups that hand it out.
coverage() {
    cat "$tmp"/direct*.notes | sed -n 's/^hooked-\(gipa\|global\) //p' | sort -u > "$tmp/hooked-i"
    cat "$tmp"/direct*.notes | sed -n 's/^hooked-gdpa //p' | sort -u > "$tmp/hooked-d"
    # A command no valid call can reach here (vkQueueBindSparse without a
    # sparse-binding queue) counts as called.
    cat "$tmp"/*.notes | sed -n 's/^uncallable //p' | sort -u > "$tmp/uncallable"
    { sed -n 's/^called gipa //p' "$tmp"/*.notes; cat "$tmp/uncallable"; } | sort -u > "$tmp/called-i"
    { sed -n 's/^called gdpa //p' "$tmp"/*.notes; cat "$tmp/uncallable"; } | sort -u > "$tmp/called-d"
    [ -s "$tmp/hooked-d" ] || fail "no hooks seen: is the layer loaded at all?"
    missing=$(comm -23 "$tmp/hooked-i" "$tmp/called-i" | tr '\n' ' ')
    [ -z "$missing" ] || fail "hooked, never called through vkGetInstanceProcAddr: $missing"
    missing=$(comm -23 "$tmp/hooked-d" "$tmp/called-d" | tr '\n' ' ')
    [ -z "$missing" ] || fail "hooked, never called through vkGetDeviceProcAddr: $missing"
    echo "coverage: $(wc -l < "$tmp/hooked-i") names hooked through vkGetInstanceProcAddr," \
        "$(wc -l < "$tmp/hooked-d") through vkGetDeviceProcAddr, all called" \
        "$([ -s "$tmp/uncallable" ] && echo "but $(tr '\n' ' ' < "$tmp/uncallable")(no valid call here)")"
}

# Every absent call returned what the layer promises (the probe checks the
# effects itself); there must have been some.
check_absent() {
    n=$(cat "$tmp"/direct*.notes | grep -c '^absent ' || true)
    [ "$n" -gt 0 ] || fail "no absent commands were called"
    ! grep -h '^result ' "$tmp"/direct*.notes | grep -v 'VK_SUCCESS$' |
        grep -v 'VK_ERROR_EXTENSION_NOT_PRESENT$' | grep -q . ||
        fail "unexpected results in the absent pass: $(grep -h '^result ' "$tmp"/direct*.notes |
            grep -v 'VK_SUCCESS$' | head -n 3)"
    echo "absent: $n calls of hooks for commands the device lacks did nothing"
}

check_log() {
    grep -q '^gputrace: layer active' "$log" || fail "the layer never said it was active"
    ! grep -q '^gputrace: error' "$log" || fail "the layer logged errors"
}

case $case_name in
plain)
    for config in 1.0 1.0+utils 1.0+inst 1.0+utils+inst+dev 1.3 1.3+utils 1.3+dev \
        1.3+utils+inst+dev; do
        no_layers
        probe "base-$config" "$config"
        layer_env $ours
        probe "loader-$config" "$config"
        same "base-$config" "loader-$config"
        no_layers
        export GPUTRACE_ENABLE=1
        probe "implicit-$config" "$config"
        unset GPUTRACE_ENABLE
        same "base-$config" "implicit-$config"
        probe "direct-$config" "$config" --layer "$GT_LAYER_LIB" --absent
        same "base-$config" "direct-$config"
    done
    coverage
    check_absent
    check_log
    ;;

validation)
    have_validation || skip "VK_LAYER_KHRONOS_validation not installed (Debian: vulkan-validationlayers)"
    # The validation layer is dlclosed by the loader and cannot be preloaded
    # (see layer_test.sh, workload-validate).
    [ -z "$preload" ] || export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
    for config in 1.0 1.0+utils+inst+dev 1.3 1.3+utils+inst+dev; do
        layer_env $vvl
        probe "base-$config" "$config"
        layer_env "$ours:$vvl"
        probe "above-$config" "$config"
        same "base-$config" "above-$config"
        layer_env "$vvl:$ours"
        probe "below-$config" "$config"
        same "base-$config" "below-$config"
        layer_env $vvl
        probe "direct-$config" "$config" --layer "$GT_LAYER_LIB" --absent
        same "base-$config" "direct-$config"
    done
    check_absent
    check_log
    ;;

withhold)
    no_layers
    for config in 1.0+utils+inst+dev 1.3+utils+inst+dev; do
        probe "base-$config" "$config" --withhold optional
        probe "direct-$config" "$config" --withhold optional --layer "$GT_LAYER_LIB" --absent
        same "base-$config" "direct-$config"
    done
    check_absent
    for cmd in vkCmdBeginDebugUtilsLabelEXT vkCmdBeginRendering vkCmdBeginRenderingKHR \
        vkQueueSubmit2KHR vkCmdPipelineBarrier2 vkCmdCopyImage2KHR vkGetDeviceQueue2; do
        grep -q "^absent $cmd\$" "$tmp/direct-1.3+utils+inst+dev.notes" ||
            fail "$cmd was not among the absent commands"
    done
    check_log

    # A Vulkan 1.0 function the timing code needs is missing below: the
    # device is passed through (only vkGetDeviceProcAddr and vkDestroyDevice
    # stay the layer's own), and nothing else changes.
    config=1.3+utils+inst+dev
    probe base-required "$config" --withhold vkCmdCopyQueryPoolResults
    probe direct-required "$config" --withhold vkCmdCopyQueryPoolResults \
        --layer "$GT_LAYER_LIB" --absent
    same base-required direct-required
    grep -q "next layer has no vkCmdCopyQueryPoolResults: passing this device's calls through" \
        "$log" || fail "no warning about the missing function"
    hooked=$(sed -n 's/^hooked-gdpa //p' "$tmp/direct-required.notes" | sort -u | tr '\n' ' ')
    [ "$hooked" = "vkDestroyDevice vkGetDeviceProcAddr " ] ||
        fail "device not passed through; the layer still answers for: $hooked"
    ;;

memory)
    # Vulkan 1.0 and the core 1.1 binds, all of which lavapipe has at 1.3.
    memory_names="vkAllocateMemory vkFreeMemory vkMapMemory vkUnmapMemory vkCreateBuffer
        vkDestroyBuffer vkCreateImage vkDestroyImage vkBindBufferMemory vkBindImageMemory
        vkBindBufferMemory2 vkBindImageMemory2"
    # memory_hooked RUN yes|no: whether RUN's layer answered every memory
    # name (none of them, through either lookup) with a function of its own.
    memory_hooked() {
        for name in $memory_names; do
            if grep -q "^hooked-gdpa $name\$" "$tmp/$1.notes"; then got=yes; else got=no; fi
            [ "$got" = "$2" ] || fail "$1: $name handed out by the layer through vkGetDeviceProcAddr: $got, want $2"
            if [ "$2" = no ] && grep -q "^hooked-gipa $name\$" "$tmp/$1.notes"; then
                fail "$1: $name handed out by the layer through vkGetInstanceProcAddr"
            fi
        done
        # The flows' hooks are the layer's in every run: the probe sees hooks.
        grep -q '^hooked-gdpa vkWaitForFences$' "$tmp/$1.notes" ||
            fail "$1: vkWaitForFences is not the layer's own"
    }
    config=1.3+utils+inst+dev
    no_layers
    probe base-memory "$config"
    # The embedded backend (GPUTRACE_OUTPUT, set above), no GPUTRACE_MEMORY.
    probe direct-off "$config" --layer "$GT_LAYER_LIB"
    same base-memory direct-off
    memory_hooked direct-off no
    grep -q 'memory not tracked: no session of this process can want memory events' "$log" ||
        fail "the layer did not log that memory is not tracked"
    ! grep -q 'memory at vkDestroyDevice' "$log" ||
        fail "the layer counted memory it does not track: $(grep 'memory at vkDestroyDevice' "$log")"
    export GPUTRACE_BACKEND=none
    probe direct-none "$config" --layer "$GT_LAYER_LIB"
    unset GPUTRACE_BACKEND
    same base-memory direct-none
    memory_hooked direct-none no
    # Memory events wanted: the layer's hooks, and its count at vkDestroyDevice.
    export GPUTRACE_MEMORY=1
    probe direct-on "$config" --layer "$GT_LAYER_LIB" --absent
    unset GPUTRACE_MEMORY
    same base-memory direct-on
    memory_hooked direct-on yes
    for name in $memory_names; do
        grep -q "^called gdpa $name\$" "$tmp/direct-on.notes" || fail "direct-on: $name never called"
    done
    grep -q 'memory at vkDestroyDevice: allocations=[1-9]' "$log" ||
        fail "no memory count at vkDestroyDevice with GPUTRACE_MEMORY=1"
    mkdir -p "$tmp/settings"
    echo "gputrace_timeline.memory = 1" > "$tmp/settings/vk_layer_settings.txt"
    export VK_LAYER_SETTINGS_PATH="$tmp/settings"
    probe direct-file "$config" --layer "$GT_LAYER_LIB"
    unset VK_LAYER_SETTINGS_PATH
    same base-memory direct-file
    memory_hooked direct-file yes
    # A system backend's session may start any time: the objects are kept
    # (no service here: a socket nobody listens on).
    unset GPUTRACE_OUTPUT
    export GPUTRACE_BACKEND=system PERFETTO_PRODUCER_SOCK_NAME="$tmp/producer.sock"
    probe direct-system "$config" --layer "$GT_LAYER_LIB"
    grep -q 'system backend: producer' "$log" || fail "the system backend did not start"
    same base-memory direct-system
    memory_hooked direct-system yes
    check_log
    ;;

*)
    echo "dispatch_test.sh: unknown case '$case_name'" >&2
    exit 2
    ;;
esac

echo "ok: $case_name ($runs probe runs)"
