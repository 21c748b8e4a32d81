{ lib }:
let
  inherit (lib)
    attrNames
    backendNames
    compareLists
    elem
    filter
    fromTOML
    head
    isList
    isString
    map
    mapAttrsToList
    match
    pathExists
    readDir
    readFile
    replaceStrings
    sort
    toInt
    toJSON
    ;

  torchBound =
    file: key: value:
    let
      m = if isString value then match "([0-9])\\.([0-9]+)" value else null;
    in
    if value == null then
      null
    else if m == null then
      throw "readKernel: ${file}: `${key}` in [torch] must be \"major.minor\" like \"2.12\"; found ${toJSON value}"
    else
      map toInt m;
in
{
  /**
    What the Nix side needs from a kernel's `build.toml`: its name and the part of the matrix it
    builds for (backends of its `[kernel.*]` sections, narrowed by `[general] backends` and the
    `[torch]` bounds). pybuild validates the rest of the manifest when it builds.

    # Inputs

    `dir`
    : The kernel folder (holds `build.toml`).

    # Type

    ```
    readKernel :: Path -> { name, pythonName, backends, torchMinver, torchMaxver, universal, noarch, dir }
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
      # No [kernel.*] section: a pure-Python kernel, one noarch `torch-<backend>` variant per listed backend.
      noarch = (toml.kernel or { }) == { };
      sections = mapAttrsToList (_: section: section.backend or null) (toml.kernel or { });
      listed = general.backends or null;
      unknown = filter (b: !(elem b backendNames)) (if isList listed then listed else [ ]);
      found = if noarch then backendNames else filter (b: elem b sections) backendNames;
      narrowed =
        if listed != null && !(isList listed) then
          throw "readKernel: ${file}: `backends` in [general] must be a list like [\"cuda\", \"cpu\"]"
        else if unknown != [ ] then
          throw "readKernel: ${file}: `backends` in [general] names unknown backend ${toJSON (head unknown)}; known: ${toJSON backendNames}"
        else if noarch && (listed == null || listed == [ ]) then
          throw "readKernel: ${file}: no [kernel.<name>] section and no `backends` in [general]; a pure-Python kernel lists them, e.g. backends = [\"cuda\", \"cpu\"]"
        else if listed != null then
          filter (b: elem b listed) found
        else
          found;
    in
    {
      inherit dir name universal noarch;
      pythonName = replaceStrings [ "-" ] [ "_" ] name;
      backends = if universal then [ ] else narrowed;
      torchMinver = torchBound file "minver" (toml.torch.minver or null);
      torchMaxver = torchBound file "maxver" (toml.torch.maxver or null);
    };

  /**
    Whether a kernel builds for a variant of the matrix: its backend is one of the kernel's and its
    torch version lies within the kernel's `[torch]` bounds. Same rule as pybuild's `Manifest.accepts`.
    A pure-Python (`noarch`) kernel builds no matrix variant (see `noarchVariants`).

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
    in
    !(kernel.noarch or false)
    && elem variant.backend kernel.backends
    && (kernel.torchMinver == null || compareLists t kernel.torchMinver >= 0)
    && (kernel.torchMaxver == null || compareLists t kernel.torchMaxver <= 0);

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
