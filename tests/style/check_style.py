#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The house style, checked (docs/ARCHITECTURE.md, "Coding style").

usage: check_style.py SOURCE_ROOT [format|includes|sizes]...

  format    every C file is as clang-format formats it with the root
            .clang-format (exit 77, SKIP, when clang-format is missing)
  includes  quoted includes name the file from the project root (or, for
            generated headers, from the build root); only a target's own
            generated headers may be named bare
  sizes     outside tests/, no C file over 800 lines and no function over 120
            lines, unless a comment says why: "(long: <reason>)" in the file's
            head comment, or in the comment just above the function
  spdx      every source file (C, proto, shaders, meson, shell, python) names
            its licence in an SPDX-License-Identifier line at its top

Prints one line per finding, "path:line: message", and exits 1 if any.
"""
import os
import re
import shutil
import subprocess
import sys

MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 120
C_EXTENSIONS = ('.c', '.h', '.cc')
# Generated next to the one target that includes them (tests and benchmarks
# of the code generator, the Vulkan command list of the dispatch probe, the
# VkFormat names of the layer, the descriptor of gpu_track_event.proto the
# layer writes into traces).
LOCAL_GENERATED = {
    'pbtest.pbc.h', 'pbtest3.pbc.h', 'pbtest_dep.pbc.h', 'pbtest.pb.h',
    'pb_bench.pbc.h', 'pb_bench.pb.h', 'vk_command_names.h', 'vk_format_names.h',
    'gpu_track_event_descriptor.h',
}
# Headers the build generates, named from the build root.
GENERATED_PREFIXES = ('protos/perfetto/', 'shaders/')
SKIP_DIRS = {'.git', 'subprojects'}


def source_files(root):
    for top, dirs, files in os.walk(root):
        rel_top = os.path.relpath(top, root)
        dirs[:] = sorted(d for d in dirs
                         if d not in SKIP_DIRS and not d.startswith('build')
                         and not (rel_top == '.' and d.startswith('.')))
        for name in sorted(files):
            if name.endswith(C_EXTENSIONS):
                yield os.path.normpath(os.path.join(rel_top, name))


def check_format(root, files):
    clang_format = shutil.which('clang-format')
    if not clang_format:
        print('SKIP: clang-format is not installed (Debian: clang-format); '
              'scripts/run-tests installs it')
        sys.exit(77)
    findings = []
    for path in files:
        out = subprocess.run([clang_format, '--dry-run', '-Werror', '--style=file',
                              os.path.join(root, path)],
                             cwd=root, capture_output=True, text=True)
        if out.returncode != 0:
            first = next((l for l in out.stderr.splitlines() if 'error:' in l),
                         out.stderr.strip()[:200])
            findings.append(f'{path}: not clang-formatted ({first.strip()}); '
                            f'run clang-format -i {path}')
    return findings


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def check_includes(root, files):
    findings = []
    for path in files:
        with open(os.path.join(root, path), encoding='utf-8', errors='replace') as f:
            for n, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                name = m.group(1)
                if name in LOCAL_GENERATED or name.startswith('@'):
                    continue
                if name.startswith(GENERATED_PREFIXES):
                    continue
                if os.path.isfile(os.path.join(root, name)) and not name.startswith('.'):
                    continue
                findings.append(f'{path}:{n}: include "{name}" is not named from the '
                                f'project root')
    return findings


LONG_REASON = re.compile(r'\(long: [^)]+\)')
FUNCTION_HEAD = re.compile(r'^[A-Za-z_][^;{}()]*\b([A-Za-z_]\w*)\s*\(')


def head_comment(lines):
    text = []
    for line in lines:
        if 'SPDX-License-Identifier' in line:
            continue
        if text or line.lstrip().startswith('/*') or line.lstrip().startswith('//'):
            text.append(line)
            if '*/' in line or line.lstrip().startswith('//'):
                if line.lstrip().startswith('//') and not text[0].lstrip().startswith('/*'):
                    continue
                break
        elif line.strip():
            break
    return ''.join(text)


def comment_above(lines, index):
    """The comment block that ends right above lines[index] (or above the
    declaration lines that precede the opening brace)."""
    i = index - 1
    while i >= 0 and lines[i].strip() and not lines[i].rstrip().endswith('*/') \
            and not lines[i].lstrip().startswith('//'):
        i -= 1
    text = []
    while i >= 0 and (lines[i].strip().startswith(('/*', '*', '//')) or
                      lines[i].rstrip().endswith('*/')):
        text.insert(0, lines[i])
        if lines[i].lstrip().startswith('/*'):
            break
        i -= 1
    return ''.join(text)


def check_sizes(root, files):
    findings = []
    for path in files:
        if path.split(os.sep)[0] == 'tests':
            continue
        with open(os.path.join(root, path), encoding='utf-8', errors='replace') as f:
            lines = f.readlines()
        if len(lines) > MAX_FILE_LINES and not LONG_REASON.search(head_comment(lines)):
            findings.append(f'{path}:1: {len(lines)} lines (over {MAX_FILE_LINES}); split it '
                            f'by concern, or say why in its head comment "(long: ...)"')
        # After clang-format (Linux braces) a function body opens with "{"
        # alone in column 0 and closes with "}" in column 0.
        for i, line in enumerate(lines):
            if line.rstrip('\n') != '{' or i == 0:
                continue
            start = i - 1
            while start > 0 and not FUNCTION_HEAD.match(lines[start]) and \
                    lines[start].startswith((' ', '\t')):
                start -= 1
            m = FUNCTION_HEAD.match(lines[start])
            if not m:
                continue
            end = i + 1
            while end < len(lines) and not lines[end].startswith('}'):
                end += 1
            length = end - i + 1
            if length > MAX_FUNCTION_LINES and \
                    not LONG_REASON.search(comment_above(lines, start)):
                findings.append(f'{path}:{start + 1}: {m.group(1)}() has {length} lines '
                                f'(over {MAX_FUNCTION_LINES}); split it, or say why in the '
                                f'comment above it "(long: ...)"')
    return findings


SPDX_EXTENSIONS = C_EXTENSIONS + ('.proto', '.comp', '.vert', '.frag', '.sh', '.py')
SPDX_NAMES = {'meson.build', 'meson_options.txt'}
SPDX_LINE = re.compile(r'SPDX-License-Identifier: MIT\b')


def spdx_files(root):
    for top, dirs, files in os.walk(root):
        rel_top = os.path.relpath(top, root)
        dirs[:] = sorted(d for d in dirs
                         if d not in SKIP_DIRS and not d.startswith('build')
                         and not (rel_top == '.' and d.startswith('.') and d != '.ci'))
        for name in sorted(files):
            path = os.path.normpath(os.path.join(rel_top, name))
            if name.endswith(SPDX_EXTENSIONS) or name in SPDX_NAMES or \
                    rel_top in ('scripts', '.ci'):
                yield path


def check_spdx(root):
    findings = []
    for path in spdx_files(root):
        with open(os.path.join(root, path), encoding='utf-8', errors='replace') as f:
            head = [f.readline() for _ in range(3)]
        if not any(SPDX_LINE.search(line) for line in head):
            findings.append(f'{path}:1: no "SPDX-License-Identifier: MIT" line in its first '
                            f'lines (LICENSE)')
    return findings


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = argv[1]
    checks = argv[2:] or ['includes', 'sizes', 'spdx', 'format']
    files = list(source_files(root))
    if not files:
        print(f'check_style: no C files under {root}', file=sys.stderr)
        return 2
    findings = []
    for check in checks:
        if check == 'format':
            findings += check_format(root, files)
        elif check == 'includes':
            findings += check_includes(root, files)
        elif check == 'sizes':
            findings += check_sizes(root, files)
        elif check == 'spdx':
            findings += check_spdx(root)
        else:
            print(f'check_style: unknown check "{check}"', file=sys.stderr)
            return 2
    for finding in findings:
        print(finding)
    print(f'check_style: {len(files)} files, {", ".join(checks)}: '
          f'{len(findings)} finding(s)')
    return 1 if findings else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
