#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the loader manifest of VK_LAYER_GPUTRACE_timeline (JSON, format 1.2.1).

The table SETTINGS below is the one description of every setting the layer
reads: the manifest's features.settings (what Vulkan Configurator shows) is
generated from it, and tests/install/check_manifest.py compares it with the
GPUTRACE_* variables the layer's sources read, their ranges and defaults.

    gen_manifest.py --kind implicit|explicit --library-path PATH --library-arch 64|32
                    [--vulkan-version X.Y.Z] OUTPUT.json

The two kinds differ only in enable_environment and disable_environment,
which the loader reads from implicit manifests alone (docs/layer.md,
"Enabling"): the explicit one leaves them out rather than carry fields
that would look as if they applied.
"""

import argparse
import json
import sys

# What the layer says about itself. Name, description and implementation
# version must match layer/layer_info.h (checked by the same test).
LAYER = {
    "name": "VK_LAYER_GPUTRACE_timeline",
    "type": "GLOBAL",
    "api_version": "1.3.0",
    "implementation_version": "1",
    "description": "gputrace: timestamps GPU work and writes Perfetto traces",
    "introduction": (
        "Records when the GPU starts and finishes each command buffer, render pass, "
        "dispatch, transfer and debug-utils label region, converts the device's "
        "timestamps to the host's clocks, and writes them as Perfetto trace packets: "
        "into a .pftrace file from inside the program, or to a Perfetto tracing "
        "service (traced or gputrace-service). Enabled by name (VK_INSTANCE_LAYERS, "
        "VK_LOADER_LAYERS_ENABLE or the application's enabled layer names), or in every "
        "Vulkan program started with GPUTRACE_ENABLE=1."
    ),
    # Placeholder until the project has a public home.
    "url": "https://github.com/gputrace/gputrace",
    "platforms": ["LINUX"],
    "status": "BETA",
    # What vkEnumerate*ExtensionProperties answer for the layer's name
    # (layer/layer_instance.c): it answers vkGetPhysicalDeviceToolPropertiesEXT
    # and reads VkLayerSettingsCreateInfoEXT, as validation lists them. The
    # latter is added by manifest() for loaders that know the extension.
    "device_extensions": [
        {
            "name": "VK_EXT_tooling_info",
            "spec_version": "1",
            "entrypoints": ["vkGetPhysicalDeviceToolPropertiesEXT"],
        }
    ],
}


def _enum(*values):
    return [{"key": k, "label": label, "description": d} for k, label, d in values]


# key: lower-case name of the variable without GPUTRACE_; env: the variable.
# Types are Vulkan Configurator's (BOOL, INT, ENUM, SAVE_FILE...); INT ranges
# and every default are the ones the layer applies.
SETTINGS = [
    {
        "key": "output",
        "env": "GPUTRACE_OUTPUT",
        "label": "Trace file",
        "description": "Trace with the embedded in-process backend into this .pftrace file. "
        "%p (process id), %t (Unix time), %h (host name), %e (program name) and %% "
        "are expanded. Empty: no file, unless the backend is inprocess.",
        "type": "SAVE_FILE",
        "filter": "*.pftrace",
        "default": "",
    },
    {
        "key": "backend",
        "env": "GPUTRACE_BACKEND",
        "label": "Backend",
        "description": "Where trace packets go.",
        "type": "ENUM",
        "flags": _enum(
            ("auto", "Automatic", "In-process when a trace file is set, else the system backend."),
            ("inprocess", "In-process", "Write a .pftrace file from inside the program "
             "(gputrace-<pid>.pftrace in the working directory when no file is set)."),
            ("system", "System", "Produce for a Perfetto tracing service (traced or "
             "gputrace-service), data source gpu.renderstages."),
            ("none", "None", "Never trace."),
        ),
        "default": "auto",
    },
    {
        "key": "buffer_kb",
        "env": "GPUTRACE_BUFFER_KB",
        "label": "In-process buffer size",
        "description": "Size of the embedded backend's ring buffer: what a run keeps before "
        "the oldest data is overwritten and counted as lost.",
        "type": "INT",
        "range": {"min": 64, "max": 1048576},
        "unit": "KiB",
        "default": 32768,
    },
    {
        "key": "signal_wait_ms",
        "env": "GPUTRACE_SIGNAL_WAIT_MS",
        "label": "Signal wait",
        "description": "In-process backend: on SIGINT or SIGTERM, how long to wait for the "
        "trace file to be finished before the signal takes its course. 0 leaves both "
        "signals alone.",
        "type": "INT",
        "range": {"min": 0, "max": 60000},
        "unit": "ms",
        "default": 2000,
    },
    {
        "key": "low_overhead",
        "env": "GPUTRACE_LOW_OVERHEAD",
        "label": "Low overhead",
        "description": "In-process backend: time and write only command buffers and render "
        "pass / dynamic rendering instances (two timestamps each), like a Perfetto session "
        "whose gpu_renderstages_config sets low_overhead.",
        "type": "BOOL",
        "default": False,
    },
    {
        "key": "startup_wait_ms",
        "env": "GPUTRACE_STARTUP_WAIT_MS",
        "label": "Service start-up wait",
        "description": "System backend: how long the first vkCreateDevice may wait for a "
        "tracing service that accepted the connection to start the data source or say "
        "that no session wants it. 0 never waits.",
        "type": "INT",
        "range": {"min": 0, "max": 60000},
        "unit": "ms",
        "default": 500,
    },
    {
        "key": "clock_budget_ns",
        "env": "GPUTRACE_CLOCK_BUDGET_NS",
        "label": "Clock error budget",
        "description": "Conversion error the device clock may accumulate between two clock "
        "snapshots; sets how often the clocks are calibrated.",
        "type": "INT",
        "range": {"min": 1, "max": 1000000000},
        "unit": "ns",
        "default": 1000,
    },
    {
        "key": "clock_source",
        "env": "GPUTRACE_CLOCK_SOURCE",
        "label": "Clock source",
        "description": "How the device clock is put on the host's time line.",
        "type": "ENUM",
        "flags": _enum(
            ("auto", "Automatic", "Calibrated timestamps when the device has them, else "
             "bracketing."),
            ("calibrated", "Calibrated", "VK_KHR/EXT_calibrated_timestamps."),
            ("bracket", "Bracket", "Host clock reads around a device timestamp (the "
             "fallback; forcing it is for testing)."),
        ),
        "default": "auto",
    },
    {
        "key": "query_readback",
        "env": "GPUTRACE_QUERY_READBACK",
        "label": "Timestamp read-back",
        "description": "How timestamps come back to the host.",
        "type": "ENUM",
        "flags": _enum(
            ("auto", "Automatic", "copy on drivers whose query reads idle the device "
             "(lavapipe), driver elsewhere."),
            ("copy", "Copy", "Each command buffer copies its queries into mapped memory."),
            ("driver", "Driver", "vkGetQueryPoolResults."),
            ("bulk", "Bulk", "Copy, except one-time-submit command buffers, which the "
             "collector reads with a few vkGetQueryPoolResults calls for all of them "
             "(cheaper on lavapipe for many small submissions)."),
        ),
        "default": "auto",
    },
    {
        "key": "host_query_reset",
        "env": "GPUTRACE_HOST_QUERY_RESET",
        "label": "Host query reset",
        "description": "Reset queries from the host where the device can; off resets them "
        "with recorded commands.",
        "type": "BOOL",
        "default": True,
    },
    {
        "key": "max_pending_submissions",
        "env": "GPUTRACE_MAX_PENDING_SUBMISSIONS",
        "label": "Pending submissions",
        "description": "Per-device bound on timed submissions waiting for the collector; "
        "beyond it submissions run untimed and the loss is flagged in the trace.",
        "type": "INT",
        "range": {"min": 1, "max": 1000000},
        "default": 8192,
    },
    {
        "key": "log",
        "env": "GPUTRACE_LOG",
        "label": "Log level",
        "description": "The layer's only output; silent by default.",
        "type": "ENUM",
        "flags": _enum(
            ("off", "Off", "Nothing."),
            ("error", "Error", "Failures that stop tracing."),
            ("warn", "Warning", "Also ignored settings and lost data."),
            ("info", "Info", "Also what the layer enabled and where it writes."),
            ("debug", "Debug", "Everything, for the layer's developers."),
        ),
        "default": "off",
    },
    {
        "key": "log_file",
        "env": "GPUTRACE_LOG_FILE",
        "label": "Log file",
        "description": "Append log lines to this file instead of standard error.",
        "type": "SAVE_FILE",
        "filter": "*.txt *.log",
        "default": "",
    },
    {
        "key": "disable",
        "env": "GPUTRACE_DISABLE",
        "label": "Pass through",
        "description": "Keep the layer in the call chain but pass every call through "
        "untouched. As an environment variable it also keeps the loader from loading "
        "the layer implicitly.",
        "type": "BOOL",
        "view": "ADVANCED",
        "default": False,
    },
]


# Implicit manifest only: what loads the layer into every program, and what
# keeps it out (the loader reads both from implicit manifests alone).
IMPLICIT_ONLY = {
    "enable_environment": {"GPUTRACE_ENABLE": "1"},
    "disable_environment": {"GPUTRACE_DISABLE": "1"},
}


# Loaders before 1.3.272 (Debian 12: 1.3.239) refuse vkCreateInstance with an
# instance extension they do not know, and vulkaninfo enables every one
# listed: so VK_EXT_layer_settings is listed only when building against a
# newer Vulkan (layer_instance.c reports it on the same condition). The
# layer reads the structure whether the extension is enabled or not.
LAYER_SETTINGS_SINCE = (1, 3, 272)


def manifest(kind, library_path, library_arch, vulkan_version="0"):
    layer = dict(LAYER)
    if kind == "implicit":
        layer.update(IMPLICIT_ONLY)
    version = tuple(int(p) for p in vulkan_version.split(".")[:3] if p.isdigit())
    if version >= LAYER_SETTINGS_SINCE:
        layer["instance_extensions"] = [{"name": "VK_EXT_layer_settings", "spec_version": "2"}]
    # Field order as in the loader's documentation: identity first.
    ordered = {
        "name": layer.pop("name"),
        "type": layer.pop("type"),
        "library_path": library_path,
        "library_arch": library_arch,
    }
    ordered.update(layer)
    ordered["features"] = {"settings": SETTINGS}
    # 1.2.1: the first format with library_arch; 1.2.0 brought introduction,
    # url, platforms, status and features.
    return {"file_format_version": "1.2.1", "layer": ordered}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", required=True, choices=["implicit", "explicit"])
    parser.add_argument("--library-path", required=True)
    parser.add_argument("--library-arch", required=True, choices=["32", "64"])
    parser.add_argument("--vulkan-version", default="0",
                        help="the Vulkan loader/headers version built against")
    parser.add_argument("output")
    args = parser.parse_args(argv)
    text = json.dumps(manifest(args.kind, args.library_path, args.library_arch, args.vulkan_version), indent=4,
                      ensure_ascii=False)
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
