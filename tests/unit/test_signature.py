"""Signed releases: `check` verifies every file against metadata.json's digest through kernels-data (the
library the loader and `kernels verify-signature` use, public API only), and a sigstore bundle beside
metadata.json must sign exactly that metadata.json.

What cannot run here: a real signature (it needs GitHub's OIDC token, Fulcio and Rekor) and its
verification against the signer's identity (it needs Sigstore's trust roots online). The release
workflow signs; `kernels verify-signature` (or `kernels.verify.verify_variant` with a policy naming
this repository's release workflow) verifies."""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from pathlib import Path

import pytest

from pybuild.check import check_variant, loader_digest_problems, signature_problem
from pybuild.publish import ReleaseFile, ReleasePlan, RemoteFile, differences
from tests.helpers.fakebuild import make_kernel, make_variant


@pytest.fixture
def variant(tmp_path: Path) -> Path:
    return make_variant(make_kernel(tmp_path))


def bundle_for(data: bytes) -> dict:
    """The shape of a sigstore bundle of a signed file (what `sigstore sign --bundle` writes), with
    the message digest that matters here; the certificate and signature are placeholders."""
    return {
        "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
        "verificationMaterial": {"certificate": {"rawBytes": "AA=="}, "tlogEntries": []},
        "messageSignature": {
            "messageDigest": {
                "algorithm": "SHA2_256",
                "digest": base64.b64encode(hashlib.sha256(data).digest()).decode(),
            },
            "signature": "AA==",
        },
    }


def digest_row(variant: Path) -> tuple[str, str]:
    row = next(r for r in check_variant(variant, run_import=False) if r.check == "digest")
    return row.status, row.detail


def test_a_bundle_of_this_metadata_passes(variant: Path) -> None:
    (variant / "metadata.json.sigstore").write_text(json.dumps(bundle_for((variant / "metadata.json").read_bytes())))
    assert signature_problem(variant) is None
    status, detail = digest_row(variant)
    assert status == "pass" and "metadata.json.sigstore covers this metadata.json" in detail


@pytest.mark.parametrize(
    "content, fragment",
    [
        (json.dumps(bundle_for(b"another metadata.json")), "signs other content"),
        ("{not json", "not a readable sigstore bundle"),
        (json.dumps({"dsseEnvelope": {}}), "no messageSignature"),
    ],
)
def test_a_stale_or_broken_bundle_fails_the_check(variant: Path, content: str, fragment: str) -> None:
    (variant / "metadata.json.sigstore").write_text(content)
    status, detail = digest_row(variant)
    assert status == "fail" and fragment in detail, detail


def test_every_file_is_verified_through_kernels_data_not_a_private_module(variant: Path, monkeypatch) -> None:
    pytest.importorskip("kernels_data")
    monkeypatch.setitem(sys.modules, "kernels._rust", None)  # importing it now fails
    assert loader_digest_problems(variant) == []
    (variant / "tinyk" / "__init__.py").write_text("# tampered\n")
    problems = loader_digest_problems(variant)
    assert problems and any("__init__.py" in p for p in problems), problems


def test_a_re_signed_release_is_the_same_release() -> None:
    """A rerun of the release workflow signs again (a new bundle for the same metadata.json): publish
    must see the release as already published, not as other content under the same tag."""
    meta = ReleaseFile.from_bytes("build/v/metadata.json", b"{}")
    sig = ReleaseFile.from_bytes("build/v/metadata.json.sigstore", b"new signature")
    plan = ReleasePlan("k", "org/k", "kernel", "1.0.0", "v1", "v1.0.0", (meta, sig))
    remote = {
        "build/v/metadata.json": RemoteFile(meta.git_oid, None, 2),
        "build/v/metadata.json.sigstore": RemoteFile("0" * 40, None, 13),
    }
    assert differences(plan, remote) == []
    del remote["build/v/metadata.json.sigstore"]
    assert differences(plan, remote) == ["not on the Hub: build/v/metadata.json.sigstore"]
