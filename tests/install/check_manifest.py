#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks the layer manifest against the layer's sources, so neither drifts.

    check_manifest.py SOURCE_ROOT INSTALLED.json BUILD_TREE.json...

- features.settings names exactly the GPUTRACE_* variables the layer's C
  sources read (every "GPUTRACE_X" string literal under layer/, benchmarks
  excepted), keys are the variables' names in lower case without the prefix;
- each setting is well formed for Vulkan Configurator (type, default of the
  type, ENUM default among its values, INT default within its range);
- where the source reads a variable with env_u64/env_bool/env_choice, the
  manifest's range, default and values are the ones passed there; other ENUM
  values must appear as string literals in the file reading the variable;
- name, description and implementation_version match layer/*.h's GT_LAYER_*;
- library_arch matches the ELF class of the build-tree library; the build-tree
  copies equal the installed one apart from library_path.
Prints every difference and exits 1 if there is one.
"""

import json
import pathlib
import re
import sys

PREFIX = "GPUTRACE_"
TYPES = {"STRING", "SAVE_FILE", "LOAD_FILE", "SAVE_FOLDER", "LOAD_FOLDER", "BOOL", "INT",
         "FLOAT", "ENUM", "FLAGS", "LIST", "FRAMES"}
errors = []


def fail(msg):
    errors.append(msg)


def layer_sources(root):
    return [p for p in sorted((root / "layer").rglob("*.c")) if "bench" not in p.parts]


def c_int(expr):
    """Value of a small C integer constant expression (1000000000ull, 1u << 20)."""
    text = re.sub(r"(?<=\d)(?:[uU]?[lL]{0,2}|[lL]{1,2}[uU])\b", "", expr.strip())
    if not re.fullmatch(r"[\d\s()<>*+-]+", text):
        return None
    return eval(text, {"__builtins__": {}})  # digits and operators only


def read_by_layer(root):
    """{variable: (file, file text)} for every GPUTRACE_ literal the layer reads."""
    found = {}
    for path in layer_sources(root):
        text = path.read_text(encoding="utf-8")
        for name in re.findall(r'"(' + PREFIX + r'[A-Z0-9_]+)"', text):
            found.setdefault(name, (path, text))
    return found


def check_setting(s):
    key, kind = s.get("key", "?"), s.get("type")
    for field in ("key", "env", "label", "description", "type", "default"):
        if field not in s:
            fail(f"setting {key}: no '{field}'")
    if kind not in TYPES:
        fail(f"setting {key}: type {kind!r} is not one Vulkan Configurator knows")
    env = s.get("env", "")
    if key != env[len(PREFIX):].lower():
        fail(f"setting {key}: key should be {env[len(PREFIX):].lower()!r} for {env}")
    d = s.get("default")
    if kind == "BOOL" and not isinstance(d, bool):
        fail(f"setting {key}: BOOL default {d!r} is not true/false")
    if kind == "INT":
        r = s.get("range", {})
        if not isinstance(d, int) or isinstance(d, bool):
            fail(f"setting {key}: INT default {d!r} is not an integer")
        elif not r.get("min", d) <= d <= r.get("max", d):
            fail(f"setting {key}: default {d} outside {r}")
    if kind == "ENUM":
        values = [f["key"] for f in s.get("flags", [])]
        if not values:
            fail(f"setting {key}: ENUM without values")
        if d not in values:
            fail(f"setting {key}: default {d!r} not among {values}")
        for f in s.get("flags", []):
            if not f.get("label") or not f.get("description"):
                fail(f"setting {key}: value {f.get('key')} needs a label and a description")


def check_against_source(s, path, text):
    """Compares ranges, defaults and values with the call that reads the variable."""
    env, key = s["env"], s["key"]
    call = re.search(r'\benv_(u64|bool|choice)\(\s*"' + env + r'"\s*,([^;]*)\)\s*;', text)
    if not call:
        if s["type"] == "ENUM":
            for f in s["flags"]:
                if f'"{f["key"]}"' not in text:
                    fail(f"setting {key}: value {f['key']!r} is not accepted in {path.name}")
        return
    kind, args = call.group(1), [a.strip() for a in call.group(2).split(",")]
    if kind == "u64" and len(args) == 3:
        lo, hi, default = (c_int(a) for a in args)
        r = s.get("range", {})
        if (r.get("min"), r.get("max"), s["default"]) != (lo, hi, default):
            fail(f"setting {key}: manifest range {r} default {s['default']}, "
                 f"{path.name} reads {lo}..{hi} default {default}")
    elif kind == "bool" and len(args) == 1:
        default = {"true": True, "false": False}.get(args[0])
        if s["type"] != "BOOL" or s["default"] != default:
            fail(f"setting {key}: manifest default {s['default']!r}, {path.name} {args[0]}")
    elif kind == "choice" and args:
        table = re.search(r"\b" + re.escape(args[0]) + r"\[\]\s*=\s*\{([^}]*)\}", text)
        names = re.findall(r'"([^"]*)"', table.group(1)) if table else None
        values = [f["key"] for f in s.get("flags", [])]
        if s["type"] != "ENUM" or names is None or sorted(names) != sorted(values):
            fail(f"setting {key}: manifest values {values}, {path.name} accepts {names}")


def elf_arch(path):
    with open(path, "rb") as f:
        head = f.read(5)
    return {1: "32", 2: "64"}.get(head[4]) if head[:4] == b"\x7fELF" else None


def main(argv):
    root, installed_path, build_paths = pathlib.Path(argv[0]), argv[1], argv[2:]
    installed = json.loads(pathlib.Path(installed_path).read_text(encoding="utf-8"))
    layer = installed["layer"]
    settings = layer.get("features", {}).get("settings", [])

    for s in settings:
        check_setting(s)
    in_manifest = {s.get("env"): s for s in settings}
    if len(in_manifest) != len(settings):
        fail("features.settings names a variable twice")
    read = read_by_layer(root)
    for env in sorted(set(read) - set(in_manifest)):
        fail(f"{env} is read by {read[env][0].relative_to(root)} but not in features.settings "
             "(add it to the table in manifests/gen_manifest.py)")
    for env in sorted(set(in_manifest) - set(read)):
        fail(f"{env} is in features.settings but no layer source reads it")
    for env in sorted(set(in_manifest) & set(read)):
        check_against_source(in_manifest[env], *read[env])
    for var in list(layer.get("disable_environment", {})):
        if var not in read:
            fail(f"disable_environment {var} is not read by the layer")

    headers = "".join(p.read_text(encoding="utf-8") for p in (root / "layer").glob("*.h"))
    info = dict(re.findall(r"#define\s+GT_LAYER_(\w+)\s+(.+)", headers))
    for field, macro in (("name", "NAME"), ("description", "DESCRIPTION"),
                         ("implementation_version", "IMPLEMENTATION_VERSION")):
        value = info.get(macro, "").strip().strip('"')
        if layer.get(field) != value:
            fail(f"{field}: manifest {layer.get(field)!r}, GT_LAYER_{macro} {value!r}")

    for path in build_paths:
        copy = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
        lib = copy["layer"].get("library_path", "")
        arch = elf_arch(lib) if pathlib.Path(lib).is_file() else None
        if arch != copy["layer"].get("library_arch"):
            fail(f"{path}: library_arch {copy['layer'].get('library_arch')!r}, {lib} is {arch}")
        if pathlib.PurePath(lib).name != layer.get("library_path"):
            fail(f"{path}: library {lib}, installed manifest names {layer.get('library_path')}")
        copy["layer"]["library_path"] = layer.get("library_path")
        if copy != installed:
            fail(f"{path} differs from {installed_path} beyond library_path")

    for e in errors:
        print("FAIL:", e)
    if not errors:
        print(f"ok: {len(settings)} settings = the {len(read)} GPUTRACE_* variables "
              "the layer reads; manifests agree with the sources")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
