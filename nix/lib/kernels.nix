{ lib }:
let
  inherit (lib)
    attrNames
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
  lockCommand = "python -m pybuild lock";
in
{
  /**
    What the Nix side needs of a kernel: pybuild's `variants.lock.json` beside its `build.toml`, in
    any edition pybuild reads. pybuild alone decides which variants a kernel builds (backends,
    `[torch]` and `[general.cuda]` bounds, stable ABI, tvm-ffi) and writes the result there; this
    reads it, after checking that it was written from this very `build.toml` (its sha256), and
    refuses a missing or stale lock in one line that names the command to run.

    # Inputs

    `dir`
    : The kernel folder (holds `build.toml` and `variants.lock.json`).

    # Type

    ```
    readKernel :: Path -> { name, pythonName, framework, backends, noarch, universal, dir, lock }
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
      lockPath = dir + "/variants.lock.json";
      lock =
        if !(pathExists (dir + "/build.toml")) then
          throw "readKernel: ${file}: not found; a kernel folder needs a build.toml"
        else if !(pathExists lockPath) then
          throw "readKernel: ${file}: no variants.lock.json beside it; run `${lockCommand} ${toString dir}` and commit the file"
        else
          fromJSON (readFile lockPath);
      fresh = lock."build-toml-sha256" or null == builtins.hashFile "sha256" (dir + "/build.toml");
      checked =
        if fresh then
          lock
        else
          throw "readKernel: ${file}: variants.lock.json was written from another build.toml; run `${lockCommand} ${toString dir}` and commit the file";
    in
    {
      inherit dir;
      inherit (checked) name framework backends;
      lock = checked;
      noarch = checked.framework == "torch-noarch";
      universal = false;
      pythonName = replaceStrings [ "-" ] [ "_" ] checked.name;
    };

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
  lockedFor =
    variants: kernel:
    if kernel.noarch || kernel.lock."variants-json-sha256" or null == builtins.hashFile "sha256" variants then
      kernel
    else
      throw "readKernel: ${kernel.name}: variants.lock.json was written for another variants.json than ${toString variants}; run `${lockCommand} ${toString kernel.dir} --variants ${toString variants}` and commit the file";

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
