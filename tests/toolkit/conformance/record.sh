#!/bin/bash
# SPDX-License-Identifier: MIT
# Maintainer tool: re-records the conformance traces of this folder with
# Perfetto's own programs. The test suite never runs it; it only reads what
# it wrote (README.md says what each trace is for).
#
#   PERFETTO_BIN=DIR tests/toolkit/conformance/record.sh [-B BUILD_DIR] [NAME...]
#
# PERFETTO_BIN holds traced, traced_probes, perfetto and trace_processor_shell
# (scripts/lib.sh points it at ../shared/perfetto/bin when that exists).
# BUILD_DIR (default: build) is a configured and built tree of this project:
# gputrace-stress, gputrace-workload, the layer and gputrace-check come from
# there. NAME is one of ring, discard, periodic, clean (default: all).
#
# For each NAME it starts a private traced and traced_probes (sockets in a
# temporary folder), records NAME.cfg.txt with perfetto while
# gputrace-stress and gputrace-workload (our layer, system backend, on
# lavapipe) produce, and writes beside the config:
#   NAME.pftrace   the trace as traced wrote it
#   NAME.expected  trace_processor's stats rows with a nonzero value
#                  (name, idx, severity, source, value), CSV as printed by
#                  trace_processor_shell -q; the *_duration_ns rows are left
#                  out: they time the import itself and change every run
#   NAME.figures   name=value lines gputrace-check's JSON must repeat, each
#                  measured by a tool other than ours: GPU slice counts from
#                  trace_processor, packet and loss-flag counts from
#                  protoc --decode_raw
# A recording that does not show what the trace is for (see want() below)
# is refused: the machine was too idle or too busy; run it again.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
build=$root/build
prog=$(basename "$0")

die() { printf '%s: %s\n' "$prog" "$*" >&2; exit 1; }

while getopts "B:h" opt; do
  case $opt in
    B) build=$(cd "$OPTARG" && pwd) ;;
    *) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
names=("$@")
[[ ${#names[@]} -gt 0 ]] || names=(ring discard periodic clean)

[[ -n ${PERFETTO_BIN:-} ]] || die "PERFETTO_BIN is not set (a folder with Perfetto's traced, traced_probes, perfetto, trace_processor_shell)"
for t in traced traced_probes perfetto trace_processor_shell; do
  [[ -x $PERFETTO_BIN/$t ]] || die "$PERFETTO_BIN/$t is missing"
done
stress=$build/tests/stress/gputrace-stress
workload=$build/tests/workload/gputrace-workload
check=$build/toolkit/gputrace-check
manifests=$build/manifests/explicit_layer.d
for f in "$stress" "$workload" "$check"; do
  [[ -x $f ]] || die "$f is missing: build $build first (or pass -B)"
done
[[ -d $manifests ]] || die "$manifests is missing: build $build first"
command -v protoc >/dev/null || die "protoc is missing (Debian: protobuf-compiler)"
lvp=
for f in /usr/share/vulkan/icd.d/lvp_icd.*.json /usr/local/share/vulkan/icd.d/lvp_icd.*.json; do
  [[ -f $f ]] && { lvp=$f; break; }
done
[[ -n $lvp ]] || die "lavapipe is missing (Debian: mesa-vulkan-drivers)"

# How hard each producer works during a recording. The rates were chosen
# so that the small buffers lose data while the traces stay under 300 KB.
load() {
  case $1 in
    # 64 KiB ring, read once at the end: wraps many times; the last window
    # holds GPU work after an incremental-state clear (every 100 ms).
    # The workload outlives the session so that it is still writing then.
    ring) stress_args=(--writers 2 --packets 1200 --rate 1000 --size 64)
          workload_args=(--duration-ms 2500 --frames 100000 --work 32) ;;
    # 128 KiB, DISCARD: full after a few hundred ms, then every later chunk
    # is refused.
    discard) stress_args=(--writers 2 --packets 1600 --rate 1000 --size 64)
             workload_args=(--duration-ms 1500 --frames 100000 --work 32) ;;
    # 32 KiB ring drained into the file every 250 ms: chunks are
    # overwritten between two reads, so sequences have gaps in the middle.
    periodic) stress_args=(--writers 2 --packets 600 --rate 500 --size 64)
              workload_args=(--duration-ms 1200 --frames 100000 --work 32) ;;
    # 4 MiB: everything fits.
    clean) stress_args=(--writers 2 --packets 300 --rate 500 --size 64)
           workload_args=(--frames 5) ;;
    *) die "unknown trace $1 (ring, discard, periodic, clean)" ;;
  esac
}

tmp=$(mktemp -d)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

wait_for() { # FILE PATTERN SECONDS
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

record() { # NAME OUT
  local name=$1 out=$2 d=$tmp/$1
  mkdir -p "$d"
  load "$name"
  export PERFETTO_PRODUCER_SOCK_NAME=$d/producer.sock PERFETTO_CONSUMER_SOCK_NAME=$d/consumer.sock
  "$PERFETTO_BIN/traced" >"$d/traced.log" 2>&1 &
  local traced=$!
  pids+=("$traced")
  wait_for "$d/traced.log" "Started traced" 5 || die "$name: traced did not start ($(cat "$d/traced.log"))"
  "$PERFETTO_BIN/traced_probes" >"$d/probes.log" 2>&1 &
  local probes=$!
  pids+=("$probes")
  # The probes' data sources must be registered before the session asks
  # for them; traced_probes logs nothing when it is, so give it a moment.
  sleep 0.5
  "$PERFETTO_BIN/perfetto" --txt -c "$here/$name.cfg.txt" -o "$d/trace.pftrace" \
    >"$d/perfetto.log" 2>&1 &
  local perfetto=$!
  pids+=("$perfetto")
  wait_for "$d/perfetto.log" "Connected to the Perfetto traced service" 5 ||
    die "$name: perfetto did not connect ($(cat "$d/perfetto.log"))"
  "$stress" "${stress_args[@]}" >"$d/stress.log" 2>&1 &
  local st=$!
  VK_ADD_LAYER_PATH=$manifests VK_INSTANCE_LAYERS=VK_LAYER_GPUTRACE_timeline \
    VK_DRIVER_FILES=$lvp VK_ICD_FILENAMES=$lvp GPUTRACE_BACKEND=system \
    GPUTRACE_STARTUP_WAIT_MS=5000 \
    "$workload" "${workload_args[@]}" >"$d/workload.log" 2>&1 ||
    die "$name: gputrace-workload failed: $(cat "$d/workload.log")"
  wait "$st" || die "$name: gputrace-stress failed: $(cat "$d/stress.log")"
  wait "$perfetto" || die "$name: perfetto failed: $(cat "$d/perfetto.log")"
  kill "$probes" "$traced"
  wait "$probes" "$traced" 2>/dev/null || true
  pids=()
  cp "$d/trace.pftrace" "$out"
  printf '%s: %s\n%s: %s\n' "$name" "$(tail -n 1 "$d/stress.log")" \
    "$name" "$(tail -n 1 "$d/workload.log")"
}

tp_query() { # SQL TRACE
  printf '%s\n' "$1" >"$tmp/query.sql"
  "$PERFETTO_BIN/trace_processor_shell" -q "$tmp/query.sql" "$2" 2>/dev/null
}

# One value of a name=value figures file (0 when absent).
figure() { sed -n "s/^$2=//p" "$1" | head -n 1 | grep . || echo 0; }
# One row's value in an .expected file (0 when absent).
expected() { awk -F, -v n="\"$2\"" '$1 == n { s += $NF } END { print s + 0 }' "$1"; }

# What each trace must show to be worth committing.
want() { # NAME EXPECTED FIGURES
  local name=$1 e=$2 f=$3 bad=0
  need() { (($1)) || { printf '%s: not shown: %s\n' "$name" "$2" >&2; bad=1; }; }
  local stages dropped seqloss
  stages=$(figure "$f" gpu_render_stage_events)
  dropped=$(figure "$f" previous_packet_dropped)
  seqloss=$(figure "$f" sequence_packet_loss)
  case $name in
    ring)
      need "$(expected "$e" traced_buf_chunks_overwritten) > 0" "chunks overwritten"
      need "$(expected "$e" traced_buf_write_wrap_count) > 1" "the ring wrapping"
      need "$dropped > 0" "previous_packet_dropped"
      need "$stages > 0" "GPU render stages" ;;
    discard)
      need "$(expected "$e" traced_buf_chunks_discarded) > 0" "chunks discarded"
      need "$stages > 0" "GPU render stages" ;;
    periodic)
      need "$seqloss > 0" "a gap inside a sequence"
      need "$stages > 0" "GPU render stages" ;;
    clean)
      need "$(grep -c '"error"\|"data_loss"' "$e" || true) == 0" "no error or data_loss stat"
      need "$seqloss == 0" "no gap inside a sequence"
      need "$stages > 0" "GPU render stages" ;;
  esac
  return $bad
}

# Counts a generic protobuf decoder sees: Trace.packet is field 1; inside a
# packet, trusted_packet_sequence_id is field 10 and previous_packet_dropped
# field 42. A flag on the first packet of a sequence is not a loss (the
# service marks a writer's first packet too).
decode_figures() { # TRACE
  protoc --decode_raw <"$1" | awk '
    /^1 \{$/ { open = 1; seq = ""; flag = 0; next }
    open && /^  10: / { seq = $2 }
    open && /^  42: / { flag = ($2 != 0) }
    open && /^\}$/ {
      open = 0; packets++
      if (seq != "" && flag) { flagged++; if (seq in seen) gaps++ }
      if (seq != "") seen[seq] = 1
    }
    END {
      printf "packets=%d\nprevious_packet_dropped=%d\nsequence_packet_loss=%d\n",
             packets, flagged, gaps
    }'
}

for name in "${names[@]}"; do
  load "$name"
  [[ -f $here/$name.cfg.txt ]] || die "$here/$name.cfg.txt is missing"
  trace=$tmp/$name.pftrace
  record "$name" "$trace"
  size=$(stat -c %s "$trace")
  ((size <= 300 * 1024)) || die "$name: $size bytes, over 300 KB: lower the load in load()"

  tp_query "select name, idx, severity, source, value from stats
            where value <> 0 and name not like '%_duration_ns'
            order by name, idx;" "$trace" >"$tmp/$name.expected"
  {
    echo "# $("$PERFETTO_BIN/perfetto" --version | head -n 1), traced and trace_processor_shell:"
    echo "# gpu_slice rows (render stages; vkQueueSubmit slices sit on the"
    echo "# \"Vulkan Events\" track)"
    tp_query "select 'gpu_render_stage_events=' || count(*) from gpu_slice s
              join gpu_track t on s.track_id = t.id where t.name <> 'Vulkan Events';" \
      "$trace" | tail -n 1 | tr -d '"'
    tp_query "select 'vulkan_api_events=' || count(*) from gpu_slice s
              join gpu_track t on s.track_id = t.id where t.name = 'Vulkan Events';" \
      "$trace" | tail -n 1 | tr -d '"'
    echo "# protoc --decode_raw: packets, previous_packet_dropped flags, those after"
    echo "# a sequence's first packet"
    decode_figures "$trace"
  } >"$tmp/$name.figures"
  want "$name" "$tmp/$name.expected" "$tmp/$name.figures" ||
    die "$name: recording refused (nothing written); run again"
  install -m 644 "$trace" "$here/$name.pftrace"
  install -m 644 "$tmp/$name.expected" "$tmp/$name.figures" "$here/"
  echo "$name: $size bytes"
  "$check" --no-progress "$here/$name.pftrace" | sed "s/^/  /" || true
done
