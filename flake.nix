{
  description = "Kernel build farm: every kernel under kernels/ for every variant of variants.json";

  # Prebuilt CUDA packages of nixpkgs (the CUDA team's cache); cache.nixos.org is always used.
  # Add your farm's own cache here once it exists (docs/nix.md: "A binary cache").
  nixConfig = {
    extra-substituters = [ "https://cache.nixos-cuda.org" ];
    extra-trusted-public-keys = [ "cache.nixos-cuda.org:74DUi4Ye579gUqzH4ziL9IyiJBlDpMRn9MBN8oNan9M=" ];
  };

  # Pinned in flake.lock to the revision hf-nix builds torch and CUDA 12.6 / 12.8 / 13.0 on.
  inputs.nixpkgs.url = "github:nixos/nixpkgs/nixos-unstable-small";

  outputs =
    { self, nixpkgs }:
    let
      farmLib = import ./nix/lib;
      # The library with this flake's pinned nixpkgs as the default toolchain. A kernel repository
      # calls `farm.lib.genFlakeOutputs { path = ./.; }`, as the guide's per-kernel flake does.
      lib = farmLib // {
        defaultToolchain = farmLib.nixpkgsToolchain { inherit nixpkgs; };
        genFlakeOutputs = args: farmLib.genFlakeOutputs ({ toolchain = lib.defaultToolchain; } // args);
      };
    in
    lib.genFlakeOutputs { path = ./.; } // { inherit lib; };
}
