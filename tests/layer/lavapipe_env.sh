# SPDX-License-Identifier: MIT
# lavapipe_env.sh — sourced by the tests/layer scripts after they
# set case_name, tmp and log: their failure and skip reporting, and a
# Vulkan environment of lavapipe only, without the user's layers, loader
# settings or GPUTRACE_ variables (a variable the tests did not set must
# never decide an outcome).

# fail MESSAGE: the message, the tail of every output file there is, exit 1.
fail() {
    echo "FAIL ($case_name): $*" >&2
    for f in "$tmp/out" "$tmp/err" "$tmp/check" "$log"; do
        if [ -s "$f" ]; then
            echo "--- $(basename "$f"):" >&2
            tail -n 40 "$f" >&2
        fi
    done
    exit 1
}

skip() {
    echo "SKIP ($case_name): $*"
    exit 77
}

. "$(dirname "$0")/../common/installed_layer_guard.sh"

. "$(dirname "$0")/../common/lavapipe_driver.sh"
gt_find_lavapipe || skip "lavapipe ICD manifest not found (Debian: mesa-vulkan-drivers)"
gt_use_lavapipe
export XDG_DATA_HOME="$tmp/data" XDG_CONFIG_HOME="$tmp/config"
unset VK_INSTANCE_LAYERS VK_LAYER_PATH VK_ADD_LAYER_PATH VK_LOADER_DEBUG \
      VK_LOADER_LAYERS_ENABLE VK_LOADER_LAYERS_DISABLE VK_LAYER_SETTINGS_PATH
for v in $(env | sed -n 's/^\(\(VK_\)\{0,1\}GPUTRACE_[A-Za-z0-9_]*\)=.*/\1/p'); do
    unset "$v"
done

# asan_keep_lavapipe BINARY: in an ASan build of BINARY, keep lavapipe
# mapped until exit. The loader dlcloses it at vkDestroyInstance, and
# LeakSanitizer then reports everything its globals still pointed to,
# without even a module name to suppress. Sets $preload for run (the ASan
# runtime has to stay first in the preload list); empty otherwise.
asan_keep_lavapipe() {
    preload=
    asan_rt=$(ldd "$1" 2> /dev/null | awk '/libasan\.so/ { print $3; exit }')
    if [ -n "$asan_rt" ]; then
        lvp_lib=$(sed -n 's/.*"library_path"[^"]*"\([^"]*\)".*/\1/p' "$lvp")
        preload="$asan_rt $lvp_lib"
    fi
}

# run CMD...: must exit 0; stdout in $tmp/out, stderr in $tmp/err.
run() {
    rc=0
    if [ -n "$preload" ]; then
        LD_PRELOAD="$preload" "$@" > "$tmp/out" 2> "$tmp/err" || rc=$?
    else
        "$@" > "$tmp/out" 2> "$tmp/err" || rc=$?
    fi
    [ $rc -eq 0 ] || fail "'$*' exited with $rc"
}

# start_service TRACE: gputrace-service ($GT_GPUTRACE_SERVICE) recording the
# data source gpu.renderstages into TRACE on $PERFETTO_PRODUCER_SOCK_NAME,
# in the background (pid in $svc, log in $tmp/service.log); returns once
# its socket exists (at most 5 s). stop_service ends it and checks its exit.
start_service() {
    "$GT_GPUTRACE_SERVICE" --output "$1" --data-source gpu.renderstages \
        --socket "$PERFETTO_PRODUCER_SOCK_NAME" > "$tmp/service.log" 2>&1 &
    svc=$!
    i=0
    while [ ! -S "$PERFETTO_PRODUCER_SOCK_NAME" ] && [ $i -lt 100 ]; do
        sleep 0.05
        i=$((i + 1))
    done
}

stop_service() {
    kill -INT "$svc"
    wait "$svc" || fail "gputrace-service failed: $(cat "$tmp/service.log")"
    svc=
}
