"""The pins of the C++ dependencies a kernel section may name in `depends`, read from
``dependencies.json`` (the one table; ``nix/lib/deps.nix`` reads it too). Pure."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

TABLE = Path(__file__).resolve().parent / "dependencies.json"


@dataclass(frozen=True)
class IndexWheel:
    """A wheel of the package index that carries the same header tree under ``prefix``."""

    requirement: str  # "nvidia-cutlass==3.6.0"
    prefix: str  # "cutlass_library/source"


@dataclass(frozen=True)
class Pin:
    """One dependency at the exact version upstream pins, and where its header tree comes from."""

    name: str  # "cutlass_3_6", as `depends` names it
    project: str  # "CUTLASS"
    version: str  # "3.6.0"
    backend: str  # the backend whose variants compile against it
    url: str  # the tag's archive
    archive: str  # its file name, as a mirror holds it: "cutlass-3.6.0.tar.gz"
    prefix: str  # the one folder the archive holds: "cutlass-3.6.0"
    include: tuple[str, ...]  # the header folders, relative to the tree: ("include", "tools/util/include")
    tree_sha256: str | None  # the header tree's content hash (None: provided by Nix builds only)
    nix_hash: str | None
    index: IndexWheel | None = None

    @property
    def label(self) -> str:
        return f"{self.project} {self.version}"

    @property
    def env_var(self) -> str:
        """The variable that hands this dependency in from a local tree or archive: PYBUILD_DEP_CUTLASS_3_6."""
        return "PYBUILD_DEP_" + "".join(c if c.isalnum() else "_" for c in self.name).upper()


@functools.cache
def pins() -> dict[str, Pin]:
    """Every pinned dependency, by its `depends` name."""
    table = json.loads(TABLE.read_text())["dependencies"]
    out = {}
    for name, d in table.items():
        src = d["source"]
        index = d.get("index")
        out[name] = Pin(
            name=name,
            project=d["project"],
            version=d["version"],
            backend=d["backend"],
            url=src["url"],
            archive=src["archive"],
            prefix=src["prefix"],
            include=tuple(d["include"]),
            tree_sha256=d["tree-sha256"],
            nix_hash=src.get("nix-hash"),
            index=IndexWheel(index["requirement"], index["prefix"]) if index else None,
        )
    return out


def pin_for(name: str) -> Pin | None:
    """The pin of a `depends` name, or None for one that is no pinned C++ dependency (``torch``)."""
    return pins().get(name)
