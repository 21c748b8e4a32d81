# The farm's Nix library. `import ./nix/lib` gives every function as one flat set, like nixpkgs'
# `lib`; each file below takes `{ lib }` (this whole set) and adds one concern. Nothing here
# imports nixpkgs: evaluating the matrix and the flake's output names works offline.
#
# `withBackendFacts facts` is the same library over other backend facts (the shape of
# pybuild/backends/backends.json, e.g. with a backend registered in pybuild: `facts_json()`).
let
  prelude = import ./prelude.nix;
  files = [
    ./backends.nix
    ./deps.nix
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
  mkLib =
    backendFacts:
    let
      args = f: { inherit lib; } // (if f == ./backends.nix && backendFacts != null then { inherit backendFacts; } else { });
      lib = prelude // prelude.mergeAttrsList (map (f: import f (args f)) files) // { withBackendFacts = mkLib; };
    in
    lib;
in
mkLib null
