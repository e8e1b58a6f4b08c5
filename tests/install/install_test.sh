#!/bin/sh
# SPDX-License-Identifier: MIT
# install_test.sh — `meson install` into a private DESTDIR, then what a user of
# the installed tree sees: exactly the files of expected-files.txt, a valid
# manifest, and a loader that lists the layer once and loads it every way
# README documents for an installed layer.
#
# Environment (set by meson.build):
#   GT_MESON           the meson that configured this build
#   GT_BUILD_ROOT      the build directory
#   GT_PREFIX GT_BINDIR GT_LIBDIR GT_DATADIR GT_MANDIR   absolute install dirs
#   GT_EXPECTED        expected-files.txt
#   GT_ENABLE_BY_NAME  a program naming the layer in ppEnabledLayerNames
#
# The loader is kept to the install tree: XDG_DATA_DIRS is its datadir, the
# XDG home and config dirs are empty, and no VK_*LAYER_PATH is set. Whether
# the layer ran is read from its own log (GPUTRACE_LOG=info writes "gputrace:
# layer active" at vkCreateInstance; an unloaded layer writes nothing).
# Exit 0 pass, 1 fail.
set -eu

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gputrace-install-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
log=$tmp/gputrace.log

fail() {
    echo "FAIL: $*" >&2
    for f in "$tmp/out" "$tmp/err" "$log"; do
        if [ -s "$f" ]; then
            echo "--- $(basename "$f"):" >&2
            tail -n 30 "$f" >&2
        fi
    done
    exit 1
}

# ---- the install tree: exactly the expected files ----
"$GT_MESON" install -C "$GT_BUILD_ROOT" --destdir "$root" --no-rebuild --quiet \
    > "$tmp/out" 2> "$tmp/err" || fail "meson install --destdir failed"

sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$GT_EXPECTED" | awk '{ print $1 }' |
    sed -e "s|@bindir@|$GT_BINDIR|" -e "s|@libdir@|$GT_LIBDIR|" \
        -e "s|@datadir@|$GT_DATADIR|" -e "s|@mandir@|$GT_MANDIR|" | sort > "$tmp/expected"
(cd "$root" && find . ! -type d | sed 's|^\.||' | sort) > "$tmp/installed"
if ! diff -u "$tmp/expected" "$tmp/installed" > "$tmp/out"; then
    echo "install tree differs from $GT_EXPECTED (- expected, + installed):" >&2
    cat "$tmp/out" >&2
    exit 1
fi
echo "ok: $(wc -l < "$tmp/installed") files installed, as listed"

manifest=$root$GT_DATADIR/vulkan/implicit_layer.d/VkLayer_gputrace_timeline.json
python3 -m json.tool "$manifest" > /dev/null 2> "$tmp/err" || fail "$manifest is not valid JSON"
description=$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["layer"]["description"])' "$manifest")
[ -n "$description" ] || fail "manifest has no description"
echo "ok: manifest is valid JSON"

# ---- the loader sees only the install tree ----
lvp=
for f in /usr/share/vulkan/icd.d/lvp_icd.*.json; do
    [ -f "$f" ] && lvp=$f && break
done
[ -n "$lvp" ] || fail "lavapipe ICD manifest not found (Debian: mesa-vulkan-drivers, scripts/lib.sh)"
command -v vulkaninfo > /dev/null || fail "vulkaninfo not found (Debian: vulkan-tools, scripts/lib.sh)"
mkdir -p "$tmp/empty"
export VK_DRIVER_FILES="$lvp" VK_ICD_FILENAMES="$lvp"
export HOME="$tmp/empty" XDG_DATA_HOME="$tmp/empty" XDG_CONFIG_HOME="$tmp/empty" \
    XDG_CONFIG_DIRS="$tmp/empty" XDG_DATA_DIRS="$root$GT_DATADIR"
# The manifest names the library bare, as installed into a system libdir;
# only the install tree's libdir, never the build tree meson test adds.
export LD_LIBRARY_PATH="$root$GT_LIBDIR"
unset VK_LAYER_PATH VK_ADD_LAYER_PATH VK_IMPLICIT_LAYER_PATH VK_ADD_IMPLICIT_LAYER_PATH \
      VK_INSTANCE_LAYERS VK_LOADER_LAYERS_ENABLE VK_LOADER_LAYERS_DISABLE VK_LOADER_DEBUG
for v in $(env | sed -n 's/^\(GPUTRACE_[A-Za-z0-9_]*\)=.*/\1/p'); do
    unset "$v"
done
# A sanitizer build's layer needs its runtime loaded first in programs that
# were not built with it; their own leaks are not ours to report.
asan_rt=$(ldd "$root$GT_LIBDIR/libVkLayer_gputrace_timeline.so" 2> /dev/null |
    awk '/libasan\.so/ { print $3; exit }')
# vk CMD...: runs a Vulkan program, with that runtime when there is one.
if [ -n "$asan_rt" ]; then
    export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
    vk() { LD_PRELOAD="$asan_rt" "$@"; }
else
    vk() { "$@"; }
fi
export GPUTRACE_BACKEND=none GPUTRACE_LOG=info GPUTRACE_LOG_FILE="$log"

vk vulkaninfo --summary > "$tmp/out" 2> "$tmp/err" || fail "vulkaninfo --summary failed"
listed=$(grep -c 'VK_LAYER_GPUTRACE_timeline' "$tmp/out" || true)
[ "$listed" = 1 ] || fail "vulkaninfo --summary lists VK_LAYER_GPUTRACE_timeline $listed times, not once"
grep 'VK_LAYER_GPUTRACE_timeline' "$tmp/out" | grep -qF "$description" ||
    fail "vulkaninfo does not show the layer with its description '$description'"
echo "ok: vulkaninfo --summary: $(grep 'VK_LAYER_GPUTRACE_timeline' "$tmp/out" | sed 's/  */ /g')"
[ ! -s "$log" ] || fail "the layer ran in vulkaninfo though nothing enabled it"

# expect active|pass-through|inactive WHAT VAR=VALUE... -- CMD...: one way of enabling.
expect() {
    want=$1 what=$2
    shift 2
    rm -f "$log"
    while [ "$1" != "--" ]; do
        export "${1?}"
        shift
    done
    shift
    vk "$@" > "$tmp/out" 2> "$tmp/err" || fail "$what: '$*' failed"
    if grep -q 'gputrace: layer active' "$log" 2> /dev/null; then
        got=active
    elif grep -q 'gputrace: layer disabled by GPUTRACE_DISABLE' "$log" 2> /dev/null; then
        got=pass-through
    else
        got=inactive
    fi
    [ "$got" = "$want" ] || fail "$what: the layer is $got, expected $want"
    echo "ok: $what: layer $got"
    unset GPUTRACE_ENABLE GPUTRACE_DISABLE VK_LOADER_LAYERS_ENABLE VK_ADD_LAYER_PATH \
          VK_INSTANCE_LAYERS
}

expect active "GPUTRACE_ENABLE=1" GPUTRACE_ENABLE=1 -- vulkaninfo --summary
expect inactive "GPUTRACE_ENABLE=1 GPUTRACE_DISABLE=1" \
    GPUTRACE_ENABLE=1 GPUTRACE_DISABLE=1 -- vulkaninfo --summary
expect active "VK_LOADER_LAYERS_ENABLE" \
    VK_LOADER_LAYERS_ENABLE=VK_LAYER_GPUTRACE_timeline -- vulkaninfo --summary
expect inactive "VK_LOADER_LAYERS_ENABLE with GPUTRACE_DISABLE=1" \
    VK_LOADER_LAYERS_ENABLE=VK_LAYER_GPUTRACE_timeline GPUTRACE_DISABLE=1 -- vulkaninfo --summary
expect active "ppEnabledLayerNames" -- "$GT_ENABLE_BY_NAME"
expect pass-through "ppEnabledLayerNames with GPUTRACE_DISABLE=1" \
    GPUTRACE_DISABLE=1 -- "$GT_ENABLE_BY_NAME"
expect inactive "no layer named" -- vulkaninfo --summary
# Loader 1.3.239 takes only explicit layers from VK_INSTANCE_LAYERS (README
# and docs/layer.md say so; a loader that changes this fails here, and the
# documentation with it).
expect inactive "VK_INSTANCE_LAYERS alone" \
    VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline -- vulkaninfo --summary
# What gputrace-ci does with the installed manifest: its directory added to
# the explicit search path, the layer named in VK_INSTANCE_LAYERS.
expect active "VK_ADD_LAYER_PATH=<datadir>/vulkan/implicit_layer.d + VK_INSTANCE_LAYERS" \
    VK_ADD_LAYER_PATH="$root$GT_DATADIR/vulkan/implicit_layer.d" \
    VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline -- vulkaninfo --summary
echo "PASS"
