{ lib }:
{
  /**
    A derivation whose `name` and `type` are known without evaluating it. `nix flake show`
    reads only those two attributes, so outputs wrapped this way list offline even when building
    them needs nixpkgs; `nix build` and `nix develop` use `drvPath`, which forces the real one.
    Modelled on nixpkgs' `lib.lazyDerivation`, which cannot give `name` without forcing.

    # Inputs

    `name`
    : The name to show (the real derivation's name may differ, e.g. carry a version).

    `derivation`
    : The derivation, evaluated only when a build needs it.

    `meta`
    : Optional; shown by `nix flake show --json` and `nix search`.

    # Type

    ```
    lazyDerivation :: { name :: String, derivation :: Derivation, meta :: AttrSet? } -> Derivation
    ```

    # Examples

    ```nix
    (lazyDerivation { name = "x"; derivation = throw "not evaluated"; }).name
    => "x"
    ```
  */
  lazyDerivation =
    {
      name,
      derivation,
      meta ? { },
    }:
    {
      type = "derivation";
      inherit name meta;
      inherit (derivation) drvPath outPath system;
      outputName = "out";
      outputs = [ "out" ];
      out = derivation;
      drvAttrs = derivation.drvAttrs or { };
      passthru = derivation.passthru or { };
    };
}
