# SPDX-License-Identifier: MIT
# tp_lib.sh — sourced by every test that runs Perfetto's own programs
# (tests/perfetto, tests/layer identity, tests/realapps, tests/toolkit,
# and any later one): which Perfetto versions there are, where their
# programs are, and trace_processor_shell run on a trace by version.
# POSIX sh; defines no fail/skip of its own (callers have theirs).
#
# Versions and the variables that name their folders (scripts/lib.sh sets
# both from ../shared/perfetto beside the repository):
#   47   PERFETTO_BIN       Perfetto v47 (October 2024)
#   58   PERFETTO_V58_BIN   Perfetto v58 (August 2026: what tracebox and
#                           ui.perfetto.dev run today)
# Each folder holds traced, traced_probes, perfetto, trace_processor_shell.
#
#   tp_versions                    the versions, oldest first: "47 58"
#   tp_var V                       the variable naming V's folder
#   tp_dir V                       V's folder (empty when the variable is unset)
#   tp_missing V PROGRAM...        why V cannot be used for PROGRAM... (one
#                                  line), or nothing when it can; also checks
#                                  that V's trace_processor_shell runs and
#                                  says it is version V
#   tp_version_line V              trace_processor_shell --version, first line
#   tp_query V SQL_FILE TRACE      trace_processor V's answer to SQL_FILE: the
#                                  rows as CSV without the header line and the
#                                  quotes; non-zero exit (and its error on
#                                  stderr) when it fails
#   tp_each SQL_FILE TRACE         tp_query with every version there is, each
#                                  answer after a line "== trace_processor vV
#                                  (Perfetto vV.x-...)"; a version that is
#                                  missing gets "== trace_processor vV: not
#                                  available (why)". Exit 0 when every
#                                  available version answered, 1 otherwise

tp_versions() {
    echo "47 58"
}

tp_var() {
    case $1 in
    47) echo PERFETTO_BIN ;;
    58) echo PERFETTO_V58_BIN ;;
    *) echo "tp_lib.sh: unknown Perfetto version '$1'" >&2; return 2 ;;
    esac
}

tp_dir() {
    case $1 in
    47) printf '%s\n' "${PERFETTO_BIN:-}" ;;
    58) printf '%s\n' "${PERFETTO_V58_BIN:-}" ;;
    *) echo "tp_lib.sh: unknown Perfetto version '$1'" >&2; return 2 ;;
    esac
}

tp_version_line() {
    "$(tp_dir "$1")/trace_processor_shell" --version 2>&1 | head -n 1
}

tp_missing() {
    _tp_v=$1
    shift
    _tp_d=$(tp_dir "$_tp_v") || return 0
    _tp_var=$(tp_var "$_tp_v")
    if [ -z "$_tp_d" ]; then
        echo "$_tp_var is not set (a folder with Perfetto v$_tp_v's trace_processor_shell${*:+ $*};" \
            "scripts/lib.sh sets it" \
            "when ../shared/perfetto$([ "$_tp_v" = 47 ] || echo "/v$_tp_v")/bin exists)"
        return 0
    fi
    for _tp_p in trace_processor_shell "$@"; do
        [ -x "$_tp_d/$_tp_p" ] || { echo "$_tp_var: $_tp_d/$_tp_p is missing"; return 0; }
    done
    # A folder of the wrong version would pass every test under the wrong
    # name; one that does not run lacks its Debian packages.
    _tp_line=$("$_tp_d/trace_processor_shell" --version 2>&1 | head -n 1)
    case $_tp_line in
    "Perfetto v$_tp_v."*) ;;
    Perfetto*) echo "$_tp_var: $_tp_d holds '$_tp_line', not Perfetto v$_tp_v" ;;
    *) echo "$_tp_var: $_tp_d/trace_processor_shell does not run ($_tp_line; it needs" \
           "libprotobuf32, libsqlite3-0, zlib1g, libzstd1)" ;;
    esac
}

tp_query() {
    _tp_out=$(mktemp "${TMPDIR:-/tmp}/gputrace-tp.XXXXXX") || return 1
    _tp_rc=0
    "$(tp_dir "$1")/trace_processor_shell" -q "$2" "$3" > "$_tp_out" 2> "$_tp_out.err" || _tp_rc=$?
    if [ $_tp_rc -ne 0 ]; then
        echo "trace_processor v$1 exited with $_tp_rc on $3: $(grep -v '^\[' "$_tp_out.err" | tail -n 3)" >&2
    else
        tail -n +2 "$_tp_out" | tr -d '"'
    fi
    rm -f "$_tp_out" "$_tp_out.err"
    return $_tp_rc
}

tp_each() {
    _tp_all=0
    for _tp_each_v in $(tp_versions); do
        _tp_why=$(tp_missing "$_tp_each_v")
        if [ -n "$_tp_why" ]; then
            echo "== trace_processor v$_tp_each_v: not available ($_tp_why)"
            continue
        fi
        echo "== trace_processor v$_tp_each_v ($(tp_version_line "$_tp_each_v"))"
        tp_query "$_tp_each_v" "$1" "$2" || _tp_all=1
    done
    return $_tp_all
}
