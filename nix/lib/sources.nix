{ lib }:
let
  inherit (lib) baseNameOf elem hasPrefix;

  # Build outputs and dev-loop leftovers: never part of a kernel's source.
  ignoredNames = [
    "build"
    ".pybuild"
    "result"
    "__pycache__"
    ".git"
    "compile_commands.json"
    # read when Nix evaluates (readKernel), not by a build: a matrix change that rewrites it
    # leaves the input of the variants already built unchanged
    "variants.lock.json"
  ];
in
rec {
  /**
    A kernel folder as a store path, without its build outputs (`build/`, `.pybuild/`,
    `result*`, `__pycache__`), so that rebuilding one variant does not change the input of the
    others. In a git flake untracked files are already left out; a `path:` flake needs this.

    # Inputs

    `kernel`
    : As returned by `readKernel`.

    # Type

    ```
    kernelSource :: Kernel -> StorePath
    ```

    # Examples

    ```nix
    kernelSource (readKernel ./kernels/img2gray)
    => /nix/store/<hash>-img2gray-source
    ```
  */
  kernelSource =
    kernel:
    builtins.path {
      path = kernel.dir;
      name = "${kernel.name}-source";
      filter = path: _type: isKernelSource (baseNameOf path);
    };

  /**
    Whether a file or folder of a kernel belongs to its source, by name: build outputs and
    dev-loop leftovers do not. The filter of `kernelSource`.

    # Inputs

    `name`
    : A file or folder name (not a path).

    # Type

    ```
    isKernelSource :: String -> Bool
    ```

    # Examples

    ```nix
    map isKernelSource [ "csrc" "build" ".pybuild" "result-2" ]
    => [ true false false false ]
    ```
  */
  isKernelSource = name: !(elem name ignoredNames || hasPrefix "result-" name);

  /**
    This library's own `pybuild` package as a store path that holds a `pybuild/` folder, ready to
    be put on `PYTHONPATH`: the build recipe of every variant and every dev shell's tools.

    # Type

    ```
    pybuildSource :: StorePath
    ```

    # Examples

    ```nix
    builtins.pathExists (pybuildSource + "/pybuild/__main__.py")
    => true
    ```
  */
  pybuildSource = builtins.path {
    path = ../..;
    name = "pybuild-source";
    filter = path: _type: isPybuildSource (lib.removePrefix (toString ../..) (toString path));
  };

  /**
    Whether a path below the farm root (written `/pybuild/...`) belongs to the `pybuild`
    package. The filter of `pybuildSource`.

    # Type

    ```
    isPybuildSource :: String -> Bool
    ```

    # Examples

    ```nix
    map isPybuildSource [ "/pybuild" "/pybuild/templates/_ops.py.j2" "/pybuild/__pycache__" "/nix" "/pybuild2" ]
    => [ true true false false false ]
    ```
  */
  isPybuildSource =
    relPath: (relPath == "/pybuild" || hasPrefix "/pybuild/" relPath) && baseNameOf relPath != "__pycache__";
}
