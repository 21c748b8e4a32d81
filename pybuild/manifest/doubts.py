"""What a manifest asks for that upstream's kernel-builder accepts but whose result is doubtful: the
farm accepts it too and says so in one line each (:func:`doubts`), never refuses it."""

from __future__ import annotations

from .model import Manifest

#: The first torch whose headers read ``TORCH_TARGET_VERSION``, and the oldest torch the farm builds
#: stable-ABI variants against.
STABLE_ABI_CHECKED_FROM = (2, 10)


def _stable_abi(m: Manifest) -> list[str]:
    out = []
    for backend, (major, minor) in m.stable_abi:
        if (major, minor) < STABLE_ABI_CHECKED_FROM:
            out.append(
                f"{m.path}: `stable-abi` in [torch] asks for torch {major}.{minor} for {backend}; accepted as "
                f"kernel-builder reads it (torch-stable-abi{major}{minor}-… variants, compiled against a later "
                f"torch with TORCH_TARGET_VERSION {major}.{minor}), but loading them under torch {major}.{minor} "
                'is not tested here; use "2.10" or later where the kernel allows'
            )
    return out


def _header_only(m: Manifest) -> list[str]:
    return [
        f"{m.path}: `src` in [kernel.{k.name}] lists only headers, so the section compiles nothing; "
        "accepted as kernel-builder does (its headers still count as sources of the build)"
        for k in m.kernels
        if not k.compiled_src
    ]


def _sections(m: Manifest) -> list[str]:
    """What each section's backend doubts of its values (CUDA: capabilities no toolkit knows)."""
    return [line for k in m.kernels for line in k.doubts(m.path)]


def doubts(m: Manifest) -> tuple[str, ...]:
    """One line (file, key, what is done) for each doubtful thing ``m`` asks for, in manifest order."""
    return (*_stable_abi(m), *_header_only(m), *_sections(m))
