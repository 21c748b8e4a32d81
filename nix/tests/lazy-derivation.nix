{ lib }:
let
  inherit (lib) lazyDerivation;
  real = builtins.derivation {
    name = "real-name-1.0";
    system = "x86_64-linux";
    builder = "/bin/sh";
  };
in
{
  testLazyDerivationNameWithoutEvaluating = {
    expr = (lazyDerivation {
      name = "x";
      derivation = throw "not evaluated";
    }).name;
    expected = "x";
  };
  testLazyDerivationIsADerivation = {
    expr = (lazyDerivation {
      name = "x";
      derivation = throw "not evaluated";
    }).type;
    expected = "derivation";
  };
  testLazyDerivationBuildsTheRealOne = {
    expr =
      let
        lazy = lazyDerivation {
          name = "shown-name";
          derivation = real;
        };
      in
      [
        (lazy.drvPath == real.drvPath)
        (lazy.outPath == real.outPath)
        ("${lazy}" == "${real}")
      ];
    expected = [ true true true ];
  };
}
