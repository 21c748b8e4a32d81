#!/usr/bin/env bash
# The GPU run, in one go on a CUDA machine (torch with CUDA, nvcc, cmake, ninja):
#   1. environment: GPU, driver, nvcc, cmake, python, torch, Python headers;
#   2. build every kernel's host variants with pybuild (CPU + CUDA, sm_90 unless PYBUILD_CUDA_ARCHS);
#   3. every kernel's test-suite (pytest kernels/), CUDA tests included, then the tests in tests/
#      marked gpu: the real `kernels` package picks each kernel's CUDA variant (and a pure-Python
#      kernel's torch-cuda) and runs it on the GPU (tests/integration/test_gpu_loader.py & co.);
#   4. `python -m pybuild bench`: every kernel's benchmarks/cases.py vs torch eager, torch.compile
#      and device copies, writing gpu-<device>.json and .png;
#   5. with --sweep N: N seeded random shapes per op (`pybuild bench --sweep`), one run per kernel
#      and seed (--seed S or S1,S2,...), the runs spread over the visible GPUs one at a time each,
#      every run kept as benchmarks/results/sweeps/ keeps it (benchmarks/keep_sweep.py):
#      sweeps/sweep-<kernel>-<device>-seed<S>.json.gz (with --variant, the device part carries the
#      variant: sweep-<kernel>-<device>-torch215-cxx11-cu132-seed<S>.json.gz).
# Results and logs go to $OUT when set (a scratch folder the caller collects), else to
# benchmarks/results/. Exit status: non-zero if any step failed. A tree copied without .git can
# name its commit for the JSON (it wins over a stale .git): PYBUILD_SOURCE_COMMIT=<sha> bash benchmarks/run_gpu.sh.
# A machine without network access gets what it lacks (the `kernels` package, usually) as wheels:
# --wheels DIR installs DIR/*.whl (without their dependencies) into a scratch folder on PYTHONPATH.
# With `kernels` importable, the kernel test-suites load every build through it; without it they
# import the variant the loader's way, and the loader tests are skipped.
# Another torch than the machine's: put its wheel in DIR too (with the NVIDIA wheels whose releases
# the machine lacks, and its triton), build the variants for it on a machine with network access
# (python -m pybuild build kernels/K --variant NAME) and carry build/ along; --variant NAME then
# skips the build, and the kernel test-suites, the loader tests, the bench and the sweeps load that
# variant (PYBUILD_TEST_VARIANT), once the torch that imports is checked to be one it loads under.
# The NVIDIA library folders the wheels do not bring are linked from the machine's own torch, so the
# carried torch finds them where its wheel expects them.
#
#   bash benchmarks/run_gpu.sh              # build, test, bench
#   bash benchmarks/run_gpu.sh --quick      # fewer sizes and repetitions
#   bash benchmarks/run_gpu.sh --no-bench   # build and test only (writes no results)
#   bash benchmarks/run_gpu.sh --wheels wheelhouse/   # with the packages in wheelhouse/*.whl
#   bash benchmarks/run_gpu.sh --sweep 200 --seed 0   # then N seeded random shapes per op (pybuild bench --sweep)
#   bash benchmarks/run_gpu.sh --no-tests --no-bench --sweep 200 --seed 1,2,3  # 3 seeds x 3 kernels, over the GPUs
#   bash benchmarks/run_gpu.sh --no-bench --sweep 200 # build, test and sweep, without the fixed cases
#   bash benchmarks/run_gpu.sh --no-tests --no-bench --sweep 200  # build and sweep only
#   bash benchmarks/run_gpu.sh --wheels wheelhouse/ --variant torch215-cxx11-cu132-x86_64-linux --no-bench
set -uo pipefail
quick=()
bench=1
tests=1
wheels=
sweep=
seed=0
variant=
kernels_swept=(img2gray activation rms_norm)
usage="usage: $0 [--quick] [--no-bench] [--no-tests] [--wheels DIR] [--variant NAME] [--sweep N [--seed S[,S...]] [--sweep-kernels 'K ...']]"
recorded="bash benchmarks/run_gpu.sh"  # the command as given, for the JSON
[ $# -gt 0 ] && recorded+=$(printf ' %q' "$@")
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=(--quick) ;;
    --no-bench) bench=0 ;;
    --no-tests) tests=0 ;;
    --wheels)
      [ $# -ge 2 ] || { echo "$0: --wheels needs a folder of .whl files; $usage" >&2; exit 2; }
      wheels=$2; shift
      [ -n "$wheels" ] || { echo "$0: --wheels needs a folder of .whl files; $usage" >&2; exit 2; } ;;
    --sweep|--seed|--sweep-kernels|--variant)
      [ $# -ge 2 ] && [ -n "$2" ] || { echo "$0: $1 needs a value; $usage" >&2; exit 2; }
      case "$1" in
        --sweep) sweep=$2 ;;
        --seed) seed=$2 ;;
        --sweep-kernels) read -r -a kernels_swept <<< "$2" ;;
        --variant) variant=$2 ;;
      esac
      shift ;;
    --wheels=*)
      wheels=${1#--wheels=}
      [ -n "$wheels" ] || { echo "$0: --wheels needs a folder of .whl files; $usage" >&2; exit 2; } ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
  shift
done
if [ -n "$wheels" ]; then  # relative to where the script was started, before the cd below
  if ! compgen -G "$wheels/*.whl" > /dev/null; then
    echo "$0: --wheels $wheels: no .whl files there" >&2
    exit 2
  fi
  wheels=$(cd "$wheels" && pwd)
fi
cd "$(dirname "$0")/.."
if [ -n "$sweep" ] && ! [[ "$sweep" =~ ^[1-9][0-9]*$ && "$seed" =~ ^[0-9]+(,[0-9]+)*$ ]]; then
  echo "$0: --sweep takes a positive number of shapes per op and --seed a number >= 0 (or several: 1,2,3); $usage" >&2
  exit 2
fi
if [ $tests = 0 ] && [ $bench = 0 ] && [ -z "$sweep" ]; then
  echo "$0: --no-tests --no-bench leaves nothing to run; add --sweep N or drop one" >&2
  exit 2
fi
if [ $bench = 0 ] && [ ${#quick[@]} -gt 0 ]; then
  echo "$0: --quick trims the bench, which --no-bench leaves out; drop --quick" >&2
  exit 2
fi
if [ -n "$variant" ]; then
  if ! [[ "$variant" =~ ^[a-z0-9][a-z0-9._-]*$ ]]; then
    echo "$0: --variant takes a variant name such as torch215-cxx11-cu132-x86_64-linux (python -m pybuild variants)" >&2
    exit 2
  fi
  for k in kernels/*/build.toml; do
    kdir=$(dirname "$k")
    if [ ! -f "$kdir/build/$variant/metadata.json" ]; then
      echo "$0: --variant $variant: $kdir/build/$variant is not built; build it where its torch is" \
        "(python -m pybuild build $kdir --variant $variant) and bring build/ along" >&2
      exit 2
    fi
  done
fi
dest=${OUT:-benchmarks/results}
mkdir -p "$dest"
exec > >(tee "$dest/gpu-run.log") 2>&1
export PYTHONUNBUFFERED=1
export PYBUILD_CUDA_ARCHS=${PYBUILD_CUDA_ARCHS:-9.0}
status=0
scratch=$(mktemp -d "${TMPDIR:-/tmp}/pybuild-gpu.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
step() { echo; echo "== $(date -u +%H:%M:%S) $*"; }

if [ -n "$wheels" ]; then
  step "wheels from $wheels"
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$scratch/site" "$wheels"/*.whl \
    || { echo "installing the wheels in $wheels failed" >&2; exit 1; }
  if [ -d "$scratch/site/torch" ]; then
    # The carried torch looks for the NVIDIA libraries beside it (site/nvidia/<name>/lib); the
    # folders its wheels do not bring come from the machine's torch, a whole folder at a time (a
    # wheel that brings part of nvidia/cu13 hides the machine's nvidia/cu13).
    machine_nvidia=$(python3 -c 'import pathlib, torch; print(pathlib.Path(torch.__file__).parents[1] / "nvidia")' \
      2>/dev/null) || machine_nvidia=
    mkdir -p "$scratch/site/nvidia"
    if [ -n "$machine_nvidia" ] && [ -d "$machine_nvidia" ]; then
      for d in "$machine_nvidia"/*/; do
        [ -d "$d" ] || continue
        n=$(basename "$d")
        if [ -e "$scratch/site/nvidia/$n" ]; then echo "nvidia/$n: from the wheels"
        else ln -s "${d%/}" "$scratch/site/nvidia/$n" && echo "nvidia/$n: the machine's ($machine_nvidia)"; fi
      done
    else
      echo "the machine's torch has no nvidia/ folder beside it: the carried torch gets only the NVIDIA" \
        "wheels in $wheels; add those it needs there"
    fi
  fi
  export PYTHONPATH="$scratch/site${PYTHONPATH:+:$PYTHONPATH}"
  ls "$wheels"/*.whl
  if compgen -G "$wheels/kernels-*.whl" > /dev/null; then  # given the loader, it must import (its needs too)
    python3 -c "import kernels; kernels.get_local_kernel" \
      || { echo "the kernels wheel from $wheels does not import here; add the wheels it needs" >&2; exit 1; }
  fi
fi

step "environment"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv || status=1
nvcc --version | tail -2
cmake --version | head -1
python3 - <<'PY'
import sys, sysconfig, torch
print("python", sys.version.split()[0], sys.executable)
print("torch", torch.__version__, "cuda", torch.version.cuda, "gpu", torch.cuda.is_available())
print("python include", sysconfig.get_paths()["include"])
import os; print("Python.h present:", os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))
try:
    from importlib.metadata import version
    import kernels
    print("kernels", version("kernels"), "(the kernel test-suites load every build through it)")
except ImportError:
    print("kernels: not installed; the kernel test-suites import each variant the loader's way and the"
          " loader tests are skipped (pass --wheels DIR with a kernels wheel)")
PY

build_ok=1
if [ -n "$variant" ]; then
  step "no build: every kernel's $variant as brought (PYBUILD_TEST_VARIANT)"
  export PYBUILD_TEST_VARIANT=$variant
  # The torch that imports here must be one the variant loads under (pybuild.testing.torch_mismatch).
  python3 - "$variant" <<'PY' || exit 1
import sys
from pybuild.errors import PybuildError
from pybuild.testing import torch_mismatch
variant = sys.argv[1]
try:
    import torch
except (ImportError, OSError) as e:  # OSError: a library it needs is missing or too old
    sys.exit(f"--variant {variant}: torch does not import here ({e}); carry its wheels with --wheels DIR")
print("torch", torch.__version__, "from", torch.__file__)
try:
    why = torch_mismatch(variant, torch.__version__)
except PybuildError as e:
    sys.exit(f"--variant {variant}: {e}")
if why:
    sys.exit(f"--variant {why}; carry that torch with --wheels DIR")
PY
else
  step "build (pybuild, CUDA archs $PYBUILD_CUDA_ARCHS), kernels in parallel"
  pids=()
  for k in kernels/*/build.toml; do
    python3 -m pybuild build "$(dirname "$k")" > "$scratch/build-$(basename "$(dirname "$k")").log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || build_ok=0; done
  cat "$scratch"/build-*.log
fi
if [ $build_ok = 0 ]; then
  status=1
  for log in kernels/*/.pybuild/*/build.log; do
    grep -qiE "error|fail" "$log" && { echo "--- $log (tail)"; tail -40 "$log"; }
  done
fi
[ -n "$variant" ] || tar czf "$dest/build-logs.tar.gz" kernels/*/.pybuild/*/build.log 2>/dev/null

if [ $build_ok = 1 ] && [ $tests = 1 ]; then
  step "tests (pytest, one process per kernel)"
  for t in kernels/*/tests; do
    echo "-- $t"
    python3 -m pytest -q -p no:cacheprovider "$t" || status=1
  done
  if [ -n "$variant" ]; then
    # The other tests marked gpu build on this machine, with its own torch and nvcc.
    echo "-- the loader tests (the kernels loader resolves $variant and runs it)"
    python3 -m pytest -q -p no:cacheprovider -m gpu tests/integration/test_gpu_loader.py
  else
    echo "-- tests/ marked gpu (the kernels loader resolves and runs the CUDA variants)"
    python3 -m pytest -q -p no:cacheprovider -m gpu tests
  fi
  rc=$?
  [ $rc = 0 ] || [ $rc = 5 ] || status=1  # 5: all skipped (no kernels package), not a failure
fi
if [ $build_ok = 1 ]; then
  if [ $bench = 1 ]; then
    step "bench"
    python3 -m pybuild bench img2gray activation rms_norm "${quick[@]}" --out "$dest" \
      --record-command "$recorded" || status=1
  fi
  if [ -n "$sweep" ]; then
    # One run per kernel and seed; run i goes to GPU i modulo the GPUs (CUDA_VISIBLE_DEVICES, else
    # every GPU nvidia-smi lists), each GPU taking its runs one after another, so no two runs time
    # on one GPU at once.
    IFS=, read -r -a seeds <<< "$seed"
    if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
      IFS=, read -r -a gpus <<< "$CUDA_VISIBLE_DEVICES"
    else
      mapfile -t gpus < <(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null)
      [ ${#gpus[@]} -gt 0 ] || gpus=(0)
    fi
    jobs=()
    for s in "${seeds[@]}"; do for k in "${kernels_swept[@]}"; do jobs+=("$k $s"); done; done
    step "sweep: $sweep shapes per op, seeds ${seeds[*]} (${kernels_swept[*]}): ${#jobs[@]} runs on GPUs ${gpus[*]}"
    # Each GPU's lines as they come, prefixed with the GPU; its status in a file (a pipeline's own
    # status is the prefixing sed's).
    pids=()
    for g in "${!gpus[@]}"; do
      (
        rc=0
        for i in "${!jobs[@]}"; do
          [ $((i % ${#gpus[@]})) = "$g" ] || continue
          read -r k s <<< "${jobs[$i]}"
          echo "-- $k, seed $s"
          run_dir="$scratch/sweep-$k-$s"
          CUDA_VISIBLE_DEVICES=${gpus[$g]} python3 -m pybuild bench "$k" --sweep "$sweep" --seed "$s" \
            --out "$run_dir" --record-command "${variant:+PYBUILD_TEST_VARIANT=$variant }python -m pybuild bench $k --sweep $sweep --seed $s" \
            && python3 benchmarks/keep_sweep.py "$run_dir"/sweep-*.json --to "$dest/sweeps" || rc=1
        done
        echo $rc > "$scratch/sweep-gpu$g.rc"
      ) 2>&1 | sed -u "s/^/[GPU ${gpus[$g]}] /" &
      pids+=($!)
    done
    wait "${pids[@]}"  # not a bare wait: that would wait for the log's tee too
    for g in "${!gpus[@]}"; do
      [ "$(cat "$scratch/sweep-gpu$g.rc" 2>/dev/null)" = 0 ] || status=1
    done
  fi
fi
step "done (status $status)"
exit $status
