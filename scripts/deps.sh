#!/usr/bin/env bash
# Installs the Debian packages Trove needs to build, test and benchmark.
# Usage: scripts/deps.sh [build|test|bench]   (each level includes the previous)
set -euo pipefail
level="${1:-build}"
pkgs=(cmake ninja-build g++ googletest libgtest-dev libbenchmark-dev liblua5.4-dev lua-cjson-dev libxxhash-dev libssl-dev)
if [[ "$level" == test || "$level" == bench ]]; then
  pkgs+=(python3-pytest python3-pymemcache python3-redis memcached redis-server redis-tools
         libmemcached-tools clang libclang-rt-14-dev libio-socket-ssl-perl)
fi
if [[ "$level" == bench ]]; then
  pkgs+=(gnuplot-nox nutcracker)
fi
missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} == 0)); then exit 0; fi
cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [[ $(id -u) -ne 0 ]]; then
  echo "missing packages; run as root:"
  echo "  $cmd"
  exit 1
fi
echo "+ $cmd"
export DEBIAN_FRONTEND=noninteractive
if ! $cmd; then
  apt-get update && $cmd
fi
