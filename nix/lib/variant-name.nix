{ lib }:
let
  inherit (lib)
    backends
    backendTag
    compareLists
    concatStringsSep
    findFirst
    map
    optional
    replaceStrings
    splitString
    toInt
    ;

  versionList = v: map toInt (splitString "." v);

  # pybuild's sort key: torch, backend rank, backend version, C++ ABI, system.
  compareVariants =
    a: b:
    let
      steps = [
        (compareLists (versionList a.torch) (versionList b.torch))
        (compareLists [ backends.${a.backend}.rank ] [ backends.${b.backend}.rank ])
        (compareLists (if a.backendVersion == null then [ ] else versionList a.backendVersion) (
          if b.backendVersion == null then [ ] else versionList b.backendVersion
        ))
        (compareLists [ (if a.cxxAbi == null then "" else a.cxxAbi) ] [ (if b.cxxAbi == null then "" else b.cxxAbi) ])
        (compareLists [ a.system ] [ b.system ])
      ];
    in
    findFirst (c: c != 0) 0 steps;
in
{
  /**
    The name of a variant, exactly as the `kernels` loader parses it (and as pybuild writes it):
    torch version without the dot, C++ ABI (absent on darwin), backend tag, system.

    # Inputs

    `variant`
    : `{ torch, backend, backendVersion, cxxAbi, system }`; `backendVersion` and `cxxAbi` may be `null`.
    A stable-ABI variant also has `stableAbi = true` and `stableAbiTorch` (the torch whose stable ABI
    it targets, which its name carries instead of `torch` and the C++ ABI); a tvm-ffi variant
    `tvmFfi = true` and `tvmFfiVersion`.

    # Type

    ```
    variantName :: { torch :: String, backend :: String, backendVersion :: String | Null,
                     cxxAbi :: String | Null, system :: String, ... } -> String
    ```

    # Examples

    ```nix
    variantName { torch = "2.13"; backend = "cpu"; backendVersion = null; cxxAbi = "cxx11"; system = "x86_64-linux"; }
    => "torch213-cxx11-cpu-x86_64-linux"
    variantName { torch = "2.11"; backend = "cuda"; backendVersion = "12.6"; cxxAbi = "cxx11"; system = "x86_64-linux"; }
    => "torch211-cxx11-cu126-x86_64-linux"
    variantName { torch = "2.12"; backend = "metal"; backendVersion = null; cxxAbi = null; system = "aarch64-darwin"; }
    => "torch212-metal-aarch64-darwin"
    variantName { torch = "2.13"; stableAbi = true; stableAbiTorch = "2.11"; backend = "cuda"; backendVersion = "13.0"; cxxAbi = "cxx11"; system = "x86_64-linux"; }
    => "torch-stable-abi211-cu130-x86_64-linux"
    ```
  */
  variantName =
    variant:
    concatStringsSep "-" (
      (
        if variant.stableAbi or false then
          [ "torch-stable-abi${replaceStrings [ "." ] [ "" ] variant.stableAbiTorch}" ]
        else if variant.tvmFfi or false then
          [ "tvm-ffi${replaceStrings [ "." ] [ "" ] variant.tvmFfiVersion}" ]
        else
          [ "torch${replaceStrings [ "." ] [ "" ] variant.torch}" ] ++ optional (variant.cxxAbi != null) variant.cxxAbi
      )
      ++ [
        (backendTag variant)
        variant.system
      ]
    );

  /**
    Whether variant `a` sorts before variant `b` in the matrix order (torch, backend, backend
    version, C++ ABI, system), the order pybuild lists them in.

    # Type

    ```
    variantLessThan :: Variant -> Variant -> Bool
    ```

    # Examples

    ```nix
    variantLessThan { torch = "2.9"; backend = "cpu"; backendVersion = null; cxxAbi = "cxx11"; system = "x86_64-linux"; }
                    { torch = "2.10"; backend = "cuda"; backendVersion = "12.8"; cxxAbi = "cxx11"; system = "x86_64-linux"; }
    => true
    ```
  */
  variantLessThan = a: b: compareVariants a b < 0;
}
