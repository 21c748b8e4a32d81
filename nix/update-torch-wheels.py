#!/usr/bin/env python3
"""Pin PyTorch's official wheel of every variant in variants.json: fills ``hashes`` in nix/torch-wheels.json.

The Nix toolchain installs each variant's torch from its official wheel (nixpkgs carries one torch
at a time). Run this on a machine that reaches download.pytorch.org after changing variants.json or
the torch releases/Python in nix/torch-wheels.json; it downloads each missing wheel once (about
1 GB each for CUDA) into the Nix store, where later builds find it.

    python3 nix/update-torch-wheels.py           # hash the wheels not pinned yet
    python3 nix/update-torch-wheels.py --list    # print the wheels the matrix needs, download nothing
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PINS = ROOT / "nix" / "torch-wheels.json"
NIX = ["nix", "--extra-experimental-features", "nix-command flakes"]
# The wheels of the matrix, named and located by the Nix library itself (hashes left out).
WHEELS_EXPR = """
let
  lib = import ./nix/lib;
  pins = lib.torchWheelPins // { hashes = { }; };
in
map (v: let w = lib.torchWheel pins v; in { variant = v.name; inherit (w) name url; }) (lib.readMatrix ./variants.json)
"""


def wheels() -> list[dict[str, str]]:
    out = subprocess.run(
        ["nix-instantiate", "--eval", "--strict", "--json", "-E", WHEELS_EXPR],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        sys.exit(f"update-torch-wheels: evaluating the matrix failed:\n{out.stderr.strip()}")
    return json.loads(out.stdout)


def prefetch(url: str, name: str) -> str:
    out = subprocess.run(
        [*NIX, "store", "prefetch-file", "--json", "--name", name, url], capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        sys.exit(f"update-torch-wheels: downloading {url} failed:\n{out.stderr.strip()}")
    return json.loads(out.stdout)["hash"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="print the wheels the matrix needs and exit")
    args = parser.parse_args()
    needed = wheels()
    if args.list:
        for w in needed:
            print(f"{w['variant']}\t{w['url']}")
        return 0
    pins = json.loads(PINS.read_text())
    old = pins.get("hashes", {})
    hashes = {}
    for w in sorted({w["name"]: w for w in needed}.values(), key=lambda w: w["name"]):
        hashes[w["name"]] = old.get(w["name"]) or prefetch(w["url"], w["name"])
        print(f"{hashes[w['name']]}  {w['name']}", flush=True)
    pins["hashes"] = hashes
    fd, tmp = tempfile.mkstemp(dir=PINS.parent, prefix=".torch-wheels.")
    with os.fdopen(fd, "w") as f:
        f.write(json.dumps(pins, indent=2) + "\n")
    os.replace(tmp, PINS)
    dropped = sorted(set(old) - set(hashes))
    print(f"{PINS.relative_to(ROOT)}: {len(hashes)} wheels pinned" + (f", dropped {dropped}" if dropped else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
