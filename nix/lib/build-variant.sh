# The one build recipe of a kernel variant, run by every toolchain's derivation: pybuild builds the
# variant exactly as `python -m pybuild build` does on a host (same generated CMake project, same
# RPATH check, same metadata.json), then the finished variant folder becomes $out/<variant>/.
#
# Expects: $python (an interpreter with the variant's torch), $pybuild (a folder holding the
# pybuild package), $kernelSrc (the kernel folder), $variant (its name), $variantsFile, $out;
# compilers, CMake and ninja on PATH. Sourced by stdenv builds, run by bash elsewhere.
set -euo pipefail

work="$NIX_BUILD_TOP/kernel"
cp -r "$kernelSrc" "$work"
chmod -R u+w "$work"

export PYTHONPATH="$pybuild${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
# Hermetic: no compiler cache from outside the build (HOME does not exist here).
export PYBUILD_NO_CCACHE=1

jobs="${NIX_BUILD_CORES:-1}"
[ "$jobs" -gt 0 ] || jobs="$(nproc)"  # 0 means "all cores" to Nix
# Through a pipe: Nix logs are no terminal, so pybuild prints one line per phase, not progress bars.
"$python" -m pybuild build "$work" --variant "$variant" --variants "$variantsFile" --jobs "$jobs" 2>&1 | cat

if [ ! -f "$work/build/$variant/metadata.json" ]; then
  echo "build-variant: pybuild built nothing for $variant: the Python here ($python) is not that variant's torch/backend" >&2
  exit 1
fi
mkdir -p "$out"
cp -r "$work/build/$variant" "$out/$variant"
