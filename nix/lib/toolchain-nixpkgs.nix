{ lib }:
let
  inherit (lib)
    replaceStrings
    toJSON
    torchWheel
    torchWheelPins
    ;

  # What each backend adds to nixpkgs' stdenv: toolkit packages, the stdenv to compile with,
  # how torch's wheel is patched, and environment. Looked up by `variant.backend`, never branched on.
  toolkits = {
    cpu = pkgs: _version: {
      packages = [ ];
      inherit (pkgs) stdenv;
      # The CPU wheel needs none of the CUDA libraries torch-bin links by default.
      torchOverride = { };
      torchBuildInputs = _old: [ ];
      env = { };
    };
    cuda =
      pkgs: version:
      let
        attr = "cudaPackages_" + replaceStrings [ "." ] [ "_" ] version;
        cuda =
          pkgs.${attr}
            or (throw "nixpkgsToolchain: the pinned nixpkgs has no ${attr} for CUDA ${version}; pin a nixpkgs that has it or drop ${version} from variants.json");
      in
      {
        packages = [ cuda.cudatoolkit ];
        # nvcc accepts only some host compilers; nixpkgs pairs each CUDA release with one.
        stdenv = cuda.backendStdenv;
        torchOverride = {
          cudaPackages = cuda;
        };
        torchBuildInputs = old: old.buildInputs;
        env = {
          CUDA_HOME = "${cuda.cudatoolkit}";
          CUDAToolkit_ROOT = "${cuda.cudatoolkit}";
        };
      };
    rocm =
      pkgs: version:
      throw "nixpkgsToolchain: ROCm ${version} is not packaged by the pinned nixpkgs (rocmPackages is ${
        pkgs.rocmPackages.rocm-core.version or "absent"
      }); build ROCm variants in a ROCm container, or pass a toolchain that provides it";
    metal = _pkgs: _version: throw "nixpkgsToolchain: metal variants build on macOS with Xcode's Metal compiler, which nixpkgs does not provide";
    xpu = _pkgs: version: throw "nixpkgsToolchain: XPU ${version} (oneAPI) is not packaged by nixpkgs";
  };
in
{
  /**
    The default toolchain: nixpkgs' stdenv, CMake and ninja, the variant's CUDA toolkit from
    nixpkgs (`cudaPackages_<major>_<minor>`), and the variant's torch from PyTorch's official
    wheel (see `torchWheel`), installed with nixpkgs' own `torch-bin` recipe. Every variant
    builds in the sandbox with the one recipe, `build-variant.sh`.

    # Inputs

    `nixpkgs`
    : A nixpkgs source (the flake input). Imported once per system and backend.

    `pins`
    : Torch wheel pins. Default: `nix/torch-wheels.json`.

    `config`
    : Extra nixpkgs config. CUDA is unfree; `allowUnfree` is set.

    `overlays`
    : nixpkgs overlays, e.g. one that swaps in an old-glibc stdenv for manylinux_2_28 builds.

    # Type

    ```
    nixpkgsToolchain :: { nixpkgs :: Path, pins :: AttrSet?, config :: AttrSet?, overlays :: [Overlay]? } -> Toolchain
    ```

    # Examples

    ```nix
    (nixpkgsToolchain { nixpkgs = throw "not needed to name it"; }).name
    => "nixpkgs"
    ```
  */
  nixpkgsToolchain =
    {
      nixpkgs,
      pins ? torchWheelPins,
      config ? { },
      overlays ? [ ],
    }:
    let
      pkgsFor =
        system:
        import nixpkgs {
          inherit system overlays;
          config = {
            allowUnfree = true;
          }
          // config;
        };
      pythonAttr = "python" + replaceStrings [ "." ] [ "" ] pins.python;

      env =
        variant:
        let
          pkgs = pkgsFor variant.system;
          toolkit =
            toolkits.${variant.backend} or (throw
              "nixpkgsToolchain: no toolkit for backend ${variant.backend}; add a `${variant.backend}` entry to `toolkits` in nix/lib/toolchain-nixpkgs.nix"
            )
              pkgs
              variant.backendVersion;
          python = pkgs.${pythonAttr};
          wheel = torchWheel pins variant;
          torch = (python.pkgs.torch-bin.override toolkit.torchOverride).overridePythonAttrs (old: {
            inherit (wheel) version;
            src = pkgs.fetchurl { inherit (wheel) url hash name; };
            buildInputs = toolkit.torchBuildInputs old;
            # The wheel pins exact versions of triton and nvidia-* wheels; nixpkgs supplies its own.
            dontCheckRuntimeDeps = true;
          });
        in
        {
          inherit pkgs toolkit;
          python = python.withPackages (ps: [
            torch
            ps.jinja2
            ps.rich
            ps.pyelftools # pybuild reads the built library's ELF dynamic section
          ]);
        };
    in
    {
      name = "nixpkgs";

      # A kernel's lock, when the committed one is missing or stale (`lockedWith`): built for the
      # evaluating machine (pure evaluation has no currentSystem: x86_64-linux then).
      computeLock =
        { dir, variants }:
        let
          pkgs = pkgsFor (builtins.currentSystem or "x86_64-linux");
        in
        pkgs.runCommand "variants.lock.json" {
          python = "${pkgs.${pythonAttr}.withPackages (ps: [ ps.jinja2 ])}/bin/python3";
          pybuild = lib.pybuildSource;
          kernelSrc = lib.lockSource dir;
          variantsFile = variants;
        } lib.lockScript;
      nameSuffix = "";
      systems = null; # any
      supports = _variant: true;

      mkVariant =
        {
          kernel,
          variant,
          src,
          pybuild,
          variantsFile,
        }:
        let
          e = env variant;
        in
        e.toolkit.stdenv.mkDerivation {
          name = "${kernel.name}-${variant.name}";
          nativeBuildInputs = [
            e.python
            e.pkgs.cmake
            e.pkgs.ninja
          ]
          ++ e.toolkit.packages;
          env = e.toolkit.env // {
            python = "${e.python}/bin/python3";
            inherit pybuild variantsFile;
            kernelSrc = "${src}";
            variant = variant.name;
            # The extension must load wherever torch is installed: no RPATH into the store.
            # pybuild's CMake project installs without RPATH and refuses one that slipped in.
            NIX_DONT_SET_RPATH = "1";
          }
          // lib.dependencyEnv e.pkgs.fetchzip (lib.kernelPins kernel.dir variant.backend);
          # buildCommand skips the fixup phase: nothing strips or patches the files whose
          # digests metadata.json records.
          buildCommand = "source ${./build-variant.sh}";
          meta.description = "${kernel.name} built for ${variant.name}";
        };

      mkDevShell =
        { variant, pybuild }:
        let
          e = env variant;
        in
        (e.pkgs.mkShell.override { inherit (e.toolkit) stdenv; }) {
          name = variant.name;
          packages = [
            e.python
            e.pkgs.cmake
            e.pkgs.ninja
          ]
          ++ e.toolkit.packages;
          env = e.toolkit.env;
          shellHook = ''
            export PYTHONPATH="${pybuild}''${PYTHONPATH:+:$PYTHONPATH}"
            echo "dev shell ${variant.name}: python -m pybuild generate KERNEL_DIR, then pip install --no-build-isolation -e KERNEL_DIR" >&2
          '';
        };

      mkJoin =
        {
          name,
          system,
          entries,
        }:
        (pkgsFor system).linkFarm name entries;

      mkCheck =
        {
          name,
          system,
          failures,
        }:
        if failures == [ ] then
          (pkgsFor system).runCommand name { } "echo passed > $out"
        else
          throw "mkCheck: ${name} has failing tests ${toJSON failures}; run nix-instantiate --eval --strict nix/tests to see them";
    };
}
