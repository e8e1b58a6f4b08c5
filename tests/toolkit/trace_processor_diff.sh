#!/bin/bash
# SPDX-License-Identifier: MIT
# Differential test against Perfetto's own trace_processor (v47): every
# committed trace of the test data is imported by both trace_processor_shell
# and gputrace-check, and their figures must agree:
#   * whether the trace imports at all: trace_processor fails exactly when
#     gputrace-check refuses the file (exit 2) or reports import_error;
#   * every stat trace_processor reports (summed over idx, like the JSON
#     report) that gputrace-check also has: same value;
#   * every error/data_loss stat trace_processor reports nonzero: present
#     in gputrace-check's report (a loss we do not model fails the test);
#   * every nonzero traced_buf_* / ftrace_cpu_* stat of ours: reported by
#     trace_processor too (it lists these indexed stats only when set);
#   * GPU slices: render stages = gpu_render_stage_events, slices on the
#     "Vulkan Events" track (one per vkQueueSubmit) = vulkan_api_events;
#   * every GPU render stage's time on the trace clock as gputrace-check
#     converts it (--gpu-stages) = its gpu_slice.ts, with the same
#     submission_id (compared as sorted lists: gpu_slice has no event_id).
# Differences by design are listed below with their reason. Our own stats
# (previous_packet_dropped, sequence_packet_loss, incremental_state_*, ...)
# have no counterpart in trace_processor v47 and are not compared here; the
# conformance tests check them against protoc --decode_raw instead
# (conformance/*.figures). conformance/periodic.pftrace shows why they
# matter: traced wrote its TraceStats into that write_into_file trace only
# once, before any loss, so trace_processor reports no loss stat at all
# while packets after gaps in their sequences carry previous_packet_dropped
# (periodic.figures).
#
# usage: trace_processor_diff.sh GPUTRACE_CHECK DIR...   (every DIR/*.pftrace)
# Needs $PERFETTO_BIN/trace_processor_shell; without it: SKIP (exit 77).
set -u

check=${1:?usage: $0 GPUTRACE_CHECK DIR...}
shift
tp=${PERFETTO_BIN:-}/trace_processor_shell
if [[ -z ${PERFETTO_BIN:-} || ! -x $tp ]]; then
  echo "SKIP: PERFETTO_BIN does not name a folder with trace_processor_shell" \
    "(PERFETTO_BIN='${PERFETTO_BIN:-}'); scripts/lib.sh sets it when ../shared/perfetto/bin exists"
  exit 77
fi
if ! version=$("$tp" --version 2>&1); then
  echo "FAIL: $tp does not run: $version"
  echo "  (it needs the Debian packages libprotobuf32, libsqlite3-0, zlib1g)"
  exit 1
fi

# Traces trace_processor is not run on: it does not bound its work there.
declare -A not_run=(
  [fail-clock_sync_failure-dense]="a dense clock graph built to be expensive: trace_processor v47 was still busy after 150 s (1.8 GB); gputrace-check bounds its path search (docs/toolkit.md, Resource bounds)"
  [warn-state_limit_reached]="tracks enough state to exhaust memory: trace_processor v47 was still busy after 150 s (2.6 GB); gputrace-check stops at its state limit and says so"
)

# Traces both read, but only one of them imports.
declare -A import_differs=(
  [error-truncated]="the file ends inside a packet record: trace_processor keeps what came before and ignores the tail, gputrace-check calls the file damaged (input error)"
  [error-huge-length]="a record claims 8 GiB, more than the file: as error-truncated (and over --max-packet-size)"
  [error-inflate-bomb]="compressed_packets inflate over 100 times: gputrace-check stops at --max-inflate-ratio (a decompression bomb), trace_processor inflates it all"
)

# Traces trace_processor dies on (killed by a signal, or out of time).
declare -A tp_dies=(
  [error-nested-compressed]="compressed_packets inside compressed_packets: trace_processor v47 aborts (SIGILL, a failed CHECK); gputrace-check refuses it as input error"
)

query=$(mktemp)
work=$(mktemp -d)
trap 'rm -rf "$query" "$work"' EXIT
cat >"$query" <<'EOF'
select name, severity, sum(value) from stats group by name, severity
union all
select '#gpu_render_stage_events', 'figure', count(*) from gpu_slice s
  join gpu_track t on s.track_id = t.id where t.name <> 'Vulkan Events'
union all
select '#vulkan_api_events', 'figure', count(*) from gpu_slice s
  join gpu_track t on s.track_id = t.id where t.name = 'Vulkan Events'
union all
select '@stage', s.ts, s.submission_id from gpu_slice s
  join gpu_track t on s.track_id = t.id where t.scope = 'gpu_render_stage';
EOF

echo "trace_processor: $tp ($(head -n 1 <<<"$version"))"
traces=0 bad=0 skipped=0 differing=0 stages=0
for dir in "$@"; do
  for f in "$dir"/*.pftrace; do
    [[ -f $f ]] || continue
    name=$(basename "$f" .pftrace)
    traces=$((traces + 1))
    if [[ -n ${not_run[$name]:-} ]]; then
      echo "not run: $name: ${not_run[$name]}"
      skipped=$((skipped + 1))
      continue
    fi
    # Time limits on both and a memory limit on trace_processor, so that a
    # hostile trace added later fails the test instead of hanging it or the
    # machine.
    # (The outer redirection hides the shell's own "Illegal instruction"
    # line when trace_processor dies; the exit status tells it.)
    { (ulimit -v 4000000; exec timeout 60 "$tp" -q "$query" "$f") >"$work/tp.csv" 2>"$work/tp.err"; } 2>/dev/null
    tp_rc=$?
    # No address-space limit here: a sanitizer build reserves terabytes of
    # shadow memory up front (gputrace-check bounds its own memory).
    (exec timeout 60 "$check" --json --no-progress --gpu-stages "$work/ours.stages" "$f") \
      >"$work/ours.json" 2>"$work/ours.err"
    ours_rc=$?
    if ((ours_rc > 2)); then
      echo "FAIL: $name: gputrace-check exited $ours_rc: $(tail -n 3 "$work/ours.err")"
      bad=$((bad + 1))
      continue
    fi
    if ((tp_rc == 124 || tp_rc > 128)); then
      if [[ -n ${tp_dies[$name]:-} ]]; then
        echo "by design: $name: ${tp_dies[$name]}"
        differing=$((differing + 1))
      else
        echo "FAIL: $name: trace_processor exit $tp_rc (killed or out of time); list it if it must be"
        tail -n 3 "$work/tp.err" | sed 's/^/  trace_processor: /'
        bad=$((bad + 1))
      fi
      continue
    elif [[ -n ${tp_dies[$name]:-} ]]; then
      echo "FAIL: $name: listed as killing trace_processor, but it exited $tp_rc: update the list"
      bad=$((bad + 1))
      continue
    fi
    ours_refused=0
    if ((ours_rc == 2)) || grep -q '"code": "import_error"' "$work/ours.json"; then
      ours_refused=1
    fi
    tp_refused=0
    ((tp_rc == 0)) || tp_refused=1
    if ((tp_refused != ours_refused)); then
      if [[ -n ${import_differs[$name]:-} ]]; then
        echo "by design: $name: ${import_differs[$name]}"
        differing=$((differing + 1))
      else
        echo "FAIL: $name: trace_processor exit $tp_rc, gputrace-check exit $ours_rc" \
          "(import_error: $ours_refused): they disagree on whether the trace imports"
        tail -n 3 "$work/tp.err" | sed 's/^/  trace_processor: /'
        bad=$((bad + 1))
      fi
      continue
    fi
    if [[ -n ${import_differs[$name]:-} ]]; then
      echo "FAIL: $name: listed as importing differently, but both tools agree now: update the list"
      bad=$((bad + 1))
      continue
    fi
    ((tp_refused)) && continue   # both refuse: nothing more to compare

    # Ours: the "stats" object, one "name value" line each, plus the totals.
    awk '/^  "stats": \{/ { s = 1; next } s && /^  \}/ { s = 0 }
         s { gsub(/[",:]/, ""); print $1, $2 }
         /^  "(gpu_render_stage_events|vulkan_api_events)": / { gsub(/[",:]/, ""); print "#" $1, $2 }' \
      "$work/ours.json" >"$work/ours.txt"
    # Theirs: "name severity value", CSV without the header; the render
    # stages ("@stage,ts,submission_id") apart.
    tail -n +2 "$work/tp.csv" | tr -d '"' | awk -F, '$1 != "@stage" { print $1, $2, $3 }' >"$work/tp.txt"
    tail -n +2 "$work/tp.csv" | tr -d '"' | awk -F, '$1 == "@stage" { print $2, $3 }' |
      sort -k1,1n -k2,2n >"$work/tp.stages"
    # Ours: "event_id ts submission_id" after a "# FILE" line.
    awk '!/^#/ { print $2, $3 }' "$work/ours.stages" | sort -k1,1n -k2,2n >"$work/ours.stages.sorted"
    if ! cmp -s "$work/tp.stages" "$work/ours.stages.sorted"; then
      echo "FAIL: $name: GPU render stages (trace-clock ts, submission_id) differ:" \
        "trace_processor $(wc -l <"$work/tp.stages"), gputrace-check $(wc -l <"$work/ours.stages.sorted") rows"
      diff "$work/tp.stages" "$work/ours.stages.sorted" | head -n 6 | sed 's/^/  /'
      bad=$((bad + 1))
      continue
    fi
    stages=$((stages + $(wc -l <"$work/tp.stages")))
    out=$(awk -v trace="$name" '
      FNR == NR { tp[$1] += $3; sev[$1] = $2; next }
      { ours[$1] = $2 }
      function differ(stat, msg) { print "FAIL: " trace ": " stat ": " msg }
      END {
        for (s in tp) {
          if (s ~ /_duration_ns$/) continue           # times the import itself
          if (s in ours) {
            if (tp[s] != ours[s]) differ(s, "trace_processor " tp[s] ", gputrace-check " ours[s])
          } else if ((sev[s] == "error" || sev[s] == "data_loss") && tp[s] != 0) {
            differ(s, "trace_processor reports " tp[s] " (" sev[s] "), gputrace-check has no such stat")
          }
        }
        for (s in ours)
          if (!(s in tp) && ours[s] != 0 && s ~ /^(traced_buf_|ftrace_cpu_)/)
            differ(s, "gputrace-check " ours[s] ", trace_processor has no row")
      }' "$work/tp.txt" "$work/ours.txt")
    if [[ -n $out ]]; then
      echo "$out"
      bad=$((bad + 1))
    fi
  done
done

echo "$traces traces: $((traces - skipped)) compared ($stages GPU render stages with equal" \
  "trace-clock timestamps), $skipped not run, $differing differing by design, $bad failing"
((traces > 0)) || { echo "FAIL: no trace found in $*"; exit 1; }
((bad == 0))
