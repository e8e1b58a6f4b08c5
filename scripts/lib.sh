# SPDX-License-Identifier: MIT
# Shared by scripts/run-*: Debian package installation and meson set-up.
# Sourced, not executed.

GPUTRACE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Everything the build and the whole test suite need on Debian 12.
GPUTRACE_PACKAGES=(
  build-essential g++ meson ninja-build pkg-config
  libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers glslang-tools
  libglib2.0-dev libdrm-dev libcmocka-dev zlib1g-dev libzstd-dev
  protobuf-compiler libprotobuf-dev
  # The house style's formatter (tests/style).
  clang-format
  # groff renders the tools' man pages in tests/tools; iconv (libc-bin) checks UTF-8.
  groff-base
  # Neighbour layers and tools the lavapipe tests stack ours with.
  mangohud vkbasalt gfxreconstruct vulkan-tools xvfb xauth
  # Real programs the realapps suite runs with and without the layer
  # (libgl1-mesa-dri has zink, the OpenGL driver on top of Vulkan).
  vkd3d-demos glmark2-x11 mesa-utils libgl1-mesa-dri ffmpeg mpv xdotool
  # libglvnd's dispatch libraries, which the GPU bundle carries for drivers
  # that load them by name (NVIDIA's Vulkan ICD: scripts/gpu-bundle).
  libglvnd0 libglx0 libegl1
  # What Perfetto's own programs (PERFETTO_BIN, PERFETTO_V58_BIN, below)
  # load at run time; zstd also for the toolkit (zstd_compressed_packets).
  libprotobuf32 libsqlite3-0 zlib1g libzstd1
)

# Perfetto's own traced, traced_probes, perfetto and trace_processor_shell,
# for the tests that compare against them (they SKIP without them; the
# tests find them through tests/perfetto/tp_lib.sh), one folder per version:
#   PERFETTO_BIN      v47 (October 2024): ../shared/perfetto/bin
#   PERFETTO_V58_BIN  v58 (August 2026, what tracebox and ui.perfetto.dev
#                     run today): ../shared/perfetto/v58/bin
# each taken from beside the repository unless already set.
if [[ -z ${PERFETTO_BIN:-} && -d $GPUTRACE_ROOT/../shared/perfetto/bin ]]; then
  PERFETTO_BIN=$(cd "$GPUTRACE_ROOT/../shared/perfetto/bin" && pwd)
  export PERFETTO_BIN
fi
if [[ -z ${PERFETTO_V58_BIN:-} && -d $GPUTRACE_ROOT/../shared/perfetto/v58/bin ]]; then
  PERFETTO_V58_BIN=$(cd "$GPUTRACE_ROOT/../shared/perfetto/v58/bin" && pwd)
  export PERFETTO_V58_BIN
fi

log() { printf '%s: %s\n' "$(basename "$0")" "$*" >&2; }
die() { log "$*"; exit 1; }

# Installs only what is missing; never touches apt when all is present.
ensure_packages() {
  local missing=() p status
  for p in "${GPUTRACE_PACKAGES[@]}" "$@"; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [[ $status == "install ok installed" ]] || missing+=("$p")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  if [[ $(id -u) -ne 0 ]]; then
    die "missing Debian packages: ${missing[*]}
  install them as root:  apt-get install ${missing[*]}"
  fi
  log "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# meson_dir DIR [meson setup options…]: configures DIR once, reconfigures
# when it exists (so option changes apply), then builds it.
meson_dir() {
  local dir=$1; shift
  if [[ -f $GPUTRACE_ROOT/$dir/build.ninja ]]; then
    meson setup --reconfigure "$GPUTRACE_ROOT/$dir" "$GPUTRACE_ROOT" "$@" >/dev/null
  else
    meson setup "$GPUTRACE_ROOT/$dir" "$GPUTRACE_ROOT" "$@" >/dev/null
  fi
  ninja -C "$GPUTRACE_ROOT/$dir"
}
