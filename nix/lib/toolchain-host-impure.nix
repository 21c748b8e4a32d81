{ lib }:
let
  inherit (lib)
    concatStringsSep
    elem
    mapAttrsToList
    toJSON
    ;
in
{
  /**
    An IMPURE toolchain: builds with this machine's own Python, torch, CMake, ninja and
    compilers, found through absolute paths outside the Nix store. For machines where nixpkgs
    cannot be fetched, to exercise `nix build` end to end; never for releases (the output depends
    on whatever the host has installed, and its glibc decides manylinux compliance).

    Its derivations run outside the sandbox (`__noChroot`; needs `sandbox = false` or `relaxed`),
    are never substituted or sent to remote builders, and carry `-impure-host` in their names.

    # Inputs

    `variants`
    : Names of the variants this host can build (what `python -m pybuild variants` marks as host);
      every other variant is left out of the flake outputs.

    `system`
    : The host's Nix system. Default `"x86_64-linux"`.

    `python`
    : Interpreter with torch installed. Default `"/usr/bin/python3"`.

    `path`
    : Directories for `PATH` (cmake, ninja, c++, coreutils). Default `/usr/local/bin`, `/usr/bin`, `/bin`.

    # Type

    ```
    hostToolchainImpure :: { variants :: [String], system :: String?, python :: String?, path :: [String]? } -> Toolchain
    ```

    # Examples

    ```nix
    (hostToolchainImpure { variants = [ "torch213-cxx11-cpu-x86_64-linux" ]; }).name
    => "host-impure"
    ```
  */
  hostToolchainImpure =
    {
      variants,
      system ? "x86_64-linux",
      python ? "/usr/bin/python3",
      path ? [
        "/usr/local/bin"
        "/usr/bin"
        "/bin"
      ],
    }:
    let
      mk =
        name: attrs:
        builtins.derivation (
          {
            inherit name system;
            builder = "/bin/bash";
            outputs = [ "out" ]; # `nix develop` writes the environment to the outputs it finds listed
            PATH = concatStringsSep ":" path;
            __noChroot = true;
            preferLocalBuild = true;
            allowSubstitutes = false;
          }
          // attrs
        );
      # A builder that runs a short script: it stops at the first failing command, and holds the
      # log a moment at the end (lib.holdLog) so that Nix does not report it killed.
      quick =
        name: script: attrs:
        mk name (
          {
            args = [
              "-c"
              "set -e\n${script}\n${lib.holdLog}"
            ];
          }
          // attrs
        );
    in
    {
      name = "host-impure";
      nameSuffix = "-impure-host";
      systems = [ system ];
      supports = variant: variant.system == system && elem variant.name variants;

      mkVariant =
        {
          kernel,
          variant,
          src,
          pybuild,
          variantsFile,
        }:
        mk "${kernel.name}-${variant.name}-impure-host" (
          {
            args = [ ./build-variant.sh ];
            inherit python pybuild variantsFile;
            kernelSrc = src;
            variant = variant.name;
          }
          // lib.dependencyEnv lib.fetchPinnedTarball (lib.kernelPins kernel.dir variant.backend)
        );

      # A kernel's lock, when the committed one is missing or stale (`lockedWith`).
      computeLock =
        { dir, variants }:
        mk "variants.lock.json-impure-host" {
          args = [
            "-c"
            lib.lockScript
          ];
          inherit python;
          pybuild = lib.pybuildSource;
          kernelSrc = lib.lockSource dir;
          variantsFile = variants;
        };

      # `nix develop` runs this builder with its own script; a plain build just records the setup.
      mkDevShell =
        { variant, pybuild }:
        quick "${variant.name}-impure-host" "echo \"$variant: $python with pybuild from $PYTHONPATH\" > $out" {
          variant = variant.name;
          inherit python;
          PYTHONPATH = pybuild;
          shellHook = ''
            export PATH="${builtins.dirOf python}:$PATH"
            echo "dev shell ${variant.name} (impure: the host's torch and compilers)" >&2
          '';
        };

      mkJoin =
        { name, entries, ... }:
        quick "${name}-impure-host" (concatStringsSep "\n" (
          [ "mkdir -p $out" ] ++ mapAttrsToList (n: p: "ln -s ${p} $out/${n}") entries
        )) { };

      mkCheck =
        { name, failures, ... }:
        if failures == [ ] then
          quick "${name}-impure-host" "echo passed > $out" { }
        else
          throw "mkCheck: ${name} has failing tests ${toJSON failures}; run nix-instantiate --eval --strict nix/tests to see them";
    };
}
