{ lib }:
let
  inherit (lib) hostToolchainImpure nixpkgsToolchain;
  variant = backend: backendVersion: tag: {
    torch = "2.11";
    inherit backend backendVersion;
    cxxAbi = "cxx11";
    system = "x86_64-linux";
    name = "torch211-cxx11-${tag}-x86_64-linux";
  };
  cuda126 = variant "cuda" "12.6" "cu126";
  cpu = variant "cpu" null "cpu";
  args = v: {
    kernel.name = "img2gray";
    kernel.dir = ../../kernels/img2gray;
    variant = v;
    src = "/kernel-source";
    pybuild = "/pybuild-source";
    variantsFile = "/variants.json";
  };
  host = hostToolchainImpure { variants = [ cpu.name ]; };
  # nixpkgs cannot be fetched here: a stub with nixpkgs' interface shows what the toolchain asks for.
  stubbed = nixpkgsToolchain {
    nixpkgs = ./fixtures/stub-nixpkgs;
    pins = {
      python = "3.13";
      torch."2.11" = "2.11.0";
      hashes = {
        "torch-2.11.0+cu126-cp313-cp313-manylinux_2_28_x86_64.whl" = "sha256-cuda";
        "torch-2.11.0+cpu-cp313-cp313-manylinux_2_28_x86_64.whl" = "sha256-cpu";
      };
    };
  };
  torchOf = drv: builtins.head (builtins.head drv.nativeBuildInputs).packages;
in
{
  testHostToolchainName = {
    expr = host.name;
    expected = "host-impure";
  };
  testHostToolchainSupportsOnlyListedVariants = {
    expr = map host.supports [ cpu cuda126 ];
    expected = [ true false ];
  };
  testHostVariantIsNamedImpureAndStaysLocal = {
    expr =
      let
        drv = host.mkVariant (args cpu);
      in
      {
        inherit (drv) name builder preferLocalBuild allowSubstitutes __noChroot variant;
      };
    expected = {
      name = "img2gray-torch211-cxx11-cpu-x86_64-linux-impure-host";
      builder = "/bin/bash";
      preferLocalBuild = true;
      allowSubstitutes = false;
      __noChroot = true;
      variant = "torch211-cxx11-cpu-x86_64-linux";
    };
  };
  testNixpkgsToolchainName = {
    expr = (nixpkgsToolchain { nixpkgs = throw "not needed to name it"; }).name;
    expected = "nixpkgs";
  };
  testNixpkgsToolchainCudaVariant = {
    expr =
      let
        drv = stubbed.mkVariant (args cuda126);
        torch = torchOf drv;
      in
      {
        inherit (drv) name stdenv;
        tools = map (p: p.name) drv.nativeBuildInputs;
        inherit (drv.env) CUDA_HOME NIX_DONT_SET_RPATH variant;
        torch = torch.name;
        torchCuda = torch.args.cudaPackages.cudatoolkit.name;
        wheel = torch.attrs.src.url;
        hash = torch.attrs.src.hash;
      };
    expected = {
      name = "img2gray-torch211-cxx11-cu126-x86_64-linux";
      stdenv = "cuda-12.6";
      tools = [ "python3.13-env" "cmake" "ninja" "cudatoolkit-12.6" ];
      CUDA_HOME = "/stub/cudatoolkit-12.6";
      NIX_DONT_SET_RPATH = "1";
      variant = "torch211-cxx11-cu126-x86_64-linux";
      torch = "torch-2.11.0";
      torchCuda = "cudatoolkit-12.6";
      wheel = "https://download.pytorch.org/whl/cu126/torch-2.11.0%2Bcu126-cp313-cp313-manylinux_2_28_x86_64.whl";
      hash = "sha256-cuda";
    };
  };
  # A pinned dependency reaches the build as PYBUILD_DEP_<NAME> (names only: the values would fetch).
  testNixpkgsToolchainHandsInPinnedDependencies = {
    expr =
      let
        drv = stubbed.mkVariant (args cuda126 // { kernel = { name = "cutlass-kernel"; dir = ./fixtures/cutlass-kernel; }; });
      in
      builtins.filter (n: lib.hasPrefix "PYBUILD_DEP_" n) (builtins.attrNames drv.env);
    expected = [ "PYBUILD_DEP_CUTLASS_3_6" ];
  };
  testHostToolchainHandsInPinnedDependencies = {
    expr =
      let
        drv = host.mkVariant (args cuda126 // { kernel = { name = "cutlass-kernel"; dir = ./fixtures/cutlass-kernel; }; });
      in
      builtins.filter (n: lib.hasPrefix "PYBUILD_DEP_" n) (builtins.attrNames drv.drvAttrs);
    expected = [ "PYBUILD_DEP_CUTLASS_3_6" ];
  };
  testNixpkgsToolchainCpuVariantDropsCudaLibraries = {
    expr =
      let
        drv = stubbed.mkVariant (args cpu);
      in
      {
        inherit (drv) stdenv;
        torchBuildInputs = (torchOf drv).attrs.buildInputs;
      };
    expected = {
      stdenv = "default";
      torchBuildInputs = [ ];
    };
  };
  # A backend with no entry in `toolkits` fails with a catchable throw naming the file to add it to,
  # not Nix's own "attribute missing" error (which tryEval cannot catch: this test would abort).
  testNixpkgsToolchainRefusesABackendWithoutToolkit = {
    expr = (builtins.tryEval (stubbed.mkVariant (args (variant "vk" "1.3" "vk130"))).stdenv).success;
    expected = false;
  };
  testNixpkgsToolchainDevShell = {
    expr =
      let
        shell = stubbed.mkDevShell {
          variant = cuda126;
          pybuild = "/pybuild-source";
        };
      in
      {
        inherit (shell) name shell stdenv;
        tools = map (p: p.name) shell.packages;
      };
    expected = {
      name = "torch211-cxx11-cu126-x86_64-linux";
      shell = true;
      stdenv = "cuda-12.6";
      tools = [ "python3.13-env" "cmake" "ninja" "cudatoolkit-12.6" ];
    };
  };
}
