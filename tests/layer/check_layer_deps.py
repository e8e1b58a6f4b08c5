#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_layer_deps.py — the layer's files depend on each other in one
direction only (docs/layer.md, "Dependency direction").

    check_layer_deps.py LAYER_SRC_DIR [OBJECT_DIR [NM]]

A module is foo.c together with foo.h (either may be missing), named by its
path below layer/ without the extension: "collector", or "frames/fr_frames"
for a file in a sub-folder (each sub-folder with its own meson.build, its
sources compiled into the layer; benchmarks excepted). Three checks:

1. Include graph: the quoted includes of "layer/..." in the layer's .c and
   .h files, folded onto modules, have no cycle.
2. Call graph: every undefined symbol of one object file in OBJECT_DIR
   (the layer library's objects, `nm`) is resolved to the object that
   defines it; folded onto modules, that graph has no cycle either.
3. Direction: no module outside PLUMBING includes a plumbing header or
   references a symbol a plumbing module defines. The plumbing calls the
   feature (timeline.h), never the other way round.

Prints every violation (a cycle as a -> b -> a) and exits 1 if there is
any, 0 otherwise. Without OBJECT_DIR only the include checks run.
"""
import glob
import os
import re
import subprocess
import sys

# The loader plumbing: negotiation, vkGet*ProcAddr, create/destroy chaining,
# the hooks, and the amended vkCreateDevice. Everything else (the timing
# feature, and the helpers both sides use: objects, allocation, maps,
# logging, configuration) must not depend on these.
PLUMBING = {
    "layer_interface",  # negotiation, vkGet*ProcAddr
    "layer_instance",  # instance chaining, enumeration, introspection
    "layer_device",  # device chaining
    "layer_hooks",  # device-level hooks calling timeline.h
    "layer_hooks_objects",  # the same for memory objects, semaphores, waits
    "layer_lookup",  # handle -> gt_instance / gt_device
    "layer_info",  # the layer's name and versions
    "device_setup",  # the amended vkCreateDevice
    "layer_frame_boundary",  # VK_EXT_frame_boundary where nothing below has it
}

INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"layer/([^"]+)"', re.MULTILINE)


def module_of(rel):
    """The module of a path below layer/ ("frames/fr_emit.c" -> "frames/fr_emit")."""
    return os.path.splitext(rel)[0]


def layer_files(src_dir, exts):
    """Paths below src_dir (relative, "/"-separated) of the layer's sources."""
    found = []
    for root, dirs, files in os.walk(src_dir):
        dirs[:] = sorted(d for d in dirs if d != "bench")
        for name in files:
            if name.endswith(exts):
                found.append(os.path.relpath(os.path.join(root, name), src_dir).replace(os.sep, "/"))
    return sorted(found)


def find_cycles(graph):
    """Per strongly connected component of more than one node (or a node
    with an edge to itself): one shortest cycle through its first node, and
    all of its nodes."""
    index = {}
    low = {}
    stack = []
    on_stack = set()
    components = []
    counter = [0]

    def visit(root):
        # Iterative Tarjan: the graphs are small, but recursion limits are
        # not worth thinking about.
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                components.append(comp)

    for node in sorted(graph):
        if node not in index:
            visit(node)

    cycles = []
    for comp in components:
        members = set(comp)
        if len(comp) == 1 and comp[0] not in graph.get(comp[0], ()):
            continue
        cycles.append((cycle_in(graph, min(comp), members), sorted(comp)))
    return cycles


def cycle_in(graph, start, members):
    """A shortest path from start back to start inside one component."""
    prev = {start: None}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for child in sorted(graph.get(node, ())):
            if child not in members:
                continue
            if child == start:
                path = [node]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if child not in prev:
                prev[child] = node
                queue.append(child)
    return [start, start]


def include_graph(src_dir):
    graph = {}
    edges = {}
    files = layer_files(src_dir, (".c", ".h"))
    if not files:
        sys.exit(f"check_layer_deps: no layer sources in {src_dir}")
    for rel in files:
        mod = module_of(rel)
        graph.setdefault(mod, set())
        with open(os.path.join(src_dir, rel), encoding="utf-8") as f:
            text = f.read()
        for inc in INCLUDE_RE.findall(text):
            target = module_of(inc)
            if target != mod:
                graph[mod].add(target)
                edges.setdefault((mod, target), rel + " includes layer/" + inc)
    return graph, edges


def call_graph(src_dir, obj_dir, nm):
    # Meson names the object of sub/foo.c "sub_foo.c.o". Only objects of
    # sources that exist: a build directory keeps the objects of files that
    # were removed or renamed since.
    by_object = {rel.replace("/", "_") + ".o": module_of(rel)
                 for rel in layer_files(src_dir, (".c",))}
    objects = sorted(o for o in glob.glob(os.path.join(obj_dir, "*.c.o"))
                     if os.path.basename(o) in by_object)
    if not objects:
        sys.exit(f"check_layer_deps: no object files in {obj_dir}")
    defined = {}
    undefined = {}
    for obj in objects:
        mod = by_object[os.path.basename(obj)]
        out = subprocess.run([nm, "-P", obj], check=True, capture_output=True, text=True).stdout
        for line in out.splitlines():
            fields = line.split()
            if len(fields) < 2:
                continue
            name, kind = fields[0], fields[1]
            if kind == "U":
                undefined.setdefault(mod, set()).add(name)
            elif kind.isupper() and kind not in ("N",):
                defined.setdefault(name, mod)
    graph = {by_object[os.path.basename(o)]: set() for o in objects}
    edges = {}
    for mod, names in undefined.items():
        for name in sorted(names):
            target = defined.get(name)
            if target is None or target == mod:
                continue
            graph[mod].add(target)
            edges.setdefault((mod, target), f"{mod} calls {name} ({target})")
    return graph, edges


def report_cycles(what, graph, edges):
    bad = 0
    for cycle, knot in find_cycles(graph):
        bad += 1
        print(f"{what} cycle: " + " -> ".join(cycle))
        if len(knot) > len(cycle) - 1:
            print(f"    (one of the cycles among: {', '.join(knot)})")
        for a, b in zip(cycle, cycle[1:]):
            print(f"    {edges.get((a, b), a + ' -> ' + b)}")
    return bad


def report_direction(what, graph, edges):
    bad = 0
    for mod in sorted(graph):
        if mod in PLUMBING:
            continue
        for target in sorted(graph[mod] & PLUMBING):
            bad += 1
            print(f"{what} against the direction (feature/helper -> plumbing): "
                  f"{edges.get((mod, target), mod + ' -> ' + target)}")
    return bad


def main(argv):
    if len(argv) < 2 or len(argv) > 4:
        sys.exit(__doc__)
    src_dir = argv[1]
    bad = 0
    graph, edges = include_graph(src_dir)
    bad += report_cycles("include", graph, edges)
    bad += report_direction("include", graph, edges)
    modules = len(graph)
    if len(argv) >= 3:
        nm = argv[3] if len(argv) == 4 else "nm"
        cgraph, cedges = call_graph(src_dir, argv[2], nm)
        bad += report_cycles("call", cgraph, cedges)
        bad += report_direction("call", cgraph, cedges)
        print(f"call graph: {len(cgraph)} objects, "
              f"{sum(len(v) for v in cgraph.values())} module edges")
    print(f"include graph: {modules} modules, {sum(len(v) for v in graph.values())} module edges")
    if bad:
        print(f"FAIL: {bad} violation(s)")
        return 1
    print("OK: no cycle, plumbing -> feature only")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
