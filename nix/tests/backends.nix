{ lib }:
let
  inherit (lib) backends backendNames backendTag backendRunsOn systemArch;
in
{
  testBackendsCudaTagPrefix = {
    expr = backends.cuda.tagPrefix;
    expected = "cu";
  };
  testBackendNamesInMatrixOrder = {
    expr = backendNames;
    expected = [ "cuda" "rocm" "cpu" "metal" "xpu" ];
  };
  testBackendTagCuda = {
    expr = backendTag { backend = "cuda"; backendVersion = "13.0"; };
    expected = "cu130";
  };
  testBackendTagRocm = {
    expr = backendTag { backend = "rocm"; backendVersion = "7.1"; };
    expected = "rocm71";
  };
  testBackendTagCpu = {
    expr = backendTag { backend = "cpu"; backendVersion = null; };
    expected = "cpu";
  };
  testBackendRunsOnMetalDarwin = {
    expr = backendRunsOn "metal" "aarch64-darwin";
    expected = true;
  };
  testBackendRunsOnCudaDarwin = {
    expr = backendRunsOn "cuda" "aarch64-darwin";
    expected = false;
  };
  testSystemArchAarch64 = {
    expr = systemArch "aarch64-linux";
    expected = "aarch64";
  };
}
