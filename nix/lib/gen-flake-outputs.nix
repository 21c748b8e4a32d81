{ lib }:
let
  inherit (lib)
    concatMap
    elem
    filter
    findKernels
    genAttrs
    kernelVariants
    kernelSource
    last
    lazyDerivation
    lockedFor
    listToAttrs
    map
    mapAttrsToList
    mergeAttrsList
    nameValuePair
    optionalAttrs
    pathExists
    pybuildSource
    readMatrix
    unique
    ;
in
{
  /**
    The flake outputs of a farm (`kernels/<name>/build.toml`) or of one kernel repository
    (`build.toml` at `path`), for every variant of `variants.json` each kernel builds for.

    - `packages.<system>.<kernel>`: all its variants joined, `result/<variant>/...`;
      `<kernel>-<system>`: that system's variants only; `<kernel>-<variant>`: one variant;
      `default`: every kernel (`result/<variant>/` for one kernel, `result/<kernel>/<variant>/` for several).
      A variant builds on a machine of its own system: local, or a remote builder.
      A pure-Python kernel (no `[kernel.*]` section) has the noarch variants `torch-<backend>` of
      its `[general] backends` instead, on every system (`<kernel>-torch-cuda`, ...).
    - `devShells.<system>.<variant>`: that variant's torch, compilers, CMake, ninja and pybuild;
      also reachable as `.#devShells.<variant>` (through `legacyPackages.<system>.devShells`);
      `default`: the newest torch's CPU variant.
    - `checks.<system>.nix-lib-tests`: this library's tests.

    Every output's name is known without evaluating the toolchain, so `nix flake show` lists
    them offline; only building needs nixpkgs.

    # Inputs

    `path`
    : The farm root or the kernel folder (`./.` in its flake).

    `toolchain`
    : What builds a variant: `nixpkgsToolchain { nixpkgs; }` (the farm flake's default) or
      `hostToolchainImpure { ... }`.

    `variants`
    : The matrix file. Default: `path/variants.json` if present, else the farm's.

    `systems`
    : Systems to make outputs for. Default: the matrix's systems (those the toolchain runs on).

    `self`, `rev`
    : Accepted for the guide's per-kernel flake; unused (a build's op namespace comes from its
      source hash, not the git revision).

    # Type

    ```
    genFlakeOutputs :: { path :: Path, toolchain :: Toolchain, variants :: Path?, systems :: [String]?, ... } -> AttrSet
    ```

    # Examples

    ```nix
    builtins.attrNames (genFlakeOutputs { path = ./kernels/img2gray; toolchain = hostToolchainImpure { variants = [ ]; }; })
    => [ "checks" "devShells" "legacyPackages" "packages" ]
    ```
  */
  genFlakeOutputs =
    {
      path,
      toolchain ? throw "genFlakeOutputs: no toolchain given; use the farm flake's lib.genFlakeOutputs (nixpkgs toolchain) or pass toolchain = lib.hostToolchainImpure { variants = [ ... ]; }",
      variants ? (if pathExists (path + "/variants.json") then path + "/variants.json" else ../../variants.json),
      systems ? null,
      self ? null,
      rev ? null,
    }:
    let
      matrix = readMatrix variants;
      found = map (lockedFor variants) (findKernels path);
      kernels =
        if found == [ ] then
          throw "genFlakeOutputs: no build.toml at ${toString path} and none under its kernels/<name>/; pass the kernel folder, e.g. path = ./.;"
        else
          found;
      variantsFile = builtins.path {
        path = variants;
        name = "variants.json";
      };
      pybuild = pybuildSource;
      suffix = toolchain.nameSuffix;

      # Per kernel: the variants it builds with this toolchain, and one derivation per variant.
      builds = map (
        kernel:
        let
          vs = filter toolchain.supports (if kernel.noarch then [ ] else kernelVariants kernel matrix);
          src = kernelSource kernel;
        in
        {
          inherit kernel src;
          variants = vs;
          drvs = listToAttrs (
            map (
              variant:
              nameValuePair variant.name (toolchain.mkVariant {
                inherit
                  kernel
                  variant
                  src
                  pybuild
                  variantsFile
                  ;
              })
            ) vs
          );
        }
      ) kernels;

      matrixSystems = unique (map (v: v.system) matrix);
      outSystems = filter (s: toolchain.systems == null || elem s toolchain.systems) (
        if systems == null then matrixSystems else systems
      );

      # A tree of symlinks `<entry>` -> path; what `nix build` leaves in `result/`.
      join =
        system: name: entries:
        lazyDerivation {
          name = name + suffix;
          derivation = toolchain.mkJoin { inherit name system entries; };
        };
      variantEntries = drvs: lib.mapAttrs (v: drv: "${drv}/${v}") drvs;

      # A pure-Python kernel's `torch-<backend>` variants hold no binary: on each system, pybuild
      # assembles them in the environment of that system's newest CPU variant (any would do).
      noarchCarrier =
        system:
        let
          here = filter (v: v.system == system && toolchain.supports v) matrix;
          cpu = filter (v: v.backend == "cpu") here;
        in
        if here == [ ] then null else last (if cpu != [ ] then cpu else here);
      anyNoarch = builtins.any (b: b.kernel.noarch && b.kernel.backends != [ ]) builds;

      noarchDrvs =
        system: b:
        let
          carrier = noarchCarrier system;
        in
        optionalAttrs (carrier != null) (
          listToAttrs (
            map (
              noarch:
              let
                variant = carrier // {
                  inherit (noarch) name;
                };
              in
              nameValuePair variant.name (toolchain.mkVariant {
                inherit (b) kernel src;
                inherit variant pybuild variantsFile;
              })
            ) (kernelVariants b.kernel [ ])
          )
        );

      noarchPackages =
        system: b:
        let
          k = b.kernel.name;
          drvs = noarchDrvs system b;
          single = mapAttrsToList (
            v: drv:
            nameValuePair "${k}-${v}" (lazyDerivation {
              name = "${k}-${v}${suffix}";
              derivation = drv;
            })
          ) drvs;
        in
        optionalAttrs (drvs != { }) (
          listToAttrs single
          // {
            ${k} = join system k (variantEntries drvs);
            "${k}-${system}" = join system "${k}-${system}" (variantEntries drvs);
          }
        );

      archPackages =
        system: b:
        let
          k = b.kernel.name;
          drvsOf = vs: listToAttrs (map (v: nameValuePair v.name b.drvs.${v.name}) vs);
          single = map (
            v:
            nameValuePair "${k}-${v.name}" (lazyDerivation {
              name = "${k}-${v.name}${suffix}";
              derivation = b.drvs.${v.name};
            })
          ) b.variants;
          perSystem = concatMap (
            s:
            let
              vs = filter (v: v.system == s) b.variants;
            in
            lib.optional (vs != [ ]) (nameValuePair "${k}-${s}" (join system "${k}-${s}" (variantEntries (drvsOf vs))))
          ) matrixSystems;
        in
        listToAttrs (single ++ perSystem) // optionalAttrs (b.variants != [ ]) { ${k} = join system k (variantEntries b.drvs); };

      kernelPackages = system: b: (if b.kernel.noarch then noarchPackages else archPackages) system b;

      packagesFor =
        system:
        let
          perKernel = mergeAttrsList (map (kernelPackages system) builds);
          nonEmpty = filter (b: perKernel ? ${b.kernel.name}) builds;
          default =
            if builtins.length nonEmpty == 1 then
              perKernel.${(builtins.head nonEmpty).kernel.name}
            else
              join system "kernels" (
                listToAttrs (map (b: nameValuePair b.kernel.name "${perKernel.${b.kernel.name}}") nonEmpty)
              );
        in
        perKernel // optionalAttrs (nonEmpty != [ ]) { inherit default; };

      devShellsFor =
        system:
        let
          # the variants built here, and the environment pure-Python kernels are assembled in
          vs = filter (
            v: v.system == system && (builtins.any (b: elem v b.variants) builds || anyNoarch && v == noarchCarrier system)
          ) matrix;
          shells = listToAttrs (
            map (
              variant:
              nameValuePair variant.name (lazyDerivation {
                name = variant.name + suffix;
                derivation = toolchain.mkDevShell { inherit variant pybuild; };
              })
            ) vs
          );
          cpu = filter (v: v.backend == "cpu") vs;
        in
        shells // optionalAttrs (vs != [ ]) { default = shells.${(last (if cpu != [ ] then cpu else vs)).name}; };

      checksFor = system: {
        nix-lib-tests = lazyDerivation {
          name = "nix-lib-tests" + suffix;
          derivation = toolchain.mkCheck {
            name = "nix-lib-tests";
            inherit system;
            failures = import ../tests;
          };
        };
      };

      perSystem = f: genAttrs outSystems f;
      devShells = perSystem devShellsFor;
    in
    {
      packages = perSystem packagesFor;
      inherit devShells;
      # `nix develop .#devShells.<variant>` (the guide's spelling) is looked up as
      # legacyPackages.<system>.devShells.<variant>; `nix flake show` does not list these twice.
      legacyPackages = perSystem (system: {
        devShells = devShells.${system};
      });
      checks = perSystem checksFor;
    };
}
