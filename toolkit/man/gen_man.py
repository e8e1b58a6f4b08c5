#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes a tool's section-1 man page from what the built tool prints for --help.

    gen_man.py --prog NAME --summary TEXT --version V --output FILE
               [--help-option OPT] [--see-also PAGE(1)]... [--see-also-text TEXT]
               EXECUTABLE

The help text is the one source of the page, so the two cannot drift. It is read
in the shape every gputrace tool prints (GOption's and gputrace-service's):

    Usage:/usage: lines    -> SYNOPSIS (a line starting with the program name
                              starts another form; other indented lines go on)
    prose                  -> DESCRIPTION (paragraphs; indented lines kept as is)
    "Heading:" then indented "-x, --opt ARG  text" lines -> OPTIONS, a
                              subsection per heading
    "Exit status:" then "  N  text" lines -> EXIT STATUS

A help without a synopsis, options or exit statuses is an error (exit 1): the
build fails rather than install a page without them. The page is plain ASCII:
other characters become groff's \\[uXXXX] escapes.
"""

import argparse
import datetime
import os
import re
import subprocess
import sys

# "-v, --verbose", "--junit=FILE", "--socket PATH", "--max-error-ns=NS"; the
# description follows after blanks (one suffices after a metavariable).
OPTION = re.compile(r"^\s+((?:-\w, )?--?[\w-]+)(?:(=)(\S+)| ([A-Z][\w.]*))?(?:\s+(.*))?$")
EXIT_CODE = re.compile(r"^\s+(\d+)\s+(.*)$")
HEADING = re.compile(r"^(\S.*):$")


class HelpError(Exception):
    pass


def esc(text):
    """Text as roff shows it literally: backslashes, minus signs, non-ASCII."""
    out = []
    for ch in text.replace("\\", "\\e").replace("-", "\\-"):
        code = ord(ch)
        if code < 128:
            out.append(ch)
        else:
            out.append("\\[u%04X]" % code)
    line = "".join(out)
    return "\\&" + line if line[:1] in (".", "'") else line


def italic_words(text):
    """Metavariables (FILE, NS, [ID=]NAME) in italics, the rest as written."""
    return re.sub(r"\b([A-Z][A-Z0-9_]*)\b", r"\\fI\1\\fR", esc(text))


def parse(help_text, prog):
    synopsis, description, groups, exits = [], [], [], []
    lines = help_text.splitlines()
    i = 0
    while i < len(lines) and not re.match(r"(?i)^usage:", lines[i]):
        description.append(lines[i])
        i += 1
    if i == len(lines):
        raise HelpError("no 'Usage:' line")
    first = lines[i].split(":", 1)[1].strip()
    if first:
        synopsis.append(first)
    i += 1
    while i < len(lines) and lines[i].strip():
        line = lines[i].strip()
        if line.startswith(prog + " ") or line == prog or not synopsis:
            synopsis.append(line)
        else:
            synopsis[-1] += " " + line
        i += 1

    mode = None
    rest = lines[i:] + [""]
    for n, line in enumerate(rest[:-1]):
        if not line.strip():
            mode = None
            description.append("")
            continue
        heading = HEADING.match(line)
        # A heading introduces indented lines; prose may end with a colon too.
        if mode is None and heading and rest[n + 1][:1].isspace():
            if heading.group(1).lower() == "exit status":
                mode = "exit"
            else:
                mode = "options"
                groups.append((heading.group(1), []))
            continue
        if mode == "options" and line[:1].isspace():
            option = OPTION.match(line)
            # Options sit at the group's indent, their wrapped text deeper.
            if option and line.lstrip().startswith("-") and len(line) - len(line.lstrip()) <= 4:
                names, eq, arg1, arg2, text = option.groups()
                groups[-1][1].append([names, (eq or " ") + (arg1 or arg2) if (arg1 or arg2)
                                      else "", text or ""])
            elif groups[-1][1]:
                groups[-1][1][-1][2] += " " + line.strip()
            else:
                raise HelpError("text before the first option of '%s'" % groups[-1][0])
            continue
        if mode == "exit" and line[:1].isspace():
            code = EXIT_CODE.match(line)
            if code and len(line) - len(line.lstrip()) <= 2:
                exits.append([code.group(1), code.group(2)])
            elif exits:
                exits[-1][1] += " " + line.strip()
            else:
                raise HelpError("'Exit status:' without a status")
            continue
        mode = None
        description.append(line)
    if not synopsis:
        raise HelpError("empty synopsis")
    if not any(options for _, options in groups):
        raise HelpError("no options")
    if not exits:
        raise HelpError("no 'Exit status:' block")
    return synopsis, description, groups, exits


def paragraphs(lines):
    """Blank-line separated blocks; a block with indented lines is kept as laid out."""
    block = []
    for line in lines + [""]:
        if line.strip():
            block.append(line)
        elif block:
            yield block
            block = []


def render(a, synopsis, description, groups, exits):
    date = datetime.datetime.fromtimestamp(
        int(os.environ.get("SOURCE_DATE_EPOCH", "0")) or datetime.datetime.now().timestamp(),
        tz=datetime.timezone.utc).strftime("%Y-%m-%d")
    out = [
        '.\\" Generated by toolkit/man/gen_man.py from "%s %s"; edit the help text, not this.'
        % (a.prog, a.help_option),
        '.TH %s 1 "%s" "gputrace %s" "User Commands"' % (esc(a.prog.upper()), date, a.version),
        ".nh",  # option names stay whole: no hyphenation
        ".SH NAME",
        "%s \\- %s" % (esc(a.prog), esc(a.summary)),
        ".SH SYNOPSIS",
    ]
    for n, form in enumerate(synopsis):
        # GOption appends the context's one-line summary after a dash; NAME has it.
        form = re.split(r" \u2014 | -- (?=[a-z])", form)[0]
        words = form.split(" ", 1)
        if n:
            out.append(".br")
        out.append(".B %s" % esc(words[0]))
        if len(words) > 1:
            out.append(italic_words(words[1]))
    out.append(".SH DESCRIPTION")
    for block in paragraphs(description):
        if any(line[:1].isspace() for line in block):
            out += [".PP", ".nf"] + [esc(line) for line in block] + [".fi"]
        else:
            out += [".PP"] + [esc(line) for line in block]
    out.append(".SH OPTIONS")
    for title, options in groups:
        if options and (len(groups) > 1 or title.lower() != "options"):
            out.append('.SS "%s"' % esc(title).replace('"', "'"))
        for names, arg, text in options:
            shown = ", ".join("\\fB%s\\fR" % esc(name) for name in names.split(", "))
            if arg:
                shown += "%s\\fI%s\\fR" % (esc(arg[0]).replace(" ", "\\ "), esc(arg[1:]))
            out += [".TP", shown, esc(text)]
    out.append(".SH EXIT STATUS")
    for code, text in exits:
        out += [".TP", ".B %s" % code, esc(text)]
    out.append(".SH SEE ALSO")
    pages = []
    for page in a.see_also:
        name, section = re.fullmatch(r"(.+)\((\w+)\)", page).groups()
        pages.append(".BR %s (%s)" % (esc(name), section))
    out += [page + ("," if n + 1 < len(pages) else "") for n, page in enumerate(pages)]
    if a.see_also_text:
        out += [".PP", esc(a.see_also_text)]
    return "\n".join(out) + "\n"


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--prog", required=True)
    p.add_argument("--summary", required=True, help="one line for NAME")
    p.add_argument("--version", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--help-option", default="--help")
    p.add_argument("--see-also", action="append", default=[], metavar="PAGE(N)")
    p.add_argument("--see-also-text", default="")
    p.add_argument("executable")
    a = p.parse_args(argv)
    # The help as a UTF-8 terminal shows it; the page escapes what is not ASCII.
    env = dict(os.environ, LC_ALL="C.UTF-8")
    run = subprocess.run([a.executable, a.help_option], env=env, capture_output=True)
    if run.returncode != 0:
        sys.stderr.buffer.write(run.stderr)
        print("gen_man.py: %s %s exited with %d" % (a.prog, a.help_option, run.returncode),
              file=sys.stderr)
        return 1
    try:
        parts = parse(run.stdout.decode("utf-8"), a.prog)
    except (HelpError, UnicodeDecodeError) as e:
        print("gen_man.py: %s %s: %s" % (a.prog, a.help_option, e), file=sys.stderr)
        return 1
    with open(a.output, "w", encoding="ascii") as f:
        f.write(render(a, *parts))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
