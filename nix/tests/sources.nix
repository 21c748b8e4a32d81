{ lib }:
let
  inherit (lib) isKernelSource isPybuildSource;
in
{
  testIsKernelSourceDropsBuildOutputs = {
    expr = map isKernelSource [ "csrc" "build" ".pybuild" "result-2" ];
    expected = [ true false false false ];
  };
  testIsKernelSourceKeepsTheRest = {
    expr = map isKernelSource [ "build.toml" "torch-ext" "builder.cu" "results.md" ];
    expected = [ true true true true ];
  };
  testIsPybuildSourceOnlyThePackage = {
    expr = map isPybuildSource [ "/pybuild" "/pybuild/templates/_ops.py.j2" "/pybuild/__pycache__" "/nix" "/pybuild2" ];
    expected = [ true true false false false ];
  };
}
