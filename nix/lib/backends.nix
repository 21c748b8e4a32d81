{
  lib,
  # The backends' static facts, as pybuild/backends/backends.json holds them (pybuild writes the same
  # shape for its registry, plugins included: `pybuild.backends.facts_json()`).
  backendFacts ? builtins.fromJSON (builtins.readFile ../../pybuild/backends/backends.json),
}:
let
  inherit (lib)
    concatStringsSep
    elemAt
    hasSuffix
    replaceStrings
    ;
  inherit (builtins)
    filter
    genList
    length
    listToAttrs
    ;
  entries = backendFacts.backends;
  wheelTagOf =
    format: version:
    if format == null then
      null
    else
      replaceStrings [ "{version}" "{nodots}" ] [
        (toString version)
        (replaceStrings [ "." ] [ "" ] (toString version))
      ] format;
  backendOf = rank: f: {
    name = f.name;
    value =
      {
        inherit rank;
        inherit (f) label compiled versioned;
        darwin = f.os == "darwin";
        noarchName = f."noarch-name";
        wheelTag = wheelTagOf f."wheel-tag";
      }
      // (if f.versioned then { tagPrefix = f.tag; } else { inherit (f) tag; });
  };
in
rec {
  # The facts this library was made with (what pybuild's lock hashes as its rules, with their version).
  inherit backendFacts;

  /**
    Every backend a variant can have, keyed by name: how a backend is written in a variant name and
    where it runs, read from `pybuild/backends/backends.json` (the file pybuild reads too).

    - `rank`: position in the matrix order (variants sort by torch, then backend rank).
    - `compiled`: its kernels are compiled; `false` for the backends of pure-Python kernels only.
    - `versioned`: the matrix lists toolkit versions (`"cuda": ["12.8"]`) rather than `true`.
    - `tagPrefix` / `tag`: the backend part of a variant name (`cu` + `128`, or `cpu`).
    - `darwin`: whether the backend exists on darwin only (metal) or on Linux only (the rest).
    - `noarchName`: a pure-Python variant is `torch-<noarchName>` (`npu` for `cann`).
    - `wheelTag`: the local version tag of PyTorch's official wheels (`+cu128`, `+rocm7.1`).

    # Examples

    ```nix
    backends.cuda.tagPrefix
    => "cu"
    ```
  */
  backends = listToAttrs (genList (i: backendOf i (elemAt entries i)) (length entries));

  /**
    The backend names in matrix order.

    # Type

    ```
    backendNames :: [String]
    ```

    # Examples

    ```nix
    backendNames
    => [ "cuda" "rocm" "cpu" "metal" "xpu" ]
    ```
  */
  backendNames = map (f: f.name) (filter (f: f.compiled) entries);

  /**
    The backends of pure-Python kernels: the matrix's, then those that exist only as noarch
    variants (pybuild's `NOARCH_BACKENDS`).

    # Type

    ```
    noarchBackendNames :: [String]
    ```

    # Examples

    ```nix
    noarchBackendNames
    => [ "cuda" "rocm" "cpu" "metal" "xpu" "neuron" "tpu" "cann" ]
    ```
  */
  noarchBackendNames = map (f: f.name) entries;

  /**
    The backend part of a variant name: the toolkit version without dots after the backend's
    prefix, or the bare backend for unversioned ones.

    # Inputs

    `variant`
    : An attribute set with `backend` and `backendVersion` (`null` when unversioned).

    # Type

    ```
    backendTag :: { backend :: String, backendVersion :: String | Null, ... } -> String
    ```

    # Examples

    ```nix
    backendTag { backend = "cuda"; backendVersion = "13.0"; }
    => "cu130"
    backendTag { backend = "rocm"; backendVersion = "7.1"; }
    => "rocm71"
    backendTag { backend = "cpu"; backendVersion = null; }
    => "cpu"
    ```
  */
  backendTag =
    { backend, backendVersion, ... }:
    let
      b = backends.${backend} or (throw "backendTag: unknown backend \"${backend}\"; use one of ${concatStringsSep ", " backendNames}");
    in
    if b.versioned then b.tagPrefix + replaceStrings [ "." ] [ "" ] backendVersion else b.tag;

  /**
    Whether `backend` exists on `system`: metal only on darwin, every other backend only on Linux.

    # Inputs

    `backend`
    : A key of `backends`.

    `system`
    : A Nix system string such as `"x86_64-linux"`.

    # Type

    ```
    backendRunsOn :: String -> String -> Bool
    ```

    # Examples

    ```nix
    backendRunsOn "metal" "aarch64-darwin"
    => true
    backendRunsOn "cuda" "aarch64-darwin"
    => false
    ```
  */
  backendRunsOn = backend: system: backends.${backend}.darwin == hasSuffix "-darwin" system;

  /**
    The CPU architecture of a Nix system string, as wheel tags and download URLs spell it.

    # Type

    ```
    systemArch :: String -> String
    ```

    # Examples

    ```nix
    systemArch "aarch64-linux"
    => "aarch64"
    ```
  */
  systemArch = system: elemAt (builtins.match "([^-]+)-.*" system) 0;
}
