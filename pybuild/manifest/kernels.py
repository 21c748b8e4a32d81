"""The ``[kernel.<name>]`` sections as the manifest reads them: the section type of each backend,
asked of the registry (each backend declares its own, ``BaseBackend.kernel_type``, in its module
under ``pybuild/backends/``), and the schema tables derived from those types.

A key of one backend in another's section is refused with the backend it applies to.
"""

from __future__ import annotations

from .. import backends as registry
from ..sections.kernel import KernelSpec
from ..sections.keys import Kind, declared_keys
from .schema import Table, fields_table


def kernel_types() -> dict[str, type[KernelSpec]]:
    """backend name -> its kernel section type, for every registered backend that compiles kernels,
    by name (the order the editions and the reference list them). Read at call time: a backend may
    join the registry later."""
    found = {b.name: b.kernel_type for b in registry.all_backends() if b.kernel_type is not None}
    return dict(sorted(found.items()))


def kernel_type(backend: str) -> type[KernelSpec]:
    """The kernel section type of ``backend`` (KeyError for a backend without compiled kernels)."""
    return kernel_types()[backend]


def owner_of(toml: str) -> str | None:
    """The backend whose kernel type declares the key ``toml`` (None: every backend's, or none's)."""
    owners = [b for b, t in kernel_types().items() if toml in declared_keys(t)]
    return owners[0] if len(owners) == 1 else None


def foreign_key_message(toml: str, section: str, backend: str) -> str | None:
    """Why ``toml`` does not belong in the [kernel.*] ``section`` of ``backend``: it applies to another backend."""
    owner = owner_of(toml)
    if owner is None or owner == backend:
        return None
    return f'`{toml}` in [{section}] only applies to backend "{owner}" (this one is {backend!r})'


def kernel_tables(depends_required: bool, farm: bool = False) -> dict[str, Table]:
    """The `[kernel.*]` schema per backend, derived from the kernel types. The farm's own format takes
    one key set for every backend (its keys marked ``farm``), refused per backend when converted."""
    required = ("backend", "src", *(("depends",) if depends_required else ()))
    backend: dict[str, Kind] = {"backend": "str"}
    if farm:
        keys: dict[str, Kind] = {**backend, **{k: f.metadata["kind"] for k, f in declared_keys(KernelSpec).items()}}
        for t in kernel_types().values():
            keys.update({k: f.metadata["kind"] for k, f in declared_keys(t).items() if f.metadata.get("farm")})
        common = Table(keys, required=required)
        return dict.fromkeys(kernel_types(), common)
    out = {}
    for b, t in kernel_types().items():
        others = {k: f'it only applies to backend "{o}"' for k in _all_keys() if (o := owner_of(k)) not in (None, b)}
        out[b] = fields_table(t, backend, required, elsewhere=others)
    return out


def _all_keys() -> set[str]:
    return {k for t in kernel_types().values() for k in declared_keys(t)}
