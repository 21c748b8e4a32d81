{ lib }:
let
  inherit (lib) dependencyEnv dependencyEnvVar fetchPinnedTarball manifestPins isPinnedDependency;
  table = (builtins.fromJSON (builtins.readFile ../../pybuild/deps/dependencies.json)).dependencies;
in
{
  testDependencyEnvVarMetalCpp = {
    expr = dependencyEnvVar "metal-cpp";
    expected = "PYBUILD_DEP_METAL_CPP";
  };
  testManifestPinsCudaSection = {
    expr = manifestPins {
      kernel.gemm = {
        backend = "cuda";
        depends = [
          "torch"
          "cutlass_3_6"
        ];
      };
    } "cuda";
    expected = [ "cutlass_3_6" ];
  };
  testManifestPinsOnlyTheVariantsBackend = {
    expr = manifestPins {
      kernel.gemm = {
        backend = "cuda";
        depends = [ "cutlass_3_6" ];
      };
      kernel.gemm_xpu = {
        backend = "xpu";
        depends = [
          "torch"
          "sycl_tla"
        ];
      };
    } "xpu";
    expected = [ "sycl_tla" ];
  };
  testManifestPinsOnceSortedAndNoFarmNames = {
    expr = manifestPins {
      kernel.a = {
        backend = "cuda";
        depends = [
          "cutlass_4_0"
          "cub"
          "cutlass"
        ];
      };
      kernel.b = {
        backend = "cuda";
        depends = [
          "cutlass_3_8"
          "cutlass_4_0"
        ];
      };
    } "cuda";
    expected = [
      "cutlass_3_8"
      "cutlass_4_0"
    ];
  };
  testDependencyEnvEmpty = {
    expr = dependencyEnv fetchPinnedTarball [ ];
    expected = { };
  };
  # The names only: forcing the values would fetch the tags.
  testDependencyEnvNames = {
    expr = builtins.attrNames (dependencyEnv fetchPinnedTarball [ "cutlass_3_6" "cutlass_4_0" ]);
    expected = [
      "PYBUILD_DEP_CUTLASS_3_6"
      "PYBUILD_DEP_CUTLASS_4_0"
    ];
  };
  testPinsCarryUpstreamsNixHash = {
    expr = table.cutlass_3_6.source."nix-hash";
    expected = "sha256-FbMVqR4eZyum5w4Dj5qJgBPOS66sTem/qKZjYIK/7sg=";
  };
  # The fetcher gets the pinned URL and upstream's hash (a stub fetcher: nothing is downloaded).
  testDependencyEnvHandsTheFetcherThePin = {
    expr = (dependencyEnv (x: x) [ "cutlass_3_6" ]).PYBUILD_DEP_CUTLASS_3_6;
    expected = {
      url = "https://github.com/NVIDIA/cutlass/archive/refs/tags/v3.6.0.tar.gz";
      hash = "sha256-FbMVqR4eZyum5w4Dj5qJgBPOS66sTem/qKZjYIK/7sg=";
    };
  };
  testIsPinnedDependency = {
    expr = map isPinnedDependency [
      "cutlass_4_0"
      "torch"
    ];
    expected = [
      true
      false
    ];
  };
}
