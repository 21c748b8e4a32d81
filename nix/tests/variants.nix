{ lib }:
let
  inherit (lib) expandMatrix readMatrix variantLessThan variantName;
  names = map (v: v.name);
  cpu = torch: system: {
    inherit torch system;
    backend = "cpu";
    backendVersion = null;
    cxxAbi = "cxx11";
  };
in
{
  testVariantNameCpu = {
    expr = variantName (cpu "2.13" "x86_64-linux");
    expected = "torch213-cxx11-cpu-x86_64-linux";
  };
  testVariantNameCuda = {
    expr = variantName {
      torch = "2.11";
      backend = "cuda";
      backendVersion = "12.6";
      cxxAbi = "cxx11";
      system = "x86_64-linux";
    };
    expected = "torch211-cxx11-cu126-x86_64-linux";
  };
  testVariantNameMetalDropsAbi = {
    expr = variantName {
      torch = "2.12";
      backend = "metal";
      backendVersion = null;
      cxxAbi = null;
      system = "aarch64-darwin";
    };
    expected = "torch212-metal-aarch64-darwin";
  };
  testExpandMatrixExcludesAndSorts = {
    expr = names (expandMatrix {
      torch = [
        {
          version = "2.13";
          cuda = [ "13.0" ];
          cpu = true;
        }
      ];
      "cxx-abi" = [ "cxx11" ];
      systems = [ "x86_64-linux" "aarch64-linux" ];
      exclude = [
        {
          backend = "cuda";
          system = "aarch64-linux";
        }
      ];
    });
    expected = [
      "torch213-cxx11-cu130-x86_64-linux"
      "torch213-cxx11-cpu-aarch64-linux"
      "torch213-cxx11-cpu-x86_64-linux"
    ];
  };
  testExpandMatrixExcludeByBackendVersion = {
    expr = names (readMatrix ./fixtures/farm/variants.json);
    expected = [
      "torch211-cxx11-cu126-x86_64-linux"
      "torch211-cxx11-cu130-aarch64-linux"
      "torch211-cxx11-cu130-x86_64-linux"
      "torch211-cxx11-cpu-aarch64-linux"
      "torch211-cxx11-cpu-x86_64-linux"
      "torch212-cxx11-cu130-aarch64-linux"
      "torch212-cxx11-cu130-x86_64-linux"
      "torch212-cxx11-rocm71-x86_64-linux"
      "torch212-cxx11-cpu-aarch64-linux"
      "torch212-cxx11-cpu-x86_64-linux"
    ];
  };
  testExpandMatrixTorchSortsNumerically = {
    expr = names (expandMatrix {
      torch = [
        {
          version = "2.10";
          cpu = true;
        }
        {
          version = "2.9";
          cpu = true;
        }
      ];
      "cxx-abi" = [ "cxx11" ];
      systems = [ "x86_64-linux" ];
    });
    expected = [
      "torch29-cxx11-cpu-x86_64-linux"
      "torch210-cxx11-cpu-x86_64-linux"
    ];
  };
  testExpandMatrixDarwinHasOnlyMetal = {
    expr = names (expandMatrix {
      torch = [
        {
          version = "2.12";
          cuda = [ "12.8" ];
          metal = true;
          cpu = true;
        }
      ];
      "cxx-abi" = [ "cxx11" ];
      systems = [ "aarch64-darwin" ];
    });
    expected = [ "torch212-metal-aarch64-darwin" ];
  };
  testExpandMatrixFalseAndEmptyListBuildNothing = {
    expr = names (expandMatrix {
      torch = [
        {
          version = "2.12";
          cuda = [ ];
          cpu = false;
        }
        {
          version = "2.13";
          cpu = true;
        }
      ];
      "cxx-abi" = [ "cxx11" ];
      systems = [ "x86_64-linux" ];
    });
    expected = [ "torch213-cxx11-cpu-x86_64-linux" ];
  };
  testExpandMatrixBothAbis = {
    expr = names (expandMatrix {
      torch = [
        {
          version = "2.6";
          cpu = true;
        }
      ];
      "cxx-abi" = [ "cxx98" "cxx11" ];
      systems = [ "x86_64-linux" ];
    });
    expected = [
      "torch26-cxx11-cpu-x86_64-linux"
      "torch26-cxx98-cpu-x86_64-linux"
    ];
  };
  testReadMatrixFarmCount = {
    expr = builtins.length (readMatrix ./fixtures/farm/variants.json);
    expected = 10;
  };
  testVariantLessThanNumericTorch = {
    expr = variantLessThan (cpu "2.9" "x86_64-linux") {
      torch = "2.10";
      backend = "cuda";
      backendVersion = "12.8";
      cxxAbi = "cxx11";
      system = "x86_64-linux";
    };
    expected = true;
  };
}
