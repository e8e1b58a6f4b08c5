#!/bin/sh
# SPDX-License-Identifier: MIT
# bundle_test.sh — scripts/gpu-bundle packs this build (--from-build: the
# binaries under test, no build inside a test), and its run.sh works from
# an empty environment: unpacked into a fresh folder, run from another
# empty folder under `env -i` with only VK_DRIVER_FILES / VK_ICD_FILENAMES
# (lavapipe), with only the bundle's libraries and the system's loader and
# ICD. It must print the device and driver, the probe's verdict, the three
# workload variants with their ratios and CPU per region, gputrace-check's
# verdict and error bound; write only into its folder; and do the same
# with the bundle's own loader into $OUT.
# Environment (meson.build): GT_SOURCE_ROOT, GT_BUILD_ROOT.
# Exit 0 pass, 1 fail, 77 skip.
set -eu

case_name=gpu-bundle
. "$(dirname "$0")/../common/gt_test_lib.sh"
for tool in python3 pkg-config dpkg-query objdump tar; do
    command -v $tool > /dev/null || skip "$tool not found"
done

# ---- pack -----------------------------------------------------------------------------
bash "$GT_SOURCE_ROOT/scripts/gpu-bundle" --from-build "$GT_BUILD_ROOT" "$tmp/bundle.tar.gz" \
    > "$tmp/out" 2> "$tmp/err" || fail "scripts/gpu-bundle failed"
size=$(stat -c %s "$tmp/bundle.tar.gz")
[ "$size" -le $((60 * 1024 * 1024)) ] || fail "the bundle is $size bytes, over 60 MiB"
tar -tzf "$tmp/bundle.tar.gz" | sort > "$tmp/files"
for f in run.sh README.txt MANIFEST.txt bin/gputrace-probe bin/gputrace-check \
    bin/gputrace-workload layer/libVkLayer_gputrace_timeline.so \
    layer/VkLayer_gputrace_timeline.json lib/loader/libvulkan.so.1 lib/libglib-2.0.so.0; do
    grep -qx "gputrace-bundle/$f" "$tmp/files" || fail "the bundle lacks $f"
done
if grep -E '/(libc|libm|libpthread|libdl|ld-linux[^/]*)\.so' "$tmp/files"; then
    fail "the bundle carries glibc's own libraries"
fi
if grep -q 'lvp\|libvulkan_' "$tmp/files"; then
    fail "the bundle carries a Vulkan driver"
fi

# ---- run from an empty environment ------------------------------------------------------
mkdir "$tmp/unpacked" "$tmp/cwd"
tar -C "$tmp/unpacked" -xzf "$tmp/bundle.tar.gz"
b=$tmp/unpacked/gputrace-bundle
(cd "$b" && find . | sort) > "$tmp/before"
# A sanitizer build's programs (the ASan CI leg) run as they are, but without
# leak checking: lavapipe's memory is unmapped by the loader before exit
# (tests/common/gt_test_lib.sh preloads it instead; run.sh cannot).
sanitized=
if ldd "$GT_BUILD_ROOT/toolkit/gputrace-probe" 2> /dev/null | grep -q 'libasan'; then
    sanitized=ASAN_OPTIONS=detect_leaks=0
fi
# run_sh LOG [VAR=VALUE...]: run.sh --quick from the empty folder, under env -i.
# The probe's query-wait bound (1 s from the host's signal to the WAIT read's
# return) judges a driver on a machine of its own; here it is a deadline for
# a hang: a CI run at load 10 (2026-11-28) saw 1000.194 ms where 0.1 ms is
# usual, the same process's next read fine.
run_sh() {
    log_file=$1
    shift
    rc=0
    (cd "$tmp/cwd" && env -i VK_DRIVER_FILES="$lvp" VK_ICD_FILENAMES="$lvp" LP_NUM_THREADS="$LP_NUM_THREADS" $sanitized "$@" \
        timeout -k 5 240 "$b/run.sh" --quick --probe-option --max-wait-ms=20000 > "$log_file" 2>&1) || rc=$?
}
run_sh "$tmp/run1.log"
cp "$tmp/run1.log" "$tmp/out"
[ $rc -eq 0 ] || fail "run.sh exited $rc"
cat "$tmp/run1.log"
for want in '^device 0: llvmpipe' '^  driver: llvmpipe, Mesa ' '^gputrace-probe: PASS: ' \
    '^vulkan loader: system' '^per run: frames=150 submissions=[0-9]* regions=[0-9]* on device 0' \
    '^wall: plain [0-9.]* s, layer [0-9.]* s, app-timestamps [0-9.]* s$' \
    '^ratios: layer / plain [0-9.]*, app-timestamps / plain [0-9.]*$' \
    "^layer overhead over its timestamps' own cost: " \
    '^application-thread CPU per region: plain [0-9]* ns, layer [0-9]* ns, app-timestamps [0-9]* ns' \
    '^run.sh: gputrace-check pass; GPU clock conversion error bound [0-9][0-9]* ns' \
    '^run.sh: probe exit 0, gputrace-check exit 0; '; do
    grep -q "$want" "$tmp/run1.log" || fail "run.sh printed no line matching: $want"
done
# Nothing outside its folder: the folder it ran from stays empty, and the
# bundle gained only results/ and work/.
[ -z "$(ls -A "$tmp/cwd")" ] || fail "run.sh wrote into the folder it ran from"
(cd "$b" && find . | sort) | comm -13 "$tmp/before" - | grep -v '^\./\(results\|work\)\(/\|$\)' \
    > "$tmp/new" || true
[ ! -s "$tmp/new" ] || fail "run.sh wrote outside results/ and work/: $(cat "$tmp/new")"
for f in report.txt probe.json probe.xml trace.pftrace check.json; do
    [ -s "$b/results/$f" ] || fail "results/$f missing"
done

# ---- the bundle's own loader, results into $OUT -------------------------------------------
run_sh "$tmp/run2.log" GPUTRACE_BUNDLE_LOADER=bundled OUT="$tmp/results2"
cp "$tmp/run2.log" "$tmp/out"
[ $rc -eq 0 ] || fail "run.sh with the bundled loader exited $rc"
grep -q '^vulkan loader: bundled' "$tmp/run2.log" || fail "the bundled loader was not used"
[ -s "$tmp/results2/report.txt" ] && [ -s "$tmp/results2/trace.pftrace" ] ||
    fail "nothing written to \$OUT"
echo "BUNDLE bytes=$size files=$(wc -l < "$tmp/files") run_seconds=$(sed -n 's/.*gputrace-check exit 0; \([0-9]*\) s;.*/\1/p' "$tmp/run1.log")"
echo "ok: $case_name"
