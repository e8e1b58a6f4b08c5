#!/bin/sh
# SPDX-License-Identifier: MIT
# probe_test.sh CASE — gputrace-probe on lavapipe, clean or under one driver
# bug that VK_LAYER_GPUTRACE_clockfault injects (tests/faultlayer):
#
#   gputrace-probe -> VK_LAYER_GPUTRACE_clockfault -> lavapipe
#
# A bug must fail the check made for it (`must`), may fail the checks it
# reaches by the timing of the run (`may`), and no other; the clean driver
# and a legal 36-bit wrap fail nothing. Each case also checks the measured
# value against the injected size, with the margins the run itself
# reports (bracket widths), never against wall time. Each prints
#   PROBE <case> check=<name> verdict=<v> measured=<value> <unit> also_failed=<...>
# (docs/ci.md, "Driver bugs the probe catches").
#
# ci-probe: gputrace-ci --probe passes on the clean driver and fails, with
# the probe's verdict in its JUnit file, under the calibration offset.
#
# Environment (meson.build): GT_PROBE, GT_FAULT_DIR, GT_WORKLOAD, GT_CI.
# Exit 0 pass, 1 fail, 77 skip.
set -eu

case_name=${1:?usage: probe_test.sh CASE}
. "$(dirname "$0")/../common/gt_test_lib.sh"

need_exe "$GT_PROBE" gputrace-probe

json=$tmp/probe.json
truth=$tmp/truth.txt
duration=0.25
must=
may=
faults=
expect_rc=1
case $case_name in
clean) duration=1 expect_rc=0 ;;
calibration-offset)
    # AMD GFX11.5: calibrated timestamps from another counter, 11.85 s off.
    faults="GPUTRACE_FAULT_CALIB_OFFSET_NS=11850000000" must=written-vs-calibrated ;;
period-ppm)
    # The full 1 s span: the written stamps' rate is measured over it too.
    # The wrong period also moves each stamp's mapping by 1000 ppm of its
    # distance to the calibration, 900 more than written-vs-calibrated
    # allows: outside its bracket when the thread waited long between the
    # two (a stamp 29 us out, brackets up to 94 ms, in the debug suite on
    # the loaded 2-core machine, 2026-11-28). No bound from the brackets:
    # the calibration after a bracket can itself come late.
    faults="GPUTRACE_FAULT_PERIOD_PPM=1000" must=period duration=1 may=written-vs-calibrated ;;
deviation-understated)
    # 20 us of noise in the DEVICE reading, maxDeviation reported as 1 ns: the
    # mapping and the rate can go wrong by that much too.
    faults="GPUTRACE_FAULT_DEVIATION_NS=20000 GPUTRACE_FAULT_DEVIATION_REPORTED_NS=1 GPUTRACE_FAULT_SEED=3"
    must=deviation may="written-vs-calibrated period" ;;
family-offset)
    faults="GPUTRACE_FAULT_FAMILY_OFFSET_NS=1000000000 GPUTRACE_FAULT_FAMILY=0"
    must=written-vs-calibrated ;;
counter-reset)
    # Restarts before the probe's 13th submission: the family's run is its
    # first, 8 stamped submissions a burst, so the second burst's stamps
    # straddle the reset at any speed (a reset 500 ms after the instance fell
    # before the run on a loaded machine, docs/ci.md). A calibration and a
    # stamp straddling the reset, or the rate across it, may fail as well.
    faults="GPUTRACE_FAULT_RESET_AFTER_SUBMITS=12" must=order duration=1
    may="period written-vs-calibrated valid-bits" ;;
wrap-36-bits)
    # Legal: a 36-bit counter wrapping 500 ms in, extended by the probe.
    faults="GPUTRACE_FAULT_VALID_BITS=36 GPUTRACE_FAULT_WRAP_AFTER_MS=500" duration=1 expect_rc=0 ;;
bits-understated)
    faults="GPUTRACE_FAULT_VALID_BITS=48 GPUTRACE_FAULT_REPORT_BITS=40" must=valid-bits ;;
host-offset)
    # CLOCK_MONOTONIC answered 1 s off (BOOTTIME after a suspend): the host
    # readings and every mapping through them.
    faults="GPUTRACE_FAULT_HOST_OFFSET_NS=1000000000" must="host-domains written-vs-calibrated" ;;
early-availability)
    faults="GPUTRACE_FAULT_EARLY_AVAILABLE=1" must="query-availability query-reset" ;;
wait-hang) faults="GPUTRACE_FAULT_WAIT_HANG=1" must=query-wait ;;
ci-probe) ;;
*)
    echo "probe_test.sh: unknown case '$case_name'" >&2
    exit 2
    ;;
esac

# ---- gputrace-ci --probe -------------------------------------------------------------
if [ "$case_name" = ci-probe ]; then
    need_exe "${GT_CI:-}" gputrace-ci
    need_exe "$GT_WORKLOAD" gputrace-workload
    set -- --lavapipe --probe --probe-option=--duration=0.2 --probe-option=--max-wait-ms=20000 \
        --junit "$tmp/ci.xml" -- \
        "$GT_WORKLOAD" --frames 3
    run_bounded 60 "$GT_CI" "$@"
    [ $rc -eq 0 ] || fail "gputrace-ci --probe on clean lavapipe exited $rc"
    grep -q 'driver probe pass' "$tmp/out" || fail "no 'driver probe pass' in the verdict"
    grep -q '<testcase classname="gputrace-probe.device0" name="period family 0">' "$tmp/ci.xml" ||
        fail "the probe's test cases are missing from gputrace-ci's JUnit file"
    VK_LAYER_PATH="$GT_FAULT_DIR" VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_clockfault \
        GPUTRACE_FAULT_CALIB_OFFSET_NS=11850000000 run_bounded 60 "$GT_CI" "$@"
    [ $rc -eq 1 ] || fail "gputrace-ci --probe under a calibration offset exited $rc, not 1"
    grep -q 'driver probe FAIL' "$tmp/out" || fail "no 'driver probe FAIL' in the verdict"
    grep -q '<testcase classname="gputrace-ci" name="probe"><failure type="error" message="gputrace-probe: FAIL: .*written-vs-calibrated' \
        "$tmp/ci.xml" || fail "the probe case of the JUnit file lacks the probe's verdict"
    grep -q 'name="written-vs-calibrated family 0"><failure' "$tmp/ci.xml" ||
        fail "the probe's failing test case is missing from the JUnit file"
    python3 -c "import sys, xml.dom.minidom as m; m.parse(sys.argv[1])" "$tmp/ci.xml" ||
        fail "gputrace-ci's JUnit file is not well-formed XML"
    echo "PROBE ci-probe clean=pass calibration-offset=fail (exit 1, probe verdict in JUnit)"
    echo "ok: $case_name"
    exit 0
fi

# ---- run ------------------------------------------------------------------------------
if [ -n "$faults" ]; then
    export VK_LAYER_PATH="$GT_FAULT_DIR" VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_clockfault
    export GPUTRACE_FAULT_TRUTH_FILE="$truth"
    for f in $faults; do export "${f?}"; done
fi
set -- --duration "$duration" --json "$json" --junit "$tmp/probe.xml"
# query-wait's 1 s bound judges a driver on a machine of its own; here it is
# a deadline for a hang (a WAIT read took over 1000 ms after the signal at
# load 10, where 0.1 ms is usual: docs/ci.md). wait-hang's injected hang is
# found by a shorter one, which is all that test needs.
if [ "$case_name" = wait-hang ]; then
    set -- "$@" --max-wait-ms 300
else
    set -- "$@" --max-wait-ms 20000
fi
# A hanging driver must not hang the probe: bounded well below the meson timeout.
run_bounded 40 "$GT_PROBE" "$@"
cat "$tmp/out"
[ $rc -eq "$expect_rc" ] || fail "gputrace-probe exited $rc, expected $expect_rc"
[ -s "$json" ] || fail "no --json report"
python3 -c "import sys, json, xml.dom.minidom as m; json.load(open(sys.argv[1])); m.parse(sys.argv[2])" \
    "$json" "$tmp/probe.xml" || fail "--json or --junit is not well-formed"
if [ -n "$faults" ]; then
    [ -s "$truth" ] || fail "the fault layer wrote no truth file (not loaded?)"
fi
tv() { sed -n "s/^$1=//p" "$truth" | head -n 1; }

# "check family verdict measured bound unit" per check.
sed -n 's/.*{"check": "\([a-z-]*\)", "family": \([0-9a-z]*\), "verdict": "\([a-z/]*\)", "measured": \([^,]*\), "bound": \([^,]*\), "unit": "\([a-z]*\)".*/\1 \2 \3 \4 \5 \6/p' \
    "$json" > "$tmp/checks"
[ "$(wc -l < "$tmp/checks")" -eq 11 ] || fail "expected 11 checks on lavapipe's one family"
field() { awk -v c="$1" -v f="$2" '$1 == c { print $f; exit }' "$tmp/checks"; }
detail() { grep -o "\"check\": \"$1\".*" "$json" | sed -n 's/.*"detail": "\(.*\)"}.*/\1/p' | head -n 1; }

# ---- which checks failed ----------------------------------------------------------------
also=
for c in $must; do
    [ "$(field "$c" 3)" = fail ] || fail "$c did not fail under $faults: $(detail "$c")"
done
while read -r check _ verdict _; do
    [ "$verdict" = fail ] || continue
    case " $must " in *" $check "*) continue ;; esac
    case " $may " in
    *" $check "*) also="$also,$check" ;;
    *) fail "$check failed, which ${faults:-the clean driver} should not make fail: $(detail "$check")" ;;
    esac
done < "$tmp/checks"

# ---- the measured value against the injected one ------------------------------------------
first=${must%% *}
measured=$(field "${first:-written-vs-calibrated}" 4)
unit=$(field "${first:-written-vs-calibrated}" 6)
# The widest bracket (us) the run had, from the written-vs-calibrated detail.
widest_ns=$(detail written-vs-calibrated | sed -n 's/.*brackets [0-9.]*-\([0-9.]*\) us.*/\1/p' |
    awk '{ printf "%.0f", $1 * 1000 }')
within() { # within VALUE LO HI
    awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }'
}
case $case_name in
calibration-offset | family-offset)
    # Off by the offset, less how far inside its bracket the stamp was and
    # the period's allowance (100 ppm) over the distance to the calibration.
    n=${faults#*OFFSET_NS=}
    n=${n%% *}
    within "$measured" $((n - n / 10000 - widest_ns - 1000)) $((n - n / 10000 + 1000)) ||
        fail "measured $measured ns, injected $n ns, brackets up to $widest_ns ns"
    if [ "$case_name" = family-offset ]; then
        [ "$(tv family_offsets)" -gt 0 ] || fail "no stamp of family 0 was offset"
        # The same offset on a family lavapipe does not have touches nothing.
        cp "$tmp/out" "$tmp/out.family0"
        GPUTRACE_FAULT_FAMILY=1 run_bounded 40 "$GT_PROBE" --duration 0.1
        [ $rc -eq 0 ] || fail "an offset on family 1 failed family 0 (exit $rc)"
        [ "$(tv family_offsets)" -eq 0 ] || fail "stamps of family 0 offset as family 1's"
        cp "$tmp/out.family0" "$tmp/out"
    fi
    ;;
period-ppm)
    expected=$(awk 'BEGIN { printf "%.4f", (1 / (1 + 1000e-6) - 1) * 1e6 }')
    within "$measured" "$(awk -v e="$expected" 'BEGIN { print e - 1 }')" \
        "$(awk -v e="$expected" 'BEGIN { print e + 1 }')" ||
        fail "measured $measured ppm, expected $expected (a period reported 1000 ppm long)"
    ;;
deviation-understated)
    [ "$(tv noisy_readings)" -gt 0 ] || fail "no noisy calibration was injected"
    within "$measured" 10000 20004 || fail "spread $measured ns for noise of up to 20000 ns"
    ;;
counter-reset)
    # Back by about the counter's value at the reset: more than the run.
    within "$measured" 1000000000 1e30 || fail "backward step of only $measured ns"
    ;;
wrap-36-bits)
    detail valid-bits | grep -q '1 wrap(s)' ||
        fail "the counter did not wrap during the run: $(detail valid-bits)"
    measured=$(field valid-bits 4) unit=bits
    ;;
bits-understated)
    [ "$measured" = 48 ] && [ "$(field valid-bits 5)" = 40 ] ||
        fail "valid-bits measured $measured against $(field valid-bits 5)"
    ;;
host-offset)
    within "$measured" 500000000 1000000000 || fail "host readings off by $measured ns, not 1 s"
    ;;
early-availability)
    [ "$(tv early_available_reads)" -gt 0 ] || fail "no early availability was injected"
    within "$measured" 1 1000 || fail "$measured queries available early"
    ;;
wait-hang)
    within "$measured" 300 40000 || fail "the hung WAIT read was given up after $measured ms"
    ;;
clean)
    measured=$(field written-vs-calibrated 4)
    ;;
esac

checks=$(echo "$must" | tr ' ' ',')
echo "PROBE $case_name check=${checks:-none} verdict=$(field "${first:-written-vs-calibrated}" 3)" \
    "measured=$measured $unit also_failed=${also#,}"
echo "ok: $case_name"
