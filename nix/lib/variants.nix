{ lib }:
let
  inherit (lib)
    all
    attrNames
    backendNames
    backendRunsOn
    backends
    concatMap
    concatStringsSep
    filter
    findFirst
    hasSuffix
    isAttrs
    isBool
    isList
    isString
    length
    map
    match
    optional
    sort
    subtractLists
    toJSON
    variantLessThan
    variantName
    ;

  systems = [
    "x86_64-linux"
    "aarch64-linux"
    "aarch64-darwin"
  ];
  cxxAbis = [
    "cxx11"
    "cxx98"
  ];
  topKeys = [
    "schema"
    "torch"
    "cxx-abi"
    "systems"
    "exclude"
    "$comment"
  ];
  excludeKeys = [
    "torch"
    "backend"
    "backend-version"
    "cxx-abi"
    "system"
    "reason"
  ];

  fail = where: msg: throw "expandMatrix: variants.json ${where}: ${msg}";
  show = toJSON;

  checkStrings =
    where: pattern: example: value:
    if !(isList value && all isString value) then
      fail where "must be a list of strings, e.g. ${example}; found ${show value}"
    else
      let
        bad = filter (x: match pattern x == null) value;
        twice = findFirst (x: length (filter (y: y == x) value) > 1) null value;
      in
      if bad != [ ] then
        fail where "invalid entry ${show (builtins.head bad)}, e.g. ${example}"
      else if twice != null then
        fail where "lists ${show twice} twice; list each once"
      else
        value;

  excludeMatches =
    variant: ex:
    let
      fields = {
        torch = variant.torch;
        backend = variant.backend;
        "backend-version" = variant.backendVersion;
        "cxx-abi" = variant.cxxAbi;
        system = variant.system;
      };
    in
    all (k: k == "reason" || fields.${k} == ex.${k}) (attrNames ex);

  excludedBy = excludes: variant: builtins.any (excludeMatches variant) excludes;

  expandEntry =
    { abis, systemList }:
    i: entry:
    let
      where = "torch[${toString i}]";
      version =
        if isString (entry.version or null) && match "[0-9]\\.[0-9]+" entry.version != null then
          entry.version
        else
          fail "${where}.version" "must be \"major.minor\" like \"2.13\"; found ${show (entry.version or null)}";
      unknown = subtractLists ([ "version" ] ++ backendNames) (attrNames entry);
      backendVersions =
        backend:
        let
          value = entry.${backend};
        in
        if backends.${backend}.versioned then
          checkStrings "${where}.${backend}" "[0-9]+\\.[0-9]" "[\"12.8\", \"13.0\"]" value
        else if !(isBool value) then
          fail "${where}.${backend}" "must be true or false; found ${show value}"
        else
          optional value null;
      variantsOf =
        backend:
        concatMap (
          backendVersion:
          concatMap (
            system:
            let
              darwin = hasSuffix "-darwin" system;
            in
            if !(backendRunsOn backend system) then
              [ ]
            else
              map (cxxAbi: {
                torch = version;
                inherit
                  backend
                  backendVersion
                  cxxAbi
                  system
                  ;
              }) (if darwin then [ null ] else abis)
          ) systemList
        ) (backendVersions backend);
    in
    if !(isAttrs entry) then
      fail where "must be an object"
    else if unknown != [ ] then
      fail where "unknown key(s) ${show unknown}; allowed: version, ${concatStringsSep ", " backendNames}"
    else
      concatMap variantsOf (filter (b: entry ? ${b}) backendNames);
in
{
  /**
    Expand parsed `variants.json` data into the sorted list of variants, each with its `name`.
    Applies the file's exclusions; validates it the way pybuild does, naming the key and the fix.

    # Inputs

    `matrix`
    : The parsed JSON (`builtins.fromJSON`), an attribute set with `torch`, `cxx-abi`, `systems`
      and optionally `exclude`.

    # Type

    ```
    expandMatrix :: AttrSet -> [{ name, torch, backend, backendVersion, cxxAbi, system }]
    ```

    # Examples

    ```nix
    map (v: v.name) (expandMatrix {
      torch = [ { version = "2.13"; cuda = [ "13.0" ]; cpu = true; } ];
      "cxx-abi" = [ "cxx11" ];
      systems = [ "x86_64-linux" "aarch64-linux" ];
      exclude = [ { backend = "cuda"; system = "aarch64-linux"; } ];
    })
    => [ "torch213-cxx11-cu130-x86_64-linux" "torch213-cxx11-cpu-aarch64-linux" "torch213-cxx11-cpu-x86_64-linux" ]
    ```
  */
  expandMatrix =
    matrix:
    let
      unknown = subtractLists topKeys (attrNames matrix);
      torchEntries = matrix.torch or null;
      abis = checkStrings "cxx-abi" (concatStringsSep "|" cxxAbis) "[\"cxx11\"]" (matrix."cxx-abi" or null);
      systemList = checkStrings "systems" (concatStringsSep "|" systems) "[\"x86_64-linux\"]" (
        matrix.systems or null
      );
      excludes = matrix.exclude or [ ];
      badExclude = findFirst (ex: !(isAttrs ex) || ex == { } || subtractLists excludeKeys (attrNames ex) != [ ]) null (
        if isList excludes then excludes else [ ]
      );
      indexedExcludes = lib.imap0 (i: ex: { inherit i ex; }) (if isList excludes then excludes else [ ]);
      reasonOnly = findFirst (ie: attrNames ie.ex == [ "reason" ]) null indexedExcludes;
      nonString = findFirst (ie: builtins.any (k: !(isString ie.ex.${k})) (attrNames ie.ex)) null indexedExcludes;
      versions = map (e: e.version or null) torchEntries;
      duplicate = findFirst (v: length (filter (w: w == v) versions) > 1) null versions;
      all' = lib.concatLists (lib.imap0 (expandEntry { inherit abis systemList; }) torchEntries);
      kept = filter (v: !(excludedBy excludes v)) all';
      # an exclude that matches nothing is a typo ("cpuu", "13") that would silently exclude nothing
      unusedExclude = findFirst (ie: !(builtins.any (v: excludeMatches v ie.ex) all')) null indexedExcludes;
      named = map (v: v // { name = variantName v; }) kept;
      uniqueByName = lib.attrValues (lib.listToAttrs (map (v: lib.nameValuePair v.name v) named));
    in
    if !(isAttrs matrix) then
      fail "top level" "must be a JSON object with keys torch, cxx-abi, systems"
    else if unknown != [ ] then
      fail "top level" "unknown key(s) ${show unknown}; allowed: torch, cxx-abi, systems, exclude"
    else if !(isList torchEntries) || torchEntries == [ ] then
      fail "torch" "must be a non-empty list like [{\"version\": \"2.13\", \"cuda\": [\"13.0\"], \"cpu\": true}]"
    else if matrix ? schema && matrix.schema != 1 then
      fail "schema" "is ${show matrix.schema}; this pybuild reads schema 1 (or leave the key out)"
    else if abis == [ ] then
      fail "cxx-abi" "is empty, which leaves no variant; list at least one, e.g. [\"cxx11\"]"
    else if systemList == [ ] then
      fail "systems" "is empty, which leaves no variant; list at least one, e.g. [\"x86_64-linux\"]"
    else if !(isList excludes) then
      fail "exclude" "must be a list of objects"
    else if badExclude != null then
      fail "exclude" "every entry must be an object with keys from ${show excludeKeys}; found ${show badExclude}"
    else if reasonOnly != null then
      fail "exclude[${toString reasonOnly.i}]" (
        "has only a reason, so it would exclude every variant; add the keys it matches, "
        + "e.g. {\"backend\": \"rocm\", \"system\": \"aarch64-linux\"}"
      )
    else if nonString != null then
      fail "exclude[${toString nonString.i}]" "values must be strings like \"2.13\"; found ${
        show (lib.filterAttrs (_: v: !(isString v)) nonString.ex)
      }"
    else if duplicate != null then
      fail "torch" "torch ${show duplicate} is listed twice"
    else if builtins.deepSeq (map (v: v.torch) all') unusedExclude != null then
      fail "exclude[${toString unusedExclude.i}]" "matches no variant (${
        show (removeAttrs unusedExclude.ex [ "reason" ])
      }); fix its values or remove it"
    else if kept == [ ] then
      fail "top level" (
        "expands to no variant (each torch entry's backends on `systems`, minus `exclude`); "
        + "nothing would be built"
      )
    else
      sort variantLessThan uniqueByName;

  /**
    Read and expand a `variants.json` file.

    # Inputs

    `path`
    : Path to the file.

    # Type

    ```
    readMatrix :: Path -> [Variant]
    ```

    # Examples

    ```nix
    builtins.length (readMatrix ../../variants.json)
    => 22
    ```
  */
  readMatrix = path: lib.expandMatrix (builtins.fromJSON (builtins.readFile path));

}
