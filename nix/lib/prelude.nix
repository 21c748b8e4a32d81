# The few nixpkgs `lib` functions this library uses, written on builtins with the same names and
# meanings. Evaluating the matrix, the kernel list and the flake's attribute names must never need
# nixpkgs (it is fetched only when something is built), so the library carries its own.
let
  inherit (builtins)
    attrNames
    concatMap
    elemAt
    filter
    foldl'
    genList
    head
    isString
    length
    listToAttrs
    substring
    stringLength
    ;
in
rec {
  inherit (builtins)
    all
    any
    attrNames
    attrValues
    baseNameOf
    concatLists
    concatMap
    concatStringsSep
    elem
    elemAt
    filter
    foldl'
    fromJSON
    fromTOML
    hasAttr
    head
    isAttrs
    isBool
    isList
    isString
    length
    listToAttrs
    map
    mapAttrs
    match
    pathExists
    readDir
    readFile
    removeAttrs
    replaceStrings
    sort
    tail
    toJSON
    typeOf
    ;

  nameValuePair = name: value: { inherit name value; };
  genAttrs = names: f: listToAttrs (map (n: nameValuePair n (f n)) names);
  optional = cond: x: if cond then [ x ] else [ ];
  optionals = cond: xs: if cond then xs else [ ];
  optionalAttrs = cond: attrs: if cond then attrs else { };
  optionalString = cond: s: if cond then s else "";
  last = xs: elemAt xs (length xs - 1);
  unique = foldl' (acc: x: if builtins.elem x acc then acc else acc ++ [ x ]) [ ];
  subtractLists = drop: filter (x: !(builtins.elem x drop));
  flatten = x: if builtins.isList x then concatMap flatten x else [ x ];
  imap0 = f: xs: genList (i: f i (elemAt xs i)) (length xs);
  findFirst =
    pred: default: xs:
    let
      found = filter pred xs;
    in
    if found == [ ] then default else head found;
  hasPrefix = prefix: s: substring 0 (stringLength prefix) s == prefix;
  removePrefix = prefix: s: if hasPrefix prefix s then substring (stringLength prefix) (stringLength s) s else s;
  hasSuffix =
    suffix: s:
    let
      n = stringLength s;
      k = stringLength suffix;
    in
    n >= k && substring (n - k) k s == suffix;
  splitString = sep: s: filter isString (builtins.split (escapeRegex sep) s);
  escapeRegex = builtins.replaceStrings [ "." "*" "+" "?" "(" ")" "[" "]" "{" "}" "|" "^" "$" "\\" ] [
    "\\."
    "\\*"
    "\\+"
    "\\?"
    "\\("
    "\\)"
    "\\["
    "\\]"
    "\\{"
    "\\}"
    "\\|"
    "\\^"
    "\\$"
    "\\\\"
  ];
  toInt = s: builtins.fromJSON s;
  # Lexicographic comparison of two equally long lists of comparable values: -1, 0 or 1.
  compareLists =
    a: b:
    if a == [ ] then
      (if b == [ ] then 0 else -1)
    else if b == [ ] then
      1
    else if head a < head b then
      -1
    else if head b < head a then
      1
    else
      compareLists (builtins.tail a) (builtins.tail b);
  filterAttrs = pred: set: listToAttrs (concatMap (n: optional (pred n set.${n}) (nameValuePair n set.${n})) (attrNames set));
  mapAttrsToList = f: set: map (n: f n set.${n}) (attrNames set);
  mergeAttrsList = foldl' (a: b: a // b) { };
  # Results of a `{ testName = { expr; expected; }; }` set that did not match: [] when all passed.
  # nixpkgs' lib.debug.runTests, without its filtering options.
  runTests =
    tests:
    concatMap (
      name:
      let
        t = tests.${name};
      in
      optional (t.expr != t.expected) {
        inherit name;
        inherit (t) expected;
        result = t.expr;
      }
    ) (attrNames tests);
}
