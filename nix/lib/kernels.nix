{ lib }:
let
  inherit (lib)
    attrNames
    concatStringsSep
    filter
    fromJSON
    listToAttrs
    map
    nameValuePair
    pathExists
    readDir
    readFile
    replaceStrings
    sort
    variantName
    ;
  inherit (builtins) fromTOML hashString removeAttrs toJSON;
  lockCommand = "python -m pybuild lock";
  # pybuild's RULES_VERSION (pybuild/manifest/lock.py); a test keeps the two equal.
  lockRules = 1;
  lockPath = dir: dir + "/variants.lock.json";
  # The committed lock, or null when there is none. A lock with merge-conflict markers is refused by
  # name here: Nix's fromJSON error (which tryEval cannot catch) names no file.
  readLockFile =
    dir:
    let
      text = readFile (lockPath dir);
    in
    if !(pathExists (lockPath dir)) then
      null
    else if builtins.length (builtins.split "\n(<<<<<<<|=======|>>>>>>>)" "\n${text}") > 1 then
      throw "readKernel: ${toString (lockPath dir)}: has merge-conflict markers; run `${lockCommand} ${toString dir}` to write it again and commit the file"
    else
      fromJSON text;
  # Written from this build.toml by these rules, and not edited since: its content hash covers
  # everything else it says (name, backends, variants), so a hand-edited lock is stale.
  lockFitsKernel =
    dir: lock:
    lock."build-toml-json-sha256" or null == lib.buildTomlHash dir
    && lock."rules-sha256" or null == lib.lockRulesHash
    && lock."content-sha256" or null == hashString "sha256" (toJSON (removeAttrs lock [ "content-sha256" ]));
  kernelOfLock = dir: lock: {
    inherit dir lock;
    inherit (lock) name framework backends;
    noarch = lock.framework == "torch-noarch";
    universal = false;
    pythonName = replaceStrings [ "-" ] [ "_" ] lock.name;
  };
in
{
  /**
    What the Nix side needs of a kernel: pybuild's `variants.lock.json` beside its `build.toml`, in
    any edition pybuild reads. pybuild alone decides which variants a kernel builds (backends,
    `[torch]` and `[general.cuda]` bounds, stable ABI, tvm-ffi) and writes the result there; this
    reads it, after checking that it was written from this very `build.toml` (`buildTomlHash`) by
    these rules (`lockRulesHash`), and not edited since (`content-sha256`). Asked for, a missing or
    stale lock is refused in one line that names the command to run; `lockedWith` (as `genFlakeOutputs`
    uses it) computes it instead.
    `storedLock` is the committed lock as it is, or null.

    # Inputs

    `dir`
    : The kernel folder (holds `build.toml` and `variants.lock.json`).

    # Type

    ```
    readKernel :: Path -> { name, pythonName, framework, backends, noarch, universal, dir, lock, storedLock }
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
      stored = readLockFile dir;
      lock =
        if !(pathExists (dir + "/build.toml")) then
          throw "readKernel: ${file}: not found; a kernel folder needs a build.toml"
        else if stored == null then
          throw "readKernel: ${file}: no variants.lock.json beside it; run `${lockCommand} ${toString dir}` and commit the file (or evaluate it with genFlakeOutputs, which computes it)"
        else if !(lockFitsKernel dir stored) then
          throw "readKernel: ${file}: variants.lock.json was written from another build.toml or by other pybuild rules, or edited since; run `${lockCommand} ${toString dir}` and commit the file"
        else
          stored;
    in
    kernelOfLock dir lock // { storedLock = stored; };

  /**
    The variants a kernel builds from the matrix, as pybuild's `Manifest.variants` computed them
    (read from its lock): each is the matrix variant whose toolchain builds it, renamed (and marked
    `stableAbi`/`tvmFfi`) where the kernel builds it as a stable-ABI or tvm-ffi variant; a
    pure-Python kernel's are `{ backend, name }` (`torch-<backend>`). The lock must have been
    written for this matrix: a lock of another `variants.json` is refused with the command to run.

    # Inputs

    `kernel`
    : As returned by `readKernel`.

    `matrix`
    : The variants from `expandMatrix` (`readMatrix`); ignored for a pure-Python kernel.

    # Type

    ```
    kernelVariants :: Kernel -> [Variant] -> [Variant]
    ```

    # Examples

    ```nix
    map (v: v.name) (kernelVariants (readKernel ../../kernels/img2gray) (readMatrix ../../variants.json))
    => [ "torch211-cxx11-cu126-x86_64-linux" ... ]
    ```
  */
  kernelVariants =
    kernel: matrix:
    let
      byName = listToAttrs (map (v: nameValuePair v.name v) matrix);
      stale = what: throw "kernelVariants: ${kernel.name}: variants.lock.json ${what}; run `${lockCommand} ${toString kernel.dir} --variants <the matrix>` and commit the file";
      built =
        entry:
        let
          base = byName.${entry.from} or (stale "names ${entry.from}, which the matrix does not have");
          framed =
            if entry ? "stable-abi-torch" then
              base // { stableAbi = true; stableAbiTorch = entry."stable-abi-torch"; }
            else if entry ? "tvm-ffi" then
              base // { tvmFfi = true; tvmFfiVersion = entry."tvm-ffi"; }
            else
              base;
          named = framed // { name = variantName framed; };
        in
        if named.name == entry.name then named else stale "names ${entry.name}, which Nix names ${named.name}";
    in
    if kernel.noarch then
      map (e: { inherit (e) backend name; }) kernel.lock.variants
    else
      map built kernel.lock.variants;

  /**
    `kernel`, after checking that its lock was written for the matrix file `variants` (its sha256),
    so that `kernelVariants` reads variants computed from this very matrix.

    # Type

    ```
    lockedFor :: Path -> Kernel -> Kernel
    ```
  */
  lockedFor = variants: lib.lockedWith { inherit variants; };

  /**
    `kernel` with a lock for the matrix file `variants`: its committed `variants.lock.json` when
    that was written from this `build.toml`, by these rules and for this matrix (the fast path,
    no import-from-derivation); else, when `compute` is given, the lock `compute` writes
    (import-from-derivation of `python -m pybuild lock`; one trace line says so); else an error
    that names the command. A pure-Python kernel's lock does not depend on the matrix.

    # Inputs

    `variants`
    : The matrix file.

    `compute`
    : `{ dir, variants } -> Path` of the lock written by pybuild, e.g. a toolchain's `computeLock`; or null.

    # Type

    ```
    lockedWith :: { variants :: Path, compute :: ({ dir, variants } -> Path)? } -> Kernel -> Kernel
    ```
  */
  lockedWith =
    {
      variants,
      compute ? null,
    }:
    kernel:
    let
      stored = kernel.storedLock;
      fresh =
        stored != null
        && lockFitsKernel kernel.dir stored
        && (stored.framework == "torch-noarch" || stored."matrix-sha256" or null == lib.matrixHash variants);
      why = if stored == null then "has no variants.lock.json" else "has a stale variants.lock.json";
      computed = fromJSON (readFile (compute { inherit (kernel) dir; inherit variants; }));
    in
    if fresh then
      kernelOfLock kernel.dir stored // { storedLock = stored; }
    else if compute != null then
      builtins.trace "${baseNameOf (toString kernel.dir)} ${why}; computing it with `${lockCommand}` (import-from-derivation; commit the lock to skip this)" (
        kernelOfLock kernel.dir computed // { storedLock = computed; }
      )
    else
      throw "lockedFor: ${baseNameOf (toString kernel.dir)} ${why} for ${toString variants}; run `${lockCommand} ${toString kernel.dir} --variants ${toString variants}` and commit the file";

  /**
    The build script of a toolchain's `computeLock`: `python -m pybuild lock` (as its module
    `pybuild.manifest.lock`, which imports only jinja2 besides the standard library) on a copy of
    `$kernelSrc` for `$variantsFile`, with `$python` and the pybuild source `$pybuild`; the lock
    is `$out`.

    # Type

    ```
    lockScript :: String
    ```
  */
  lockScript = ''
    set -eu
    cp -r "$kernelSrc" kernel
    chmod -R u+w kernel
    PYTHONPATH="$pybuild" "$python" -m pybuild.manifest.lock --variants "$variantsFile" kernel
    cp kernel/variants.lock.json "$out"
  ''
  + lib.holdLog;

  /**
    The last lines of a builder script that ends in well under a second. Nix (seen with 2.8) kills
    the builder's process group when the log reaches EOF, and a builder that ends that fast is
    then often reported killed ("signal 9") though it finished: a child that holds the log a
    moment longer lets the builder exit first.

    # Type

    ```
    holdLog :: String
    ```
  */
  holdLog = ''
    sleep 1 &
  '';

  /**
    A kernel folder as a store path for `lockScript`: its source without build outputs and
    without the lock itself (`isKernelSource`).

    # Type

    ```
    lockSource :: Path -> StorePath
    ```
  */
  lockSource =
    dir:
    builtins.path {
      path = dir;
      name = "kernel-source";
      filter = path: _type: lib.isKernelSource (baseNameOf path);
    };

  /**
    The sha256 a lock records of what decided it, computed as pybuild computes them
    (pybuild/manifest/lock.py): `buildTomlHash` of the parsed `build.toml` as canonical JSON,
    `matrixHash` of the matrix's variant names (sorted, one a line), `lockRulesHash` of the
    backends' facts and the rules' version.

    # Type

    ```
    buildTomlHash :: Path -> String
    matrixHash :: Path -> String
    lockRulesHash :: String
    ```
  */
  buildTomlHash = dir: hashString "sha256" (toJSON (fromTOML (readFile (dir + "/build.toml"))));
  matrixHash =
    variants: hashString "sha256" (concatStringsSep "\n" (sort (a: b: a < b) (map (v: v.name) (lib.readMatrix variants))));
  lockRulesHash = hashString "sha256" (toJSON {
    inherit (lib.backendFacts) backends;
    rules = lockRules;
  });

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
