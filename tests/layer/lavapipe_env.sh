# lavapipe_env.sh — sourced by layer_test.sh and timeline_test.sh after they
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

lvp=
for f in /usr/share/vulkan/icd.d/lvp_icd.*.json /usr/local/share/vulkan/icd.d/lvp_icd.*.json; do
    [ -f "$f" ] && lvp=$f && break
done
[ -n "$lvp" ] || skip "lavapipe ICD manifest not found (Debian: mesa-vulkan-drivers)"
export VK_DRIVER_FILES="$lvp" VK_ICD_FILENAMES="$lvp"
export XDG_DATA_HOME="$tmp/data" XDG_CONFIG_HOME="$tmp/config"
unset VK_INSTANCE_LAYERS VK_LAYER_PATH VK_ADD_LAYER_PATH VK_LOADER_DEBUG \
      VK_LOADER_LAYERS_ENABLE VK_LOADER_LAYERS_DISABLE VK_LAYER_SETTINGS_PATH
for v in $(env | sed -n 's/^\(\(VK_\)\{0,1\}GPUTRACE_[A-Za-z0-9_]*\)=.*/\1/p'); do
    unset "$v"
done
