{ lib }:
let
  inherit (lib)
    attrNames
    backendNames
    backends
    noarchBackendNames
    compareLists
    elem
    filter
    fromTOML
    head
    isList
    isString
    listToAttrs
    map
    mapAttrsToList
    match
    nameValuePair
    pathExists
    readDir
    readFile
    replaceStrings
    sort
    toInt
    toJSON
    variantName
    ;

  # The tvm-ffi release line tvm-ffi kernels are built against (pybuild's TVM_FFI_VERSION).
  tvmFfiVersion = "0.1";

  version =
    file: section: key: value:
    let
      m = if isString value then match "([0-9]+)\\.([0-9]+)" value else null;
    in
    if value == null then
      null
    else if m == null then
      throw "readKernel: ${file}: `${key}` in ${section} must be \"major.minor\" like \"${
        if section == "[general.cuda]" then "12.8" else "2.12"
      }\"; found ${toJSON value}"
    else
      map toInt m;
in
{
  /**
    What the Nix side needs from a kernel's `build.toml`, in any edition pybuild reads (upstream's
    edition 5, its pre-edition v4 and v3, the farm's own format): its name, framework and the part
    of the matrix it builds for: the backends of its `[kernel.*]` sections narrowed by `[general]
    backends` (a pure-Python kernel: the listed backends, `neuron` and `tpu` included), the `[torch]`
    and `[general.cuda]` bounds, and `[torch.stable-abi]`. pybuild validates the rest when it builds.

    # Inputs

    `dir`
    : The kernel folder (holds `build.toml`).

    # Type

    ```
    readKernel :: Path -> { name, pythonName, framework, backends, torchMinver, torchMaxver, cudaMinver,
                            cudaMaxver, stableAbi, universal, noarch, dir }
    ```

    # Examples

    ```nix
    (readKernel ../../kernels/img2gray).backends
    => [ "cuda" "cpu" ]
    ```
  */
  readKernel =
    dir:
    let
      file = "${baseNameOf (toString dir)}/build.toml";
      toml = fromTOML (readFile (dir + "/build.toml"));
      general = toml.general or (throw "readKernel: ${file}: missing [general] table; add it with name = \"...\"");
      name =
        if isString (general.name or null) then
          general.name
        else
          throw "readKernel: ${file}: missing `name` in [general]; add it, e.g. name = \"img2gray\"";
      universal = general.universal or false;
      kernelSections = toml.kernel or { };
      # [torch-noarch], or (older formats) no [kernel.*] section and no compiled [torch]/[tvm-ffi].
      framework =
        if toml ? "torch-noarch" then
          "torch-noarch"
        else if toml ? "tvm-ffi" then
          "tvm-ffi"
        else if kernelSections == { } && (toml.torch.src or [ ]) == [ ] then
          "torch-noarch"
        else
          "torch";
      noarch = framework == "torch-noarch";
      sections = mapAttrsToList (_: section: section.backend or null) kernelSections;
      listed = general.backends or null;
      known = if noarch then noarchBackendNames else backendNames;
      unknown = filter (b: !(elem b noarchBackendNames)) (if isList listed then listed else [ ]);
      found = if noarch then noarchBackendNames else filter (b: elem b sections) backendNames;
      narrowed =
        if listed != null && !(isList listed) then
          throw "readKernel: ${file}: `backends` in [general] must be a list like [\"cuda\", \"cpu\"]"
        else if unknown != [ ] then
          throw "readKernel: ${file}: `backends` in [general] names unknown backend ${toJSON (head unknown)}; known: ${toJSON noarchBackendNames}"
        else if noarch && (listed == null || listed == [ ]) then
          throw "readKernel: ${file}: no [kernel.<name>] section and no `backends` in [general]; a pure-Python kernel lists them, e.g. backends = [\"cuda\", \"cpu\"]"
        else if listed != null then
          filter (b: elem b listed && elem b known) found
        else
          found;
      backends' = if universal then [ ] else narrowed;
      stable = toml.torch."stable-abi" or null;
      stableAbi =
        if stable == null then
          { }
        else if isString stable then
          listToAttrs (map (b: nameValuePair b (version file "[torch]" "stable-abi" stable)) backends')
        else
          listToAttrs (
            map (b: nameValuePair b (version file "[torch.stable-abi]" b stable.${b})) (filter (b: stable ? ${b}) backends')
          );
    in
    {
      inherit
        dir
        name
        universal
        noarch
        framework
        stableAbi
        ;
      pythonName = replaceStrings [ "-" ] [ "_" ] name;
      backends = backends';
      torchMinver = version file "[torch]" "minver" (toml.torch.minver or null);
      torchMaxver = version file "[torch]" "maxver" (toml.torch.maxver or null);
      cudaMinver = version file "[general.cuda]" "minver" (general.cuda.minver or null);
      cudaMaxver = version file "[general.cuda]" "maxver" (general.cuda.maxver or null);
    };

  /**
    Whether a kernel builds for a variant of the matrix: its backend is one of the kernel's, its
    torch version lies within the kernel's `[torch]` bounds and its CUDA version within
    `[general.cuda]`'s. Same rule as pybuild's `Manifest.accepts`. A pure-Python (`noarch`) kernel
    builds no matrix variant (see `noarchVariants`), a stable-ABI backend only its stable-ABI
    variants (see `kernelVariants`).

    # Inputs

    `kernel`
    : As returned by `readKernel`.

    `variant`
    : A variant from `expandMatrix`.

    # Type

    ```
    kernelAccepts :: Kernel -> Variant -> Bool
    ```

    # Examples

    ```nix
    kernelAccepts { backends = [ "cpu" ]; torchMinver = [ 2 12 ]; torchMaxver = null; }
                  { torch = "2.11"; backend = "cpu"; }
    => false
    ```
  */
  kernelAccepts =
    kernel: variant:
    let
      t = map toInt (lib.splitString "." variant.torch);
      cu = map toInt (lib.splitString "." variant.backendVersion);
      stable = (kernel.stableAbi or { }) ? ${variant.backend};
      inCuda =
        variant.backend != "cuda"
        || (variant.backendVersion or null) == null
        || (kernel.cudaMinver or null == null || compareLists cu kernel.cudaMinver >= 0)
          && (kernel.cudaMaxver or null == null || compareLists cu kernel.cudaMaxver <= 0);
    in
    !(kernel.noarch or false)
    && elem variant.backend kernel.backends
    && inCuda
    && (variant.tvmFfi or false) == ((kernel.framework or "torch") == "tvm-ffi")
    && (
      if variant.tvmFfi or false then
        variant.tvmFfiVersion == tvmFfiVersion
      else if stable || (variant.stableAbi or false) then
        (variant.stableAbi or false)
        && stable
        && map toInt (lib.splitString "." variant.stableAbiTorch) == kernel.stableAbi.${variant.backend}
      else
        (kernel.torchMinver == null || compareLists t kernel.torchMinver >= 0)
        && (kernel.torchMaxver == null || compareLists t kernel.torchMaxver <= 0)
    );

  /**
    The variants a kernel builds from the matrix, in matrix order, as pybuild's
    `Manifest.variants`: the matrix variants it accepts; for a `[torch.stable-abi]` backend one
    `torch-stable-abi<XY>-<backend>-<system>` variant per backend version and system; for a
    `[tvm-ffi]` kernel one `tvm-ffi<XY>-<backend>-<system>` per backend version and system; for a
    pure-Python kernel one `torch-<backend>` per backend (`torch-npu` for `cann`, as the loader
    names it).

    # Inputs

    `kernel`
    : As returned by `readKernel`.

    `matrix`
    : The variants from `expandMatrix`.

    # Type

    ```
    kernelVariants :: Kernel -> [Variant] -> [Variant]
    ```

    # Examples

    ```nix
    map (v: v.name) (kernelVariants { noarch = true; backends = [ "cuda" "cann" ]; } [ ])
    => [ "torch-cuda" "torch-npu" ]
    ```
  */
  kernelVariants =
    kernel: matrix:
    let
      # A stable-ABI backend: every matrix variant of it with a torch at least that version becomes
      # the stable-ABI variant of its backend version and system, built with that torch.
      toTvmFfi =
        v:
        let
          tv = v // {
            tvmFfi = true;
            inherit tvmFfiVersion;
          };
        in
        tv // { name = variantName tv; };
      toStable =
        v:
        let
          ver = (kernel.stableAbi or { }).${v.backend} or null;
          sv = v // {
            stableAbi = true;
            stableAbiTorch = "${toString (head ver)}.${toString (lib.elemAt ver 1)}";
          };
        in
        if ver == null then
          [ v ]
        else if compareLists (map toInt (lib.splitString "." v.torch)) ver < 0 then
          [ ]
        else
          [ (sv // { name = variantName sv; }) ];
      framed = if (kernel.framework or "torch") == "tvm-ffi" then map toTvmFfi matrix else lib.concatMap toStable matrix;
      candidates = filter (lib.kernelAccepts kernel) framed;
      names = lib.unique (map (v: v.name) candidates);
      # one per name, in the order of its first appearance, built with the newest torch offering it
      newest = name: lib.last (filter (v: v.name == name) candidates);
    in
    if kernel.noarch or false then
      map (b: {
        backend = b;
        name = "torch-${backends.${b}.noarchName}";
      }) kernel.backends
    else
      map newest names;

  /**
    The kernels under a path: the folder itself when it holds a `build.toml` (a kernel
    repository, as the guide's per-kernel flake has), else every `kernels/<name>/build.toml`
    (this farm), sorted by folder name.

    # Inputs

    `path`
    : A kernel folder or a farm root.

    # Type

    ```
    findKernels :: Path -> [Kernel]
    ```

    # Examples

    ```nix
    map (k: k.name) (findKernels ../..)
    => [ "img2gray" ]
    ```
  */
  findKernels =
    path:
    let
      root = path + "/kernels";
      entries = if pathExists root then readDir root else { };
      dirs = filter (n: entries.${n} == "directory" && pathExists (root + "/${n}/build.toml")) (attrNames entries);
    in
    if pathExists (path + "/build.toml") then
      [ (lib.readKernel path) ]
    else
      map (n: lib.readKernel (root + "/${n}")) (sort (a: b: a < b) dirs);
}
