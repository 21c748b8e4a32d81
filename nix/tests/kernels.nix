{ lib }:
let
  inherit (lib) findKernels kernelVariants lockedFor readKernel readMatrix;
  farm = ./fixtures/farm;
  farmMatrix = readMatrix (farm + "/variants.json");
  refused = expr: !(builtins.tryEval (builtins.deepSeq expr expr)).success;
in
{
  testReadKernelBackendsInMatrixOrder = {
    expr = (readKernel (farm + "/kernels/img2gray")).backends;
    expected = [ "cuda" "cpu" ];
  };
  testReadKernelNarrowedByGeneralBackends = {
    expr =
      let
        k = readKernel (farm + "/kernels/cpu-only-from-212");
      in
      {
        inherit (k) name pythonName backends;
      };
    expected = {
      name = "cpu-only-from-212";
      pythonName = "cpu_only_from_212";
      backends = [ "cpu" ];
    };
  };
  # [torch] minver = "2.12" and backends = ["cpu"], as pybuild's lock computed them
  testKernelVariantsFromTheLock = {
    expr = map (v: [ v.name v.torch ]) (kernelVariants (readKernel (farm + "/kernels/cpu-only-from-212")) farmMatrix);
    expected = [
      [ "torch212-cxx11-cpu-aarch64-linux" "2.12" ]
      [ "torch212-cxx11-cpu-x86_64-linux" "2.12" ]
    ];
  };
  testLockOfAnotherMatrixIsRefused = {
    expr = refused (lockedFor ../../variants.json (readKernel (farm + "/kernels/img2gray"))).name;
    expected = true;
  };
  testLockOfTheMatrixIsKept = {
    expr = (lockedFor (farm + "/variants.json") (readKernel (farm + "/kernels/img2gray"))).name;
    expected = "img2gray";
  };
  testLockNamingAVariantTheMatrixLacksIsRefused = {
    expr = refused (kernelVariants (readKernel (farm + "/kernels/img2gray")) [ ]);
    expected = true;
  };
  testFindKernelsFarmSkipsFoldersWithoutBuildToml = {
    expr = map (k: k.name) (findKernels farm);
    expected = [ "cpu-only-from-212" "img2gray" ];
  };
  testReadKernelNoarch = {
    expr =
      let
        k = readKernel ./fixtures/noarch-repo;
      in
      {
        inherit (k) name noarch backends;
        variants = map (v: v.name) (kernelVariants k farmMatrix);
        compiledIsNot = (readKernel (farm + "/kernels/img2gray")).noarch;
      };
    expected = {
      name = "softcap";
      noarch = true;
      backends = [ "cuda" "cpu" ];
      variants = [ "torch-cuda" "torch-cpu" ];
      compiledIsNot = false;
    };
  };
  testFindKernelsKernelRepo = {
    expr = map (k: k.name) (findKernels ./fixtures/kernel-repo);
    expected = [ "relu" ];
  };
}
