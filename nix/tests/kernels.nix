{ lib }:
let
  inherit (lib) findKernels kernelAccepts kernelVariants readKernel;
  farm = ./fixtures/farm;
in
{
  testReadKernelBackendsInMatrixOrder = {
    expr = (readKernel (farm + "/kernels/img2gray")).backends;
    expected = [ "cuda" "cpu" ];
  };
  testReadKernelNarrowedByGeneralBackendsAndMinver = {
    expr =
      let
        k = readKernel (farm + "/kernels/cpu-only-from-212");
      in
      {
        inherit (k) name pythonName backends torchMinver torchMaxver;
      };
    expected = {
      name = "cpu-only-from-212";
      pythonName = "cpu_only_from_212";
      backends = [ "cpu" ];
      torchMinver = [ 2 12 ];
      torchMaxver = null;
    };
  };
  testKernelAcceptsBelowMinver = {
    expr = kernelAccepts {
      backends = [ "cpu" ];
      torchMinver = [ 2 12 ];
      torchMaxver = null;
    } { torch = "2.11"; backend = "cpu"; };
    expected = false;
  };
  testKernelAcceptsAtMaxver = {
    expr = kernelAccepts {
      backends = [ "cuda" ];
      torchMinver = null;
      torchMaxver = [ 2 11 ];
    } { torch = "2.11"; backend = "cuda"; };
    expected = true;
  };
  testKernelAcceptsOtherBackend = {
    expr = kernelAccepts {
      backends = [ "cuda" ];
      torchMinver = null;
      torchMaxver = null;
    } { torch = "2.11"; backend = "rocm"; };
    expected = false;
  };
  testFindKernelsFarmSkipsFoldersWithoutBuildToml = {
    expr = map (k: k.name) (findKernels farm);
    expected = [ "cpu-only-from-212" "img2gray" ];
  };
  testReadKernelNoarch = {
    expr =
      let
        k = readKernel ./fixtures/noarch-repo;
      in
      {
        inherit (k) name noarch backends;
        acceptsMatrixVariant = kernelAccepts k { torch = "2.12"; backend = "cpu"; };
        compiledIsNot = (readKernel (farm + "/kernels/img2gray")).noarch;
      };
    expected = {
      name = "softcap";
      noarch = true;
      backends = [ "cuda" "cpu" ];
      acceptsMatrixVariant = false;
      compiledIsNot = false;
    };
  };
  testFindKernelsKernelRepo = {
    expr = map (k: k.name) (findKernels ./fixtures/kernel-repo);
    expected = [ "relu" ];
  };
  testKernelVariantsNoarchNamesCannAsTheLoader = {
    expr = map (v: v.name) (kernelVariants { noarch = true; backends = [ "cuda" "cann" ]; } [ ]);
    expected = [ "torch-cuda" "torch-npu" ];
  };
  testKernelVariantsStableAbiOncePerBackendVersionAndSystem = {
    expr = map (v: v.name) (
      kernelVariants
        {
          backends = [ "cuda" "cpu" ];
          stableAbi = { cuda = [ 2 11 ]; };
          torchMinver = null;
          torchMaxver = null;
        }
        (
          map (v: v // { name = lib.variantName v; }) [
            { torch = "2.12"; backend = "cuda"; backendVersion = "13.0"; cxxAbi = "cxx11"; system = "x86_64-linux"; }
            { torch = "2.13"; backend = "cuda"; backendVersion = "13.0"; cxxAbi = "cxx11"; system = "x86_64-linux"; }
            { torch = "2.13"; backend = "cpu"; backendVersion = null; cxxAbi = "cxx11"; system = "x86_64-linux"; }
          ]
        )
    );
    expected = [ "torch-stable-abi211-cu130-x86_64-linux" "torch213-cxx11-cpu-x86_64-linux" ];
  };
  testKernelVariantsStableAbiBuildsWithTheNewestTorch = {
    expr = map (v: v.torch) (
      kernelVariants
        {
          backends = [ "cuda" ];
          stableAbi = { cuda = [ 2 12 ]; };
          torchMinver = null;
          torchMaxver = null;
        }
        (
          map (v: v // { name = lib.variantName v; }) [
            { torch = "2.11"; backend = "cuda"; backendVersion = "13.0"; cxxAbi = "cxx11"; system = "x86_64-linux"; }
            { torch = "2.12"; backend = "cuda"; backendVersion = "13.0"; cxxAbi = "cxx11"; system = "x86_64-linux"; }
            { torch = "2.13"; backend = "cuda"; backendVersion = "13.0"; cxxAbi = "cxx11"; system = "x86_64-linux"; }
          ]
        )
    );
    expected = [ "2.13" ];
  };
  testKernelAcceptsGeneralCudaBounds = {
    expr = map (cu: kernelAccepts {
      backends = [ "cuda" ];
      torchMinver = null;
      torchMaxver = null;
      cudaMinver = [ 12 8 ];
      cudaMaxver = null;
    } { torch = "2.12"; backend = "cuda"; backendVersion = cu; }) [ "12.6" "13.0" ];
    expected = [ false true ];
  };
  testKernelVariantsTvmFfiOncePerBackendVersionAndSystem = {
    expr = map (v: v.name) (
      kernelVariants
        {
          framework = "tvm-ffi";
          backends = [ "cpu" ];
          torchMinver = null;
          torchMaxver = null;
        }
        (
          map (v: v // { name = lib.variantName v; }) [
            { torch = "2.12"; backend = "cpu"; backendVersion = null; cxxAbi = "cxx11"; system = "x86_64-linux"; }
            { torch = "2.13"; backend = "cpu"; backendVersion = null; cxxAbi = "cxx11"; system = "x86_64-linux"; }
          ]
        )
    );
    expected = [ "tvm-ffi01-cpu-x86_64-linux" ];
  };
}
