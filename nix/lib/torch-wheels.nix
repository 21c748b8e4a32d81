{ lib }:
let
  inherit (lib)
    backends
    hasSuffix
    replaceStrings
    systemArch
    ;
in
{
  /**
    The official PyTorch wheel a variant's torch comes from: its download URL, its file name (the
    store name), and its hash from the pin file. No nixpkgs revision carries several torch
    versions at once, so each variant's torch is PyTorch's own wheel for that torch × backend,
    pinned by hash in `nix/torch-wheels.json` (`nix/update-torch-wheels.py` fills it).

    # Inputs

    `pins`
    : The parsed pin file: `{ python = "3.13"; torch = { "2.13" = "2.13.0"; }; hashes = { <file> = <SRI hash>; }; }`.

    `variant`
    : A variant from `expandMatrix`.

    # Type

    ```
    torchWheel :: Pins -> Variant -> { version :: String, url :: String, name :: String, hash :: String }
    ```

    # Examples

    ```nix
    (torchWheel { python = "3.13"; torch = { "2.11" = "2.11.0"; }; hashes = { }; }
      { torch = "2.11"; backend = "cuda"; backendVersion = "12.6"; system = "x86_64-linux"; }).url
    => "https://download.pytorch.org/whl/cu126/torch-2.11.0%2Bcu126-cp313-cp313-manylinux_2_28_x86_64.whl"
    ```
  */
  torchWheel =
    pins: variant:
    let
      version =
        pins.torch.${variant.torch}
          or (throw "torchWheel: nix/torch-wheels.json names no release of torch ${variant.torch}; add it to \"torch\", e.g. \"${variant.torch}\": \"${variant.torch}.0\"");
      tag = backends.${variant.backend}.wheelTag variant.backendVersion;
      py = "cp" + replaceStrings [ "." ] [ "" ] pins.python;
      darwin = hasSuffix "-darwin" variant.system;
      platform = if darwin then "macosx_11_0_arm64" else "manylinux_2_28_${systemArch variant.system}";
      abiTag = if darwin then "none" else py;
      local = if tag == null then "" else "+${tag}";
      index = if tag == null then "cpu" else tag;
      file = "torch-${version}${local}-${py}-${abiTag}-${platform}.whl";
    in
    {
      inherit version;
      name = file;
      url = "https://download.pytorch.org/whl/${index}/${replaceStrings [ "+" ] [ "%2B" ] file}";
      hash =
        pins.hashes.${file}
          or (throw "torchWheel: no hash for ${file} in nix/torch-wheels.json; run `python3 nix/update-torch-wheels.py` on a machine that reaches download.pytorch.org");
    };

  /**
    The parsed pin file `nix/torch-wheels.json`, the default `pins` of `torchWheel`.

    # Type

    ```
    torchWheelPins :: AttrSet
    ```

    # Examples

    ```nix
    torchWheelPins.python
    => "3.13"
    ```
  */
  torchWheelPins = builtins.fromJSON (builtins.readFile ../torch-wheels.json);

}
