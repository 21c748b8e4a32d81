#!/usr/bin/env bash
# Built here, run there: on a GPU machine, load variants built elsewhere (carried in kernels/*/build/)
# with the real `kernels` loader and run every kernel's test-suite against them; nothing is built.
#   bash benchmarks/test_carried.sh [VARIANT]     (default torch211-cxx11-cu130-x86_64-linux)
# WHEELS=DIR (default wheelhouse/) holds the `kernels` wheel for a machine without it.
set -u
cd "$(dirname "$0")/.."
variant=${1:-torch211-cxx11-cu130-x86_64-linux}
wheels=${WHEELS:-wheelhouse}
if ! python3 -c 'import kernels' 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$wheels"/kernels-*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD PYTHONUNBUFFERED=1
nvidia-smi -L; python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))"
sha256sum kernels/*/build/"$variant"/*/*.so | tee /tmp/carried.sha256
python3 - <<'PY'
from pathlib import Path
import kernels, torch
for k in ("img2gray", "activation", "rms_norm"):
    m = kernels.get_local_kernel(Path("kernels") / k)  # the loader picks the variant from build/
    print(f"kernels {kernels.__version__} picked", Path(m.__file__).parent.relative_to(Path.cwd()), "for", k)
x = torch.randint(0, 256, (4, 5, 3), dtype=torch.uint8, device="cuda")
print("img2gray on cuda:", kernels.get_local_kernel(Path("kernels/img2gray")).img2gray(x).shape)
PY
export PYBUILD_TEST_VARIANT=$variant  # the suites load exactly this variant and build nothing
rc=0
for k in img2gray activation rms_norm; do
  echo "== $k"; python3 -m pytest -q -p no:cacheprovider kernels/$k/tests 2>&1 | tail -4
  [ "${PIPESTATUS[0]}" = 0 ] || rc=1
done
sha256sum -c --quiet /tmp/carried.sha256 && echo "unchanged: every carried .so"
ls -d kernels/*/.pybuild 2>/dev/null || echo "no .pybuild/ anywhere: nothing was built"
exit $rc
