# The farm's Nix library. `import ./nix/lib` gives every function as one flat set, like nixpkgs'
# `lib`; each file below takes `{ lib }` (this whole set) and adds one concern. Nothing here
# imports nixpkgs: evaluating the matrix and the flake's output names works offline.
let
  prelude = import ./prelude.nix;
  files = [
    ./backends.nix
    ./variant-name.nix
    ./variants.nix
    ./kernels.nix
    ./sources.nix
    ./lazy-derivation.nix
    ./torch-wheels.nix
    ./toolchain-nixpkgs.nix
    ./toolchain-host-impure.nix
    ./gen-flake-outputs.nix
  ];
  lib = prelude // prelude.mergeAttrsList (map (f: import f { inherit lib; }) files);
in
lib
