#!/bin/bash
# SPDX-License-Identifier: MIT
# Differential test against Perfetto's own trace_processor, one version at
# a time (47 or 58; tests/perfetto/tp_lib.sh finds them): every committed
# trace of the test data is imported by both trace_processor_shell and
# gputrace-check, and their figures must agree:
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
# Stats are compared by the version's own names: docs/toolkit.md's table
# "Stat names by version" says which of gputrace-check's stats a version
# does not report (they are not compared with it). Every difference that
# remains is a row of docs/toolkit.md's table "Remaining differences"
# (trace, versions, what, trace_processor's value, ours, why), which this
# script reads: an unlisted difference fails, and so does a listed one
# that does not occur, or not with those values.
# Our own stats (previous_packet_dropped, sequence_packet_loss,
# incremental_state_*, ...) have no counterpart in trace_processor and are
# not compared here; the conformance tests check them against protoc
# --decode_raw instead (conformance/*.figures).
#
# usage: trace_processor_diff.sh VERSION GPUTRACE_CHECK TOOLKIT_MD DIR...
#        (every DIR/*.pftrace; TOOLKIT_MD is docs/toolkit.md)
# Without VERSION's trace_processor_shell: SKIP (exit 77).
set -u

version=${1:?usage: $0 VERSION GPUTRACE_CHECK TOOLKIT_MD DIR...}
check=${2:?usage: $0 VERSION GPUTRACE_CHECK TOOLKIT_MD DIR...}
doc=${3:?usage: $0 VERSION GPUTRACE_CHECK TOOLKIT_MD DIR...}
shift 3
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../perfetto/tp_lib.sh"
why=$(tp_missing "$version")
if [[ -n $why ]]; then
  echo "SKIP: $why"
  exit 77
fi
tp=$(tp_dir "$version")/trace_processor_shell
[[ -r $doc ]] || { echo "FAIL: cannot read $doc"; exit 1; }

# table TITLE: the rows of the markdown table after the paragraph that
# starts with **TITLE.**, one per line, cells separated by '|', trimmed,
# without backticks; header and separator rows left out.
table() {
  awk -v title="**$1.**" '
    index($0, title) == 1 { on = 1; next }
    on && /^\|/ { rows++; if (rows > 2) print; next }
    on && rows > 0 { exit }' "$doc" |
    sed 's/`//g; s/^| *//; s/ *|$//; s/ *| */|/g'
}

# Stats this version does not report: not compared.
declare -A off=()
while IFS='|' read -r stat v47 v58 _; do
  case $version in
  47) [[ $v47 == no ]] && off[$stat]=1 ;;
  58) [[ $v58 == no ]] && off[$stat]=1 ;;
  esac
done < <(table "Stat names by version")
((${#off[@]} > 0)) || { echo "FAIL: no table 'Stat names by version' in $doc"; exit 1; }

# The listed differences of this version: listed[TRACE|WHAT]="THEIRS|OURS".
declare -A listed=() reason=() occurred=()
while IFS='|' read -r trace versions what theirs ours why; do
  [[ ", $versions," == *", $version,"* ]] || continue
  listed[$trace|$what]="$theirs|$ours"
  reason[$trace|$what]=$why
done < <(table "Remaining differences")

bad=0
# differs TRACE WHAT THEIRS OURS: a difference; fine when listed so.
differs() {
  local key="$1|$2"
  if [[ ${listed[$key]+set} && ${listed[$key]} == "$3|$4" ]]; then
    echo "listed: $1: $2: trace_processor $3, gputrace-check $4 (${reason[$key]})"
    occurred[$key]=1
  else
    echo "FAIL: $1: $2: trace_processor $3, gputrace-check $4" \
      "$([[ ${listed[$key]+set} ]] && echo "(listed as ${listed[$key]/|/ against })" || echo "(not listed in $doc)")"
    bad=$((bad + 1))
  fi
}

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

echo "trace_processor v$version: $tp ($(tp_version_line "$version"))"
echo "stats not compared with v$version: ${!off[*]}"
traces=0 stages=0
declare -A present=()
for dir in "$@"; do
  for f in "$dir"/*.pftrace; do
    [[ -f $f ]] || continue
    name=$(basename "$f" .pftrace)
    present[$name]=1
    traces=$((traces + 1))
    if [[ ${listed[$name|run]+set} ]]; then
      differs "$name" run "not run" checked
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
    ours=imports
    if ((ours_rc == 2)) || grep -q '"code": "import_error"' "$work/ours.json"; then
      ours=refuses
    fi
    theirs=imports
    if ((tp_rc == 124 || tp_rc > 128)); then
      theirs=dies
    elif ((tp_rc != 0)); then
      theirs=refuses
    fi
    if [[ $theirs != "$ours" ]]; then
      [[ $theirs == dies || ${listed[$name|import]+set} ]] ||
        tail -n 3 "$work/tp.err" | sed 's/^/  trace_processor: /'
      differs "$name" import "$theirs" "$ours"
      continue
    fi
    [[ $ours == imports ]] || continue # both refuse: nothing more to compare
    # v47 skips zstd_compressed_packets, and so everything inside them: a
    # listed "zstd" row says so, and nothing else of the trace is compared.
    if [[ ${listed[$name|zstd]+set} ]]; then
      zstd=$(sed -n 's/^ *"zstd_compressed_packets": \([0-9]*\).*/\1/p' "$work/ours.json")
      tp_stages=$(grep -c '^"@stage"' "$work/tp.csv")
      if ((${zstd:-0} > 0 && tp_stages == 0)); then
        differs "$name" zstd skips expands
      else
        differs "$name" zstd "$tp_stages GPU stages" "${zstd:-0} zstd_compressed_packets"
      fi
      continue
    fi

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
      differs "$name" stages "$(wc -l <"$work/tp.stages")" "$(wc -l <"$work/ours.stages.sorted")"
      [[ ${occurred[$name|stages]+set} ]] ||
        diff "$work/tp.stages" "$work/ours.stages.sorted" | head -n 6 | sed 's/^/  /'
    else
      stages=$((stages + $(wc -l <"$work/tp.stages")))
    fi
    # "STAT THEIRS OURS" for each stat that differs ("—": no such stat).
    awk -v off=" ${!off[*]} " '
      FNR == NR { tp[$1] += $3; sev[$1] = $2; next }
      { ours[$1] = $2 }
      END {
        for (s in tp) {
          if (s ~ /_duration_ns$/ || index(off, " " s " ")) continue
          if (s in ours) {
            if (tp[s] != ours[s]) print s, tp[s], ours[s]
          } else if ((sev[s] == "error" || sev[s] == "data_loss") && tp[s] != 0) {
            print s, tp[s], "—"
          }
        }
        for (s in ours)
          if (!(s in tp) && ours[s] != 0 && s ~ /^(traced_buf_|ftrace_cpu_)/ && !index(off, " " s " "))
            print s, "—", ours[s]
      }' "$work/tp.txt" "$work/ours.txt" | sort >"$work/differ"
    while read -r stat a b; do
      differs "$name" "${stat#\#}" "$a" "$b"
    done <"$work/differ"
  done
done

# A listed difference must have occurred, with its values.
for key in "${!listed[@]}"; do
  [[ ${occurred[$key]+set} ]] && continue
  trace=${key%%|*}
  if [[ ! ${present[$trace]+set} ]]; then
    echo "FAIL: listed difference $key: no trace $trace in $*: update $doc"
  else
    echo "FAIL: listed difference $key (${listed[$key]/|/ against }) did not occur: update $doc"
  fi
  bad=$((bad + 1))
done

echo "$traces traces against trace_processor v$version: $stages GPU render stages with equal" \
  "trace-clock timestamps, ${#occurred[@]} listed difference(s), $bad failing"
((traces > 0)) || { echo "FAIL: no trace found in $*"; exit 1; }
((bad == 0))
