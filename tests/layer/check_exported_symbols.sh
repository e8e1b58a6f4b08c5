#!/bin/sh
# SPDX-License-Identifier: MIT
# check_exported_symbols.sh NM READELF LIBRARY ALLOWLIST
#
# The layer is loaded into arbitrary applications: any symbol it exports can
# interpose on theirs. Fails if the dynamic symbols it defines differ from
# ALLOWLIST (one name per line, # comments), if it calls a vk* function
# directly, or if it links libvulkan (it must only be called by the loader).
set -eu

nm=$1 readelf=$2 lib=$3 allowlist=$4
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gputrace-symbols.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

"$nm" -D --defined-only "$lib" | awk 'NF >= 3 { print $3 }' | sort -u > "$tmp/actual"
grep -v -e '^#' -e '^[[:space:]]*$' "$allowlist" | sort -u > "$tmp/expected"

status=0
if ! cmp -s "$tmp/expected" "$tmp/actual"; then
    echo "FAIL: exported symbols of $lib differ from $allowlist (- allowed, + exported):"
    diff -u "$tmp/expected" "$tmp/actual" | tail -n +3
    status=1
fi

"$nm" -D --undefined-only "$lib" | awk '$NF ~ /^vk/ { print $NF }' > "$tmp/vk"
if [ -s "$tmp/vk" ]; then
    echo "FAIL: $lib calls Vulkan directly instead of through its dispatch tables:"
    cat "$tmp/vk"
    status=1
fi

if "$readelf" -d "$lib" | grep -q 'NEEDED.*libvulkan'; then
    echo "FAIL: $lib links libvulkan"
    status=1
fi

[ $status -eq 0 ] && echo "ok: $lib exports only: $(tr '\n' ' ' < "$tmp/actual")"
exit $status
