{ lib }:
let
  inherit (lib) torchWheel torchWheelPins;
  pins = {
    python = "3.13";
    torch = {
      "2.11" = "2.11.0";
    };
    hashes = {
      "torch-2.11.0+cpu-cp313-cp313-manylinux_2_28_aarch64.whl" = "sha256-pinned";
    };
  };
in
{
  testTorchWheelUrlCuda = {
    expr =
      (torchWheel pins {
        torch = "2.11";
        backend = "cuda";
        backendVersion = "12.6";
        system = "x86_64-linux";
      }).url;
    expected = "https://download.pytorch.org/whl/cu126/torch-2.11.0%2Bcu126-cp313-cp313-manylinux_2_28_x86_64.whl";
  };
  testTorchWheelCpuAarch64 = {
    expr = removeAttrs (torchWheel pins {
      torch = "2.11";
      backend = "cpu";
      backendVersion = null;
      system = "aarch64-linux";
    }) [ "url" ];
    expected = {
      version = "2.11.0";
      name = "torch-2.11.0+cpu-cp313-cp313-manylinux_2_28_aarch64.whl";
      hash = "sha256-pinned";
    };
  };
  testTorchWheelRocmIndexKeepsDot = {
    expr =
      (torchWheel pins {
        torch = "2.11";
        backend = "rocm";
        backendVersion = "7.1";
        system = "x86_64-linux";
      }).url;
    expected = "https://download.pytorch.org/whl/rocm7.1/torch-2.11.0%2Brocm7.1-cp313-cp313-manylinux_2_28_x86_64.whl";
  };
  testTorchWheelPinsPython = {
    expr = torchWheelPins.python;
    expected = "3.13";
  };
}
