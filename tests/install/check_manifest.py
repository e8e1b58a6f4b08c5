#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks the layer's manifests against its sources, so neither drifts.

    check_manifest.py SOURCE_ROOT IMPLICIT.json EXPLICIT.json
                      [BUILD_IMPLICIT.json BUILD_EXPLICIT.json]

IMPLICIT and EXPLICIT are the two installed manifests (from the build tree's
manifests/installed/, or from an install tree); the optional pair are the
build-tree copies.

- features.settings names exactly the GPUTRACE_* variables the layer's C
  sources read (every "GPUTRACE_X" string literal under layer/, benchmarks
  excepted), keys are the variables' names in lower case without the prefix;
- each setting is well formed for Vulkan Configurator (type, default of the
  type, ENUM default among its values, INT default within its range);
- where the source reads a variable with env_u64/env_bool/env_choice, the
  manifest's range, default and values are the ones passed there; other ENUM
  values must appear as string literals in the file reading the variable;
- name, description and implementation_version match layer/*.h's GT_LAYER_*;
- the implicit manifest has enable_environment GPUTRACE_ENABLE=1 and a
  disable_environment (the loader skips an implicit manifest without one);
  the explicit one is the implicit one without those two fields (the loader
  reads them from implicit manifests only), so both carry the same
  features.settings for Vulkan Configurator;
- library_arch matches the ELF class of the build-tree library; each
  build-tree copy equals the installed manifest of its kind apart from
  library_path.
Prints every difference and exits 1 if there is one.
"""

import json
import pathlib
import re
import sys

PREFIX = "GPUTRACE_"
# What only the implicit manifest carries (the loader reads them from no other).
IMPLICIT_ONLY = ("enable_environment", "disable_environment")
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


def check_kinds(implicit, explicit, implicit_path, explicit_path):
    """The explicit manifest is the implicit one less its implicit-only fields."""
    layer = implicit["layer"]
    if layer.get("enable_environment") != {"GPUTRACE_ENABLE": "1"}:
        fail(f"{implicit_path}: enable_environment {layer.get('enable_environment')!r}, "
             "expected {'GPUTRACE_ENABLE': '1'}")
    if not layer.get("disable_environment"):
        fail(f"{implicit_path}: no disable_environment (the loader skips such an implicit layer)")
    for field in IMPLICIT_ONLY:
        if field in explicit["layer"]:
            fail(f"{explicit_path}: has {field}, which the loader reads from implicit manifests only")
    stripped = json.loads(json.dumps(implicit))
    for field in IMPLICIT_ONLY:
        stripped["layer"].pop(field, None)
    if stripped != explicit:
        fail(f"{explicit_path} differs from {implicit_path} beyond {', '.join(IMPLICIT_ONLY)}")


def check_build_copy(path, installed, installed_path):
    copy = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    lib = copy["layer"].get("library_path", "")
    arch = elf_arch(lib) if pathlib.Path(lib).is_file() else None
    if arch != copy["layer"].get("library_arch"):
        fail(f"{path}: library_arch {copy['layer'].get('library_arch')!r}, {lib} is {arch}")
    name = installed["layer"].get("library_path")
    if pathlib.PurePath(lib).name != name:
        fail(f"{path}: library {lib}, installed manifest names {name}")
    copy["layer"]["library_path"] = name
    if copy != installed:
        fail(f"{path} differs from {installed_path} beyond library_path")


def main(argv):
    if len(argv) not in (3, 5):
        print(__doc__)
        return 2
    root, implicit_path, explicit_path = pathlib.Path(argv[0]), argv[1], argv[2]
    installed = json.loads(pathlib.Path(implicit_path).read_text(encoding="utf-8"))
    explicit = json.loads(pathlib.Path(explicit_path).read_text(encoding="utf-8"))
    layer = installed["layer"]
    settings = layer.get("features", {}).get("settings", [])
    if not settings:
        fail(f"{implicit_path}: no features.settings (Vulkan Configurator would show none)")

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

    check_kinds(installed, explicit, implicit_path, explicit_path)
    if len(argv) == 5:
        check_build_copy(argv[3], installed, implicit_path)
        check_build_copy(argv[4], explicit, explicit_path)

    for e in errors:
        print("FAIL:", e)
    if not errors:
        print(f"ok: {len(settings)} settings = the {len(read)} GPUTRACE_* variables "
              "the layer reads; implicit and explicit manifests agree with the sources "
              "and with each other")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
