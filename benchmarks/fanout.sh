#!/usr/bin/env bash
# The CI fan-out of .github/workflows/build-envs.yml, played on one machine: a single machine builds
# KERNEL's variants on its own (no shared cache, an empty ccache); then two workers, each with its
# own copy of the farm, HOME, environments folder and empty local ccache, build half of the variants
# each (`pybuild build --variant NAME`) against one loopback Redis as the shared cache, a collector
# merges their build/<variant>/ folders with .ci/collect_variants.py (which also runs pybuild check),
# and the script compares every variant's metadata.json digest with the single machine's. Every
# machine builds at the same paths, its farm and its HOME (environments, ccache) alike, as CI runners
# check out a repository at one path under one HOME: nvcc writes what the absolute paths of the
# source and of the headers it includes imply into a device object (anonymous namespaces' names and
# more), so two compiles of one unit give the same bytes only at the same paths. The machines take
# turns, each one's folders moved aside afterwards.
#
#   bash benchmarks/fanout.sh [KERNEL] [VARIANT ...]
#
# KERNEL defaults to img2gray; the variants to its CPU variants this machine builds (torch 2.13 and
# 2.14); `--all` instead of variants builds what `pybuild build --all` builds. Needs redis-server and
# ccache with Redis storage. Exits non-zero when a digest differs; KEEP=1 keeps the folders.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
kernel=${1:-img2gray}
shift || true
variants=("$@")
if [ ${#variants[@]} -eq 0 ]; then
  variants=(torch213-cxx11-cpu-x86_64-linux torch214-cxx11-cpu-x86_64-linux)
fi
py=${PYTHON:-python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/pybuild-fanout.XXXXXX")
redis_pid=""
cleanup() {
  if [ -n "$redis_pid" ]; then kill "$redis_pid" 2>/dev/null || true; wait "$redis_pid" 2>/dev/null || true; fi
  if [ -n "${KEEP:-}" ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

farm_copy() {  # a farm with only this kernel's sources: variants.json and kernels/<kernel>/
  mkdir -p "$1/kernels"
  cp "$repo/variants.json" "$1/"
  (cd "$repo/kernels" && tar --exclude=build --exclude=.pybuild --exclude=__pycache__ \
    --exclude=compile_commands.json -cf - "$kernel") | (cd "$1/kernels" && tar -xf -)
}

# the machine's package settings and uv's wheel cache are shared (each fleet machine has its mirror)
uv_cache=$("$py" -c 'import subprocess; from pybuild.envs import uv_bin; print(subprocess.run([uv_bin(), "cache", "dir"], capture_output=True, text=True).stdout.strip())')
machine_env() {  # the environment of the machine whose turn it is: its state under $work/machine
  echo "HOME=$work/machine/home" "CCACHE_DIR=$work/machine/ccache" "PYBUILD_CACHE_DIR=$work/machine/pybuild-cache" \
    "XDG_CACHE_HOME=$work/machine/home/.cache" "XDG_CONFIG_HOME=${XDG_CONFIG_HOME:-$HOME/.config}" \
    "UV_CACHE_DIR=$uv_cache" "PYTHONPATH=$repo"
}
build() {  # NAME ARGS...: python -m pybuild build as machine NAME: a fresh farm and HOME at the paths
  local name=$1; shift     # every machine uses, kept afterwards as NAME's
  rm -rf "$work/checkout" "$work/machine"
  mkdir -p "$work/machine/home" "$work/$name"
  farm_copy "$work/checkout"
  # shellcheck disable=SC2046
  (cd "$work/checkout" && env -u PYBUILD_SHARED_CACHE $(machine_env) "$py" -m pybuild build "kernels/$kernel" "$@" -q)
  mv "$work/checkout" "$work/$name/farm"
  mv "$work/machine" "$work/$name/state"
}

port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$work/redis"
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work/redis" >"$work/redis/log" 2>&1 &
redis_pid=$!
for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
cache="redis://127.0.0.1:$port"

start=$(date +%s)
if [ "${variants[0]}" = "--all" ]; then
  build single --all
  mapfile -t variants < <(cd "$work/single/farm/kernels/$kernel/build" && ls -d torch*)
else
  build single "${variants[@]/#/--variant=}"
fi
echo "single machine: ${variants[*]} in $(( $(date +%s) - start )) s"

start=$(date +%s)
w1=() w2=()
for i in "${!variants[@]}"; do
  if (( i % 2 == 0 )); then w1+=("--variant=${variants[$i]}"); else w2+=("--variant=${variants[$i]}"); fi
done
build worker1 "${w1[@]}" --cache "$cache"
if [ ${#w2[@]} -gt 0 ]; then build worker2 "${w2[@]}" --cache "$cache"; fi
echo "two workers: ${w1[*]} | ${w2[*]} in $(( $(date +%s) - start )) s (shared cache: $(redis-cli -p "$port" dbsize) keys)"

# each worker's artifact: <kernel>/<variant>/ of what it built, as the variant jobs upload it
for w in worker1 worker2; do
  mkdir -p "$work/artifacts/$w/$kernel"
  for d in "$work/$w/farm/kernels/$kernel/build"/torch*; do
    [ -d "$d" ] && cp -a "$d" "$work/artifacts/$w/$kernel/"
  done
done
farm_copy "$work/collector/farm"
(cd "$work/collector/farm" && PYTHONPATH="$repo" "$py" "$repo/.ci/collect_variants.py" . "$work"/artifacts/worker*)

PYTHONPATH="$repo" "$py" - "$work/single/farm/kernels/$kernel/build" "$work/collector/farm/kernels/$kernel/build" "${variants[@]}" <<'PY'
import json, sys
from pathlib import Path

single, collected, names = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
differ = []
for name in names:
    a = json.loads((single / name / "metadata.json").read_text())
    b = json.loads((collected / name / "metadata.json").read_text())
    same = a["digest"] == b["digest"] and a["id"] == b["id"]
    print(f"{name}: {len(a['digest']['files'])} files, digests {'equal' if same else 'DIFFER'}")
    if not same:
        differ.append(name)
extra = sorted({p.name for p in collected.iterdir()} ^ {p.name for p in single.iterdir()})
if extra:
    print(f"variants in one tree only: {', '.join(extra)}")
sys.exit(1 if differ or extra else 0)
PY
echo "fan-out: the collected build/ tree has the single machine's digests"
