{ lib }:
let
  inherit (lib) compareLists findFirst removePrefix splitString;
in
{
  testSplitStringDot = {
    expr = splitString "." "2.13.0";
    expected = [ "2" "13" "0" ];
  };
  testCompareListsLikePythonTuples = {
    expr = [
      (compareLists [ 2 9 ] [ 2 10 ])
      (compareLists [ 12 ] [ 12 8 ])
      (compareLists [ 13 0 ] [ 13 0 ])
      (compareLists [ "b" ] [ "a" ])
    ];
    expected = [ (-1) (-1) 0 1 ];
  };
  testFindFirstDefault = {
    expr = [
      (findFirst (x: x > 1) null [ 1 2 3 ])
      (findFirst (x: x > 5) null [ 1 2 3 ])
    ];
    expected = [ 2 null ];
  };
  testRemovePrefixOnlyAtStart = {
    expr = [
      (removePrefix "img2gray-" "img2gray-x86_64-linux")
      (removePrefix "x" "img2gray")
    ];
    expected = [ "x86_64-linux" "img2gray" ];
  };
}
