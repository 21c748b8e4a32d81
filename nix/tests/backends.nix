{ lib }:
let
  inherit (lib) backends backendNames noarchBackendNames backendTag backendRunsOn systemArch;
  # The data file's entries, in its order: the expected lists follow it, so a new backend needs no edit here.
  facts = (builtins.fromJSON (builtins.readFile ../../pybuild/backends/backends.json)).backends;
  named = compiled: map (b: b.name) (builtins.filter (b: b.compiled == compiled) facts);
in
{
  testBackendsCudaTagPrefix = {
    expr = backends.cuda.tagPrefix;
    expected = "cu";
  };
  testBackendNamesInMatrixOrder = {
    expr = backendNames;
    expected = named true;
  };
  testNoarchBackendNamesInMatrixOrder = {
    expr = noarchBackendNames;
    expected = named true ++ named false;
  };
  testBackendsCannNoarchName = {
    expr = backends.cann.noarchName;
    expected = "npu";
  };
  testBackendsWheelTagRocm = {
    expr = backends.rocm.wheelTag "7.1";
    expected = "rocm7.1";
  };
  testWithBackendFactsAddsABackend = {
    expr =
      (lib.withBackendFacts {
        backends = [
          {
            name = "cpu";
            label = "CPU";
            compiled = true;
            versioned = false;
            tag = "cpu";
            "tag-digits" = 0;
            os = "linux";
            "noarch-name" = "cpu";
            "wheel-tag" = "cpu";
          }
          {
            name = "dummy";
            label = "Dummy";
            compiled = true;
            versioned = true;
            tag = "dmy";
            "tag-digits" = 2;
            os = "linux";
            "noarch-name" = "dummy";
            "wheel-tag" = null;
          }
        ];
      }).backendTag
        { backend = "dummy"; backendVersion = "1.2"; };
    expected = "dmy12";
  };
  testBackendTagCuda = {
    expr = backendTag { backend = "cuda"; backendVersion = "13.0"; };
    expected = "cu130";
  };
  testBackendTagRocm = {
    expr = backendTag { backend = "rocm"; backendVersion = "7.1"; };
    expected = "rocm71";
  };
  testBackendTagCpu = {
    expr = backendTag { backend = "cpu"; backendVersion = null; };
    expected = "cpu";
  };
  testBackendRunsOnMetalDarwin = {
    expr = backendRunsOn "metal" "aarch64-darwin";
    expected = true;
  };
  testBackendRunsOnCudaDarwin = {
    expr = backendRunsOn "cuda" "aarch64-darwin";
    expected = false;
  };
  testSystemArchAarch64 = {
    expr = systemArch "aarch64-linux";
    expected = "aarch64";
  };
}
