# The Nix library's tests: `nix-instantiate --eval --strict nix/tests` prints [ ] when all pass,
# else one { name; expected; result; } per failing test. Also the flake's checks.<system>.
let
  lib = import ../lib;
in
lib.runTests (
  lib.mergeAttrsList (
    map (f: import f { inherit lib; }) [
      ./prelude.nix
      ./backends.nix
      ./deps.nix
      ./lazy-derivation.nix
      ./variants.nix
      ./kernels.nix
      ./sources.nix
      ./torch-wheels.nix
      ./toolchains.nix
      ./gen-flake-outputs.nix
    ]
  )
)
