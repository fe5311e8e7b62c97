#!/usr/bin/env bash
# Installs every Debian package arenastat needs to build, test, fuzz and plot.
# Idempotent and non-interactive: installs only what is missing. Needs root (or sudo).
set -euo pipefail

packages=(
  build-essential cmake g++ git pkg-config
  libboost1.81-dev libboost-container1.81-dev
  libjemalloc-dev
  catch2
  nlohmann-json3-dev
  libbenchmark-dev
  clang-14 libclang-rt-14-dev libfuzzer-14-dev
  gnuplot-nox jq
  prometheus prometheus-cpp-dev curl
  heaptrack
  chromium tmux
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
