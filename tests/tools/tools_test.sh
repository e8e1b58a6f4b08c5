#!/bin/sh
# SPDX-License-Identifier: MIT
# tools_test.sh — what every installed tool owes its users and help2man-style
# tooling, checked on one tool:
#   --version and -V print "NAME VERSION" on stdout, nothing else, exit 0;
#   --help exits 0 with the help on stdout (stderr empty), an "Exit status:"
#   block listing exactly GT_EXIT_CODES, and under a UTF-8 locale valid UTF-8
#   with GT_UTF8 (a non-ASCII string of the help) as UTF-8 bytes, not "?";
#   an unknown option exits 2 with "NAME: " starting stderr;
#   its man page (toolkit/man) has .TH NAME 1 with the version, the sections
#   NAME SYNOPSIS DESCRIPTION OPTIONS "EXIT STATUS" "SEE ALSO", every long
#   option of the help, the exit statuses, and renders with groff -man
#   without a warning.
#
# Environment (set by meson.build):
#   GT_TOOL        the built tool          GT_NAME     its name
#   GT_VERSION     the project's version   GT_MAN      its built man page
#   GT_HELP_ALL    the help option listing every option (--help-all or --help)
#   GT_UTF8        a non-ASCII string its help prints, or empty when the
#                  help is plain ASCII
#   GT_EXIT_CODES  the exit statuses it documents, e.g. "0 1 2"
# Exit 0 pass, 1 fail.
set -u

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gputrace-tools-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() {
    echo "FAIL: $GT_NAME: $*" >&2
    failures=$((failures + 1))
}
ok() {
    echo "ok: $GT_NAME: $*"
}

# run ARGS...: the tool with its status in $rc, output in $tmp/out and $tmp/err.
run() {
    "$GT_TOOL" "$@" > "$tmp/out" 2> "$tmp/err"
    rc=$?
}

# ---- --version, -V ----
for opt in --version -V; do
    run "$opt"
    if [ "$rc" != 0 ]; then
        fail "$opt exited $rc"
    elif [ "$(cat "$tmp/out")" != "$GT_NAME $GT_VERSION" ]; then
        fail "$opt printed '$(head -c 200 "$tmp/out")', not '$GT_NAME $GT_VERSION'"
    elif [ -s "$tmp/err" ]; then
        fail "$opt wrote to stderr: $(head -c 200 "$tmp/err")"
    else
        ok "$opt: $(cat "$tmp/out")"
    fi
done

# ---- --help ----
LC_ALL=C.UTF-8 run --help
cp "$tmp/out" "$tmp/help"
if [ "$rc" != 0 ]; then
    fail "--help exited $rc"
elif [ ! -s "$tmp/help" ]; then
    fail "--help printed nothing on stdout"
elif [ -s "$tmp/err" ]; then
    fail "--help wrote to stderr: $(head -c 200 "$tmp/err")"
else
    ok "--help: $(wc -l < "$tmp/help") lines on stdout, exit 0"
fi
if ! iconv -f UTF-8 -t UTF-8 "$tmp/help" > /dev/null 2>&1; then
    fail "--help under LC_ALL=C.UTF-8 is not valid UTF-8"
fi
if [ -n "$GT_UTF8" ]; then
    if grep -qF -- "$GT_UTF8" "$tmp/help"; then
        ok "--help under LC_ALL=C.UTF-8 shows '$GT_UTF8' as UTF-8"
    else
        fail "--help under LC_ALL=C.UTF-8 lacks '$GT_UTF8' (non-ASCII printed as '?': setlocale missing?)"
    fi
else
    # Nothing to convert: the whole help must be ASCII, or GT_UTF8 should name it.
    if LC_ALL=C grep -q '[^ -~	]' "$tmp/help"; then
        fail "--help has non-ASCII text but the test names none (set GT_UTF8)"
    else
        ok "--help is plain ASCII"
    fi
fi

# The exit statuses its help documents (two-space indented "N  text" lines
# after "Exit status:").
codes=$(sed -n '/^Exit status:$/,/^$/p' "$tmp/help" | sed -n 's/^  \([0-9][0-9]*\)  .*/\1/p' |
    tr '\n' ' ' | sed 's/ $//')
if [ "$codes" = "$GT_EXIT_CODES" ]; then
    ok "--help documents exit statuses $codes"
else
    fail "--help documents exit statuses '$codes', expected '$GT_EXIT_CODES'"
fi

# ---- an unknown option ----
run --no-such-option
if [ "$rc" != 2 ]; then
    fail "--no-such-option exited $rc, not 2"
elif ! head -n 1 "$tmp/err" | grep -q "^$GT_NAME: "; then
    fail "--no-such-option: stderr does not start with '$GT_NAME: ': $(head -n 1 "$tmp/err")"
else
    ok "--no-such-option: exit 2, $(head -n 1 "$tmp/err")"
fi

# ---- the man page ----
if [ ! -s "$GT_MAN" ]; then
    fail "no man page at '$GT_MAN' (toolkit/man)"
else
    name_upper=$(echo "$GT_NAME" | tr a-z A-Z | sed 's/-/\\\\-/g')
    grep -q "^\.TH $name_upper 1 \"[^\"]*\" \"gputrace $GT_VERSION\"" "$GT_MAN" ||
        fail "$GT_MAN: no '.TH $name_upper 1 DATE \"gputrace $GT_VERSION\"'"
    for section in NAME SYNOPSIS DESCRIPTION OPTIONS "EXIT STATUS" "SEE ALSO"; do
        grep -qx "\.SH $section" "$GT_MAN" || fail "$GT_MAN: no .SH $section"
    done
    # Every long option of the full help, as roff writes it (\-\-name).
    LC_ALL=C.UTF-8 "$GT_TOOL" "$GT_HELP_ALL" 2> /dev/null |
        sed -n 's/^ *\(-[A-Za-z], \)\{0,1\}--\([a-z][a-z0-9-]*\).*/\2/p' | sort -u > "$tmp/options"
    [ -s "$tmp/options" ] || fail "$GT_HELP_ALL lists no long option"
    missing=
    while read -r option; do
        roff=$(echo "$option" | sed 's/-/\\\\-/g')
        grep -q "\\\\fB\\\\-\\\\-$roff\\\\fR" "$GT_MAN" || missing="$missing --$option"
    done < "$tmp/options"
    if [ -n "$missing" ]; then
        fail "$GT_MAN lacks the options:$missing"
    else
        ok "man page lists all $(wc -l < "$tmp/options") long options"
    fi
    page_codes=$(sed -n '/^\.SH EXIT STATUS$/,/^\.SH/s/^\.B \([0-9][0-9]*\)$/\1/p' "$GT_MAN" |
        tr '\n' ' ' | sed 's/ $//')
    [ "$page_codes" = "$GT_EXIT_CODES" ] ||
        fail "$GT_MAN: EXIT STATUS lists '$page_codes', expected '$GT_EXIT_CODES'"
    if command -v groff > /dev/null; then
        groff -man -Tutf8 -ww "$GT_MAN" > "$tmp/page" 2> "$tmp/err"
        if [ $? != 0 ] || [ -s "$tmp/err" ]; then
            fail "groff -man -ww: $(head -c 300 "$tmp/err")"
        elif ! sed 's/.\x08//g' "$tmp/page" | grep -q "^ *$GT_NAME  *- "; then
            fail "groff -man renders no NAME line '$GT_NAME - ...'"
        else
            ok "man page renders with groff -man -Tutf8 ($(wc -l < "$tmp/page") lines, no warning)"
        fi
    else
        fail "groff not found (Debian: groff-base, scripts/lib.sh)"
    fi
fi

[ "$failures" = 0 ] || exit 1
echo PASS
