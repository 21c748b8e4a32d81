{ lib }:
let
  inherit (lib)
    attrNames
    concatStringsSep
    elemAt
    hasSuffix
    replaceStrings
    ;
in
rec {
  /**
    Every backend a variant can have, keyed by name: the one place that says how a backend is
    written in a variant name and where it runs. pybuild's `variants.py` holds the same facts.

    - `rank`: position in the matrix order (variants sort by torch, then backend rank).
    - `versioned`: the matrix lists toolkit versions (`"cuda": ["12.8"]`) rather than `true`.
    - `tagPrefix` / `tag`: the backend part of a variant name (`cu` + `128`, or `cpu`).
    - `darwin`: whether the backend exists on darwin only (metal) or on Linux only (the rest).
    - `wheelTag`: the local version tag of PyTorch's official wheels (`+cu128`, `+rocm7.1`).

    # Examples

    ```nix
    backends.cuda.tagPrefix
    => "cu"
    ```
  */
  backends = {
    cuda = {
      rank = 0;
      versioned = true;
      tagPrefix = "cu";
      darwin = false;
      wheelTag = version: "cu" + replaceStrings [ "." ] [ "" ] version;
    };
    rocm = {
      rank = 1;
      versioned = true;
      tagPrefix = "rocm";
      darwin = false;
      wheelTag = version: "rocm" + version;
    };
    cpu = {
      rank = 2;
      versioned = false;
      tag = "cpu";
      darwin = false;
      wheelTag = _: "cpu";
    };
    metal = {
      rank = 3;
      versioned = false;
      tag = "metal";
      darwin = true;
      wheelTag = _: null;
    };
    xpu = {
      rank = 4;
      versioned = true;
      tagPrefix = "xpu";
      darwin = false;
      wheelTag = _: "xpu";
    };
  };

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
  backendNames =
    let
      names = attrNames backends;
    in
    builtins.sort (a: b: backends.${a}.rank < backends.${b}.rank) names;

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
  noarchBackendNames = lib.backendNames ++ [
    "neuron"
    "tpu"
    "cann"
  ];

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
