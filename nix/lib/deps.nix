{
  lib,
  # The pins of the C++ dependencies a kernel section may name in `depends`, as
  # pybuild/deps/dependencies.json holds them (pybuild reads the same file).
  depsTable ? builtins.fromJSON (builtins.readFile ../../pybuild/deps/dependencies.json),
}:
let
  inherit (lib) concatMap filter unique;
  inherit (builtins)
    attrValues
    elem
    fetchTarball
    fromTOML
    listToAttrs
    readFile
    replaceStrings
    sort
    ;
  pins = depsTable.dependencies;
  upper = replaceStrings [ "a" "b" "c" "d" "e" "f" "g" "h" "i" "j" "k" "l" "m" "n" "o" "p" "q" "r" "s" "t" "u" "v" "w" "x" "y" "z" "-" ] [ "A" "B" "C" "D" "E" "F" "G" "H" "I" "J" "K" "L" "M" "N" "O" "P" "Q" "R" "S" "T" "U" "V" "W" "X" "Y" "Z" "_" ];
in
{
  /**
    The variable through which a pinned dependency's tree reaches pybuild's build
    (`PYBUILD_DEP_<NAME>`, the name upper-cased, `-` as `_`).

    # Type

    ```
    dependencyEnvVar :: String -> String
    ```

    # Examples

    ```nix
    dependencyEnvVar "metal-cpp"
    => "PYBUILD_DEP_METAL_CPP"
    ```
  */
  dependencyEnvVar = name: "PYBUILD_DEP_" + upper name;

  /**
    The pinned dependencies that the kernel sections of a build.toml compiled into variants of
    `backend` name in `depends` (once each, sorted); `torch` and the farm's own names are no pins.

    # Inputs

    `manifest`
    : The parsed build.toml (`fromTOML`).

    `backend`
    : A backend name, e.g. "cuda".

    # Type

    ```
    manifestPins :: AttrSet -> String -> [ String ]
    ```

    # Examples

    ```nix
    manifestPins { kernel.gemm = { backend = "cuda"; depends = [ "torch" "cutlass_3_6" ]; }; } "cuda"
    => [ "cutlass_3_6" ]
    ```
  */
  manifestPins =
    manifest: backend:
    let
      sections = filter (k: (k.backend or null) == backend) (attrValues (manifest.kernel or { }));
      names = concatMap (k: k.depends or [ ]) sections;
    in
    sort (a: b: a < b) (unique (filter (n: pins ? ${n} && pins.${n}.backend == backend) names));

  /**
    The build environment of a variant's pinned dependencies: `PYBUILD_DEP_<NAME>` set to the
    dependency's tag, fetched by `fetch { url; hash; }` with upstream kernel-builder's pinned hash of
    the whole tag (nixpkgs' `fetchzip`: at build time, sandboxed, substitutable; or
    `fetchPinnedTarball` where there is no nixpkgs). pybuild uses a tree handed in this way as it is.

    # Type

    ```
    dependencyEnv :: ({ url, hash } -> Path) -> [ String ] -> AttrSet
    ```

    # Examples

    ```nix
    dependencyEnv fetchPinnedTarball [ ]
    => { }
    ```
  */
  dependencyEnv =
    fetch: names:
    listToAttrs (
      map (n: {
        name = "PYBUILD_DEP_" + upper n;
        value = fetch {
          inherit (pins.${n}.source) url;
          hash = pins.${n}.source."nix-hash";
        };
      }) names
    );

  /**
    `builtins.fetchTarball` with a pinned hash, for toolchains without nixpkgs (it fetches when the
    derivation is evaluated).

    # Type

    ```
    fetchPinnedTarball :: { url, hash } -> Path
    ```
  */
  fetchPinnedTarball = { url, hash }: fetchTarball { inherit url; sha256 = hash; };

  /**
    `manifestPins` of the build.toml in the kernel folder `dir`.

    # Type

    ```
    kernelPins :: Path -> String -> [ String ]
    ```
  */
  kernelPins = dir: backend: lib.manifestPins (fromTOML (readFile (dir + "/build.toml"))) backend;

  /**
    Whether `name` is a pinned dependency.

    # Type

    ```
    isPinnedDependency :: String -> Bool
    ```

    # Examples

    ```nix
    isPinnedDependency "cutlass_4_0"
    => true
    ```
  */
  isPinnedDependency = name: elem name (builtins.attrNames pins);
}
