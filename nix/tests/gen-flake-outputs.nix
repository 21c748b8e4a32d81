{ lib }:
let
  inherit (lib) genFlakeOutputs hostToolchainImpure nixpkgsToolchain;
  farm = ./fixtures/farm;
  names = builtins.attrNames;
  host = hostToolchainImpure {
    variants = [
      "torch212-cxx11-cpu-x86_64-linux"
      "torch211-cxx11-cu126-x86_64-linux"
      "torch212-cxx11-cpu-aarch64-linux" # not this host's system: left out
    ];
  };
  viaHost = genFlakeOutputs {
    path = farm;
    toolchain = host;
  };
  viaNixpkgs = genFlakeOutputs {
    path = farm;
    toolchain = nixpkgsToolchain { nixpkgs = ./fixtures/stub-nixpkgs; };
  };
  noarch = toolchain: genFlakeOutputs {
    path = ./fixtures/noarch-repo;
    variants = farm + "/variants.json";
    inherit toolchain;
  };
  noarchNixpkgs = noarch (nixpkgsToolchain { nixpkgs = ./fixtures/stub-nixpkgs; });
in
{
  testGenFlakeOutputsNoarchPackagesOnEverySystem = {
    expr = {
      systems = names noarchNixpkgs.packages;
      packages = names noarchNixpkgs.packages.aarch64-linux;
      joined = names noarchNixpkgs.packages.x86_64-linux.softcap.out.entries;
      shells = names noarchNixpkgs.devShells.x86_64-linux;
    };
    expected = {
      systems = [ "aarch64-linux" "x86_64-linux" ];
      packages = [ "default" "softcap" "softcap-aarch64-linux" "softcap-torch-cpu" "softcap-torch-cuda" ];
      joined = [ "torch-cpu" "torch-cuda" ];
      shells = [ "default" "torch212-cxx11-cpu-x86_64-linux" ]; # where its variants are assembled
    };
  };
  testGenFlakeOutputsNoarchBuiltInTheNewestCpuEnvironment = {
    expr =
      let
        drv = noarchNixpkgs.packages.x86_64-linux.softcap-torch-cuda.out;
      in
      {
        inherit (drv) name system stdenv;
        inherit (drv.env) variant;
        python = map (p: p.name) (builtins.head drv.nativeBuildInputs).packages;
      };
    expected = {
      name = "softcap-torch-cuda";
      variant = "torch-cuda"; # what pybuild assembles ...
      system = "x86_64-linux";
      stdenv = "default"; # ... in torch 2.12's CPU environment: no CUDA toolkit for a noarch variant
      python = [ "torch-2.12.1" "jinja2" "rich" "pyelftools" ];
    };
  };
  testGenFlakeOutputsNoarchWithHostToolchainNeedsOneHostVariant = {
    expr = {
      none = names (noarch (hostToolchainImpure { variants = [ ]; })).packages.x86_64-linux;
      one = names (noarch (hostToolchainImpure { variants = [ "torch212-cxx11-cu130-x86_64-linux" ]; })).packages.x86_64-linux;
    };
    expected = {
      none = [ ];
      one = [ "default" "softcap" "softcap-torch-cpu" "softcap-torch-cuda" "softcap-x86_64-linux" ];
    };
  };
  testGenFlakeOutputsTopLevel = {
    expr = names (genFlakeOutputs {
      path = ./fixtures/kernel-repo;
      toolchain = hostToolchainImpure { variants = [ ]; };
    });
    expected = [ "checks" "devShells" "legacyPackages" "packages" ];
  };
  testGenFlakeOutputsSystemsOfTheMatrix = {
    expr = names viaNixpkgs.packages;
    expected = [ "aarch64-linux" "x86_64-linux" ];
  };
  testGenFlakeOutputsPackageNames = {
    expr = names viaNixpkgs.packages.x86_64-linux;
    expected = [
      "cpu-only-from-212"
      "cpu-only-from-212-aarch64-linux"
      "cpu-only-from-212-torch212-cxx11-cpu-aarch64-linux"
      "cpu-only-from-212-torch212-cxx11-cpu-x86_64-linux"
      "cpu-only-from-212-x86_64-linux"
      "default"
      "img2gray"
      "img2gray-aarch64-linux"
      "img2gray-torch211-cxx11-cpu-aarch64-linux"
      "img2gray-torch211-cxx11-cpu-x86_64-linux"
      "img2gray-torch211-cxx11-cu126-x86_64-linux"
      "img2gray-torch211-cxx11-cu130-aarch64-linux"
      "img2gray-torch211-cxx11-cu130-x86_64-linux"
      "img2gray-torch212-cxx11-cpu-aarch64-linux"
      "img2gray-torch212-cxx11-cpu-x86_64-linux"
      "img2gray-torch212-cxx11-cu130-aarch64-linux"
      "img2gray-torch212-cxx11-cu130-x86_64-linux"
      "img2gray-x86_64-linux"
    ];
  };
  testGenFlakeOutputsJoinPerSystem = {
    expr = names viaNixpkgs.packages.x86_64-linux.img2gray-aarch64-linux.out.entries;
    expected = [
      "torch211-cxx11-cpu-aarch64-linux"
      "torch211-cxx11-cu130-aarch64-linux"
      "torch212-cxx11-cpu-aarch64-linux"
      "torch212-cxx11-cu130-aarch64-linux"
    ];
  };
  testGenFlakeOutputsDefaultNestsSeveralKernels = {
    expr = {
      inherit (viaNixpkgs.packages.x86_64-linux.default) name;
      entries = names viaNixpkgs.packages.x86_64-linux.default.out.entries;
    };
    expected = {
      name = "kernels";
      entries = [ "cpu-only-from-212" "img2gray" ];
    };
  };
  testGenFlakeOutputsDevShellsAreVariantNames = {
    expr = names viaNixpkgs.devShells.aarch64-linux;
    expected = [
      "default"
      "torch211-cxx11-cpu-aarch64-linux"
      "torch211-cxx11-cu130-aarch64-linux"
      "torch212-cxx11-cpu-aarch64-linux"
      "torch212-cxx11-cu130-aarch64-linux"
    ];
  };
  testGenFlakeOutputsDefaultShellIsNewestCpu = {
    expr = viaNixpkgs.devShells.x86_64-linux.default.name;
    expected = "torch212-cxx11-cpu-x86_64-linux";
  };
  testGenFlakeOutputsGuideShellPath = {
    expr = viaNixpkgs.legacyPackages.x86_64-linux.devShells ? "torch211-cxx11-cu126-x86_64-linux";
    expected = true;
  };
  testGenFlakeOutputsHostToolchainOnlyItsVariants = {
    expr = {
      systems = names viaHost.packages;
      packages = names viaHost.packages.x86_64-linux;
      shells = names viaHost.devShells.x86_64-linux;
      name = viaHost.packages.x86_64-linux.img2gray.name;
    };
    expected = {
      systems = [ "x86_64-linux" ];
      packages = [
        "cpu-only-from-212"
        "cpu-only-from-212-torch212-cxx11-cpu-x86_64-linux"
        "cpu-only-from-212-x86_64-linux"
        "default"
        "img2gray"
        "img2gray-torch211-cxx11-cu126-x86_64-linux"
        "img2gray-torch212-cxx11-cpu-x86_64-linux"
        "img2gray-x86_64-linux"
      ];
      shells = [
        "default"
        "torch211-cxx11-cu126-x86_64-linux"
        "torch212-cxx11-cpu-x86_64-linux"
      ];
      name = "img2gray-impure-host";
    };
  };
}
