"""An adversarial corpus: every input gives ONE clear line (or, for `check`, a failing row), a non-zero exit
code, no traceback, and writes nothing outside `.pybuild/`. Each case names the input and a fragment of
the message it must get."""

from __future__ import annotations

import json
import os
import shutil
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from pybuild.__main__ import main
from tests.helpers.corpus import deep_tree, remove_deep, snapshot
from tests.helpers.fakebuild import host_cpu_variant, make_kernel, make_variant, one_variant_matrix

REPO = Path(__file__).resolve().parents[2]
DEEP = 2000  # folders: deeper than Python's recursion limit
NON_UTF8 = b"bad\xff\xfename"


@pytest.fixture
def farm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """variants.json (the host's CPU variant), kernels/tinyk built by hand, kernels/softcap (pure Python)."""
    root = tmp_path / "farm"
    (root / "kernels").mkdir(parents=True)
    one_variant_matrix(root / "variants.json")
    k = make_kernel(root / "kernels")
    make_variant(k)
    shutil.copytree(REPO / "tests" / "fixtures" / "noarch-softcap", root / "kernels" / "softcap")
    monkeypatch.chdir(root)
    yield root
    for p in (root / "kernels" / "tinyk", root / "kernels" / "softcap", root / "result"):
        remove_deep(p)


def variant_dir(farm: Path) -> Path:
    return farm / "kernels" / "tinyk" / "build" / host_cpu_variant()


def write(rel: str, data: str | bytes) -> Callable[[Path], None]:
    def setup(farm: Path) -> None:
        p = farm / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if p.exists() or p.is_symlink():
            p.unlink()
        p.write_bytes(data if isinstance(data, bytes) else data.encode())

    return setup


def fifo(rel: str) -> Callable[[Path], None]:
    def setup(farm: Path) -> None:
        (farm / rel).unlink(missing_ok=True)
        os.mkfifo(farm / rel)

    return setup


def link(rel: str, target: str) -> Callable[[Path], None]:
    def setup(farm: Path) -> None:
        (farm / rel).unlink(missing_ok=True)
        (farm / rel).symlink_to(target)

    return setup


def sparse(rel: str, size: int) -> Callable[[Path], None]:
    def setup(farm: Path) -> None:
        with open(farm / rel, "wb") as f:
            f.truncate(size)

    return setup


def matrix_with(**changes) -> Callable[[Path], None]:
    def setup(farm: Path) -> None:
        data = json.loads((farm / "variants.json").read_text())
        data["torch"][0].update(changes)
        (farm / "variants.json").write_text(json.dumps(data))

    return setup


def in_variant(rel: str | bytes, data: bytes = b"x") -> Callable[[Path], None]:
    def setup(farm: Path) -> None:
        base = os.fsencode(variant_dir(farm))
        path = os.path.join(base, os.fsencode(rel))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)

    return setup


def result_with(setup_result: Callable[[Path], None]) -> Callable[[Path], None]:
    def setup(farm: Path) -> None:
        result = farm / "result"
        shutil.copytree(variant_dir(farm), result / host_cpu_variant())
        setup_result(result / host_cpu_variant())

    return setup


def nested_json(depth: int) -> str:
    return '{"schema": 1, "torch": ' + "[" * depth + "]" * depth + "}"


def nested_toml(depth: int) -> str:
    return '[general]\nname = "tinyk"\nversion = 1\nx = ' + "[" * depth + "]" * depth + "\n"


TOML = "kernels/tinyk/build.toml"
VJ = "variants.json"
CHECK = ["check", "kernels/tinyk", "--no-import", "--json"]  # JSON: the details unwrapped
PUBLISH = ["publish", "kernels/tinyk", "--repo-id", "org/tinyk", "--version", "1.0.0", "--dry-run"]
BUILD_NOARCH = ["build", "kernels/softcap"]
VARIANTS = ["variants"]
CHECK_CONFIG = ["check-config", "kernels/tinyk"]
WHEEL = ["wheel", "kernels/tinyk", "--version", "1.0.0", "-o", "kernels/tinyk/.pybuild/dist"]
OUTSIDE = "outside-secret.txt"  # beside kernels/: outside every kernel folder


def toml_with(old: str, new: str) -> Callable[[Path], None]:
    """tinyk's build.toml with ``old`` replaced by ``new`` (both must be present)."""

    def setup(farm: Path) -> None:
        p = farm / TOML
        text = p.read_text()
        assert old in text, old
        p.write_text(text.replace(old, new, 1))

    return setup


V5_TINYK = """\
[general]
name = "tinyk"
version = 1
edition = 5
license = "MIT"
backends = ["cpu"]
{general}

[torch]
src = ["torch-ext/torch_binding.cpp"]

[kernel.tinyk_cpu]
backend = "cpu"
depends = ["torch"]
src = ["csrc/tinyk_cpu.cpp"]
"""


def general_with(lines: str) -> Callable[[Path], None]:
    """tinyk's build.toml in upstream's current edition, with ``lines`` at the end of [general]."""
    return write(TOML, V5_TINYK.format(general=lines))


def outside_link(rel: str) -> Callable[[Path], None]:
    """``rel`` a symlink to a secret file outside the kernel folder."""

    def setup(farm: Path) -> None:
        (farm / OUTSIDE).write_text("TOKEN=hf_secret\n")
        p = farm / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.symlink_to(farm / OUTSIDE)

    return setup


def meta(data: str | bytes) -> Callable[[Path], None]:
    def setup(farm: Path) -> None:
        p = variant_dir(farm) / "metadata.json"
        p.unlink()
        p.write_bytes(data if isinstance(data, bytes) else data.encode())

    return setup


def meta_fifo(farm: Path) -> None:
    p = variant_dir(farm) / "metadata.json"
    p.unlink()
    os.mkfifo(p)


def meta_dup_key(farm: Path) -> None:
    p = variant_dir(farm) / "metadata.json"
    text = p.read_text()
    p.write_text(text.replace('"name": "tinyk"', '"name": "tinyk", "name": "other"', 1))


def non_utf8_in(rel: str) -> Callable[[Path], None]:
    def setup(farm: Path) -> None:
        base = os.fsencode(farm / rel)
        os.makedirs(base, exist_ok=True)
        with open(os.path.join(base, NON_UTF8 + b".so"), "wb") as f:
            f.write(b"\x7fELF not really")

    return setup


def deep(where: Callable[[Path], Path]) -> Callable[[Path], None]:
    return lambda farm: deep_tree(where(farm), DEEP)


CASES: list[tuple[str, Callable[[Path], None], list[str], str]] = [
    # variants.json
    ("variants-deep-nesting", write(VJ, nested_json(100_000)), VARIANTS, "nested deeper than"),
    ("variants-nesting-past-the-limit", write(VJ, nested_json(200)), VARIANTS, "nested deeper than"),
    ("variants-duplicate-key", write(VJ, '{"schema": 1, "schema": 1, "torch": []}'), VARIANTS, "duplicate key"),
    (
        "variants-duplicate-nested-key",
        write(
            VJ,
            '{"schema": 1, "torch": [{"version": "2.13", "version": "2.12", '
            '"cpu": true}], "cxx-abi": ["cxx11"], "systems": ["x86_64-linux"]}',
        ),
        VARIANTS,
        "duplicate key",
    ),
    ("variants-unknown-torch", matrix_with(version="9.99"), VARIANTS, "unknown torch"),
    ("variants-unknown-cuda", matrix_with(cuda=["99.9"]), VARIANTS, "unknown CUDA"),
    ("variants-fifo", fifo(VJ), ["variants", "--variants", VJ], "not a regular file"),
    ("variants-dev-zero", link(VJ, "/dev/zero"), ["variants", "--variants", VJ], "not a regular file"),
    ("variants-huge", sparse(VJ, 64 << 20), ["variants", "--variants", VJ], "too large"),
    ("variants-not-utf8", write(VJ, b'{"schema": "\xff"}'), VARIANTS, "UTF-8"),
    ("variants-empty", write(VJ, ""), VARIANTS, "invalid JSON"),
    ("variants-nan", write(VJ, '{"schema": NaN}'), VARIANTS, "invalid JSON"),
    ("variants-link-loop", link(VJ, "variants.json"), ["variants", "--variants", VJ], "variants.json"),
    ("variants-array", write(VJ, "[1, 2]"), VARIANTS, "variants.json"),
    # build.toml
    ("toml-deep-arrays", write(TOML, nested_toml(100_000)), CHECK, "nested deeper than"),
    ("toml-nesting-past-the-limit", write(TOML, nested_toml(200)), CHECK, "nested deeper than"),
    (
        "toml-deep-inline-tables",
        write(TOML, '[general]\nname = "tinyk"\nversion = 1\nx = ' + "{a = " * 5000 + "1" + "}" * 5000 + "\n"),
        CHECK,
        "nested deeper than",
    ),
    ("toml-fifo", fifo(TOML), ["build", "kernels/tinyk"], "not a regular file"),
    ("toml-dev-zero", link(TOML, "/dev/zero"), ["build", "kernels/tinyk"], "not a regular file"),
    ("toml-fifo-check", fifo(TOML), CHECK, "not a regular file"),
    ("toml-huge", sparse(TOML, 64 << 20), CHECK, "too large"),
    ("toml-not-utf8", write(TOML, b'[general]\nname = "\xff"\n'), CHECK, "UTF-8"),
    ("toml-dangling-link", link(TOML, "nowhere.toml"), CHECK, "build.toml"),
    ("toml-link-loop", link(TOML, "build.toml"), CHECK, "build.toml"),
    ("toml-nul-byte", write(TOML, '[general]\nname = "tin\x00yk"\n'), CHECK, "build.toml"),
    ("toml-syntax", write(TOML, "[general\n"), CHECK, "TOML syntax error"),
    # metadata.json of a built variant
    ("metadata-deep-nesting", meta('{"name": ' + "[" * 100_000 + "]" * 100_000 + "}"), CHECK, "nested deeper than"),
    ("metadata-duplicate-key", meta_dup_key, CHECK, "duplicate key"),
    ("metadata-fifo", meta_fifo, CHECK, "not a regular file"),
    (
        "metadata-huge",
        lambda farm: (
            (variant_dir(farm) / "metadata.json").unlink()
            or sparse(str(variant_dir(farm) / "metadata.json"), 64 << 20)(farm)
        ),
        CHECK,
        "too large",
    ),
    ("metadata-not-utf8", meta(b'{"name": "\xff"}'), CHECK, "UTF-8"),
    # build trees
    ("build-tree-2000-deep-check", deep(lambda f: variant_dir(f) / "tinyk" / "deep"), CHECK, "nested deeper than"),
    ("build-tree-2000-deep-publish", deep(lambda f: variant_dir(f) / "tinyk" / "deep"), PUBLISH, "nested deeper than"),
    ("tests-tree-2000-deep-publish", deep(lambda f: f / "kernels" / "tinyk" / "tests"), PUBLISH, "nested deeper than"),
    (
        "package-tree-2000-deep-build",
        deep(lambda f: f / "kernels" / "softcap" / "torch-ext" / "softcap" / "deep"),
        BUILD_NOARCH,
        "nested deeper than",
    ),
    (
        "non-utf8-extension-check",
        lambda farm: non_utf8_in(str(variant_dir(farm).relative_to(farm) / "tinyk"))(farm),
        CHECK,
        "not UTF-8",
    ),
    ("non-utf8-file-publish", non_utf8_in("kernels/tinyk/tests"), PUBLISH, "not UTF-8"),
    ("non-utf8-file-build", non_utf8_in("kernels/softcap/torch-ext/softcap"), BUILD_NOARCH, "not UTF-8"),
    # collect
    (
        "collect-deep-result",
        result_with(lambda v: deep_tree(v / "tinyk" / "deep", DEEP)),
        ["collect", "result"],
        "nested deeper than",
    ),
    (
        "collect-non-utf8-result",
        result_with(lambda v: open(os.path.join(os.fsencode(v), NON_UTF8), "wb").close()),
        ["collect", "result"],
        "not UTF-8",
    ),
    (
        "collect-fifo-in-result",
        result_with(lambda v: os.mkfifo(v / "tinyk" / "pipe")),
        ["collect", "result"],
        "not a regular file",
    ),
    ("collect-result-is-a-file", write("result", "x"), ["collect", "result"], "result"),
    # a kernel's inputs are exactly its files (issue: untrusted build.toml)
    (
        "stray-file-in-build-publish",
        write("kernels/tinyk/build/credentials.txt", "TOKEN=x"),
        PUBLISH,
        "credentials.txt: is not in a built variant",
    ),
    (
        "stray-folder-in-build-publish",
        write("kernels/tinyk/build/notes/todo.txt", "x"),
        PUBLISH,
        "build/notes/metadata.json is missing",
    ),
    (
        "symlink-in-noarch-package-build",
        outside_link("kernels/softcap/torch-ext/softcap/leak.py"),
        BUILD_NOARCH,
        "leak.py: is a symlink",
    ),
    (
        "symlink-in-built-package-wheel",
        lambda farm: outside_link(str(variant_dir(farm).relative_to(farm) / "tinyk" / "leak.py"))(farm),
        WHEEL,
        "leak.py: is a symlink",
    ),
    (
        "symlink-in-built-package-publish",
        lambda farm: outside_link(str(variant_dir(farm).relative_to(farm) / "tinyk" / "leak.py"))(farm),
        PUBLISH,
        "leak.py: is a symlink",
    ),
    (
        "include-the-build-folder",
        toml_with('src = ["csrc/tinyk_cpu.cpp"]', 'src = ["csrc/tinyk_cpu.cpp"]\ninclude = ["build"]'),
        CHECK_CONFIG,
        "lies in build/",
    ),
    (
        "source-in-pybuild-folder",
        toml_with('src = ["csrc/tinyk_cpu.cpp"]', 'src = [".pybuild/work/x.cpp"]'),
        CHECK_CONFIG,
        "lies in .pybuild/",
    ),
    (
        "semicolon-in-src",
        lambda farm: (
            write("kernels/tinyk/csrc/a.cpp;b.cpp", "//")(farm),
            toml_with('"csrc/tinyk_cpu.cpp"', '"csrc/a.cpp;b.cpp"')(farm),
        ),
        CHECK_CONFIG,
        "contains ';'",
    ),
    (
        "cmake-code-in-flag",
        toml_with(
            'src = ["csrc/tinyk_cpu.cpp"]',
            'src = ["csrc/tinyk_cpu.cpp"]\ncxx-flags = ["-DX=\\")\\nfile(WRITE /tmp/pwned x)"]',
        ),
        CHECK_CONFIG,
        "contains a control character",
    ),
    (
        "genex-in-flag",
        toml_with('src = ["csrc/tinyk_cpu.cpp"]', 'src = ["csrc/tinyk_cpu.cpp"]\ncxx-flags = ["$<TARGET_FILE:x>"]'),
        CHECK_CONFIG,
        "generator expression",
    ),
    (
        "kernel-depends-path-repo-id",
        general_with('kernel-depends = [{ repo-id = "../../../etc/passwd", version = 1 }]'),
        CHECK_CONFIG,
        "is not a Hub repo id",
    ),
    (
        "kernel-depends-option-revision",
        general_with('kernel-depends = [{ repo-id = "org/dep", revision = "--upload-pack=touch x" }]'),
        CHECK_CONFIG,
        "is not a branch, tag or commit",
    ),
    (
        "upstream-is-an-option",
        general_with('upstream = "-oProxyCommand=touch:x"'),
        CHECK_CONFIG,
        "`upstream` in [general] must be a git URL",
    ),
    (
        "upstream-ssh-option-host",
        general_with('upstream = "ssh://-oProxyCommand=x/repo"'),
        CHECK_CONFIG,
        "`upstream` in [general] must be a git URL",
    ),
    (
        "hub-repo-id-double-dot",
        general_with('[general.hub]\nrepo-id = "org/a..b"'),
        CHECK_CONFIG,
        "`repo-id` in [general.hub] is 'org/a..b'",
    ),
    # arguments
    (
        "build-unknown-variant",
        lambda farm: None,
        ["build", "kernels/tinyk", "--variant", "torch999-cxx11-cpu-x86_64-linux"],
        "torch999",
    ),
]


ALARM_S = 120  # a FIFO read by mistake blocks for ever: fail instead of hanging CI


class Hung(BaseException):
    """Not an Exception: no handler of the command line turns it into an error line."""


def _within(seconds: int, fn: Callable[[], int]) -> int:
    def expired(signum, frame):
        raise Hung(f"still running after {seconds} s (blocked reading a FIFO?)")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        return fn()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("name, setup, argv, fragment", CASES, ids=[c[0] for c in CASES])
def test_bad_input_gives_one_clear_line_and_writes_nothing(
    farm: Path, name: str, setup, argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    setup(farm)
    before = snapshot(farm)
    code = _within(ALARM_S, lambda: main([a.replace("{v}", host_cpu_variant()) for a in argv]))
    captured = capsys.readouterr()
    after = snapshot(farm)
    assert code != 0, f"{name}: exit 0\n{captured.out}"
    assert "Traceback" not in captured.err + captured.out
    errors = [line for line in captured.err.splitlines() if line.startswith("error:")]
    text = captured.err + captured.out
    table_text = " ".join(text.replace("│", " ").split())  # check's table wraps a long detail over lines
    assert fragment in text or fragment in table_text, f"{name}: expected {fragment!r} in:\n{text[-2000:]}"
    if argv[0] != "check":  # check prints its table; every other command exactly one error line
        assert len(errors) == 1, f"{name}: {captured.err}"
    assert after == before, f"{name}: wrote {sorted(set(after) ^ set(before))[:5]}"


def test_the_corpus_is_large_enough() -> None:
    assert len(CASES) >= 40, len(CASES)


def test_the_elf_reader_takes_a_name_that_is_not_utf8(tmp_path: Path) -> None:
    """The error names the file: shown escaped, never a UnicodeDecodeError."""
    from pybuild.elf import NotELFError, dynamic_entries

    path = os.path.join(os.fsencode(tmp_path), NON_UTF8 + b".so")
    with open(path, "wb") as f:
        f.write(b"\x7fELF truncated")
    with pytest.raises(NotELFError, match=r"bad\\xff\\xfename\.so: not a readable shared object"):
        dynamic_entries(Path(os.fsdecode(path)))


def test_a_2000_deep_junk_tree_in_build_is_replaced_by_the_next_build(tmp_path: Path) -> None:
    """The old tree is only removed (without recursion), never read past the depth limit."""
    from pybuild.build import build_variant
    from pybuild.manifest import load_manifest
    from pybuild.staging import leftovers
    from pybuild.variants import parse_variant_name

    k = tmp_path / "softcap"
    shutil.copytree(REPO / "tests" / "fixtures" / "noarch-softcap", k)
    deep_tree(k / "build" / "torch-cpu" / "junk", DEEP)
    r = build_variant(load_manifest(k), parse_variant_name("torch-cpu"))
    assert r.status == "built" and not (k / "build" / "torch-cpu" / "junk").exists()
    assert leftovers(k) == []


ESCAPE_NAME = "\x1b]0;owned\x07\x1b[2Jx"  # sets the terminal title, clears the screen


@pytest.mark.parametrize(
    "where, argv",
    [
        ("kernels/tinyk/tests", PUBLISH),  # a dry run lists it
        ("{variant}/tinyk", CHECK[:-1]),  # check's digest row names it
        ("kernels/softcap/torch-ext/softcap", BUILD_NOARCH),  # an error line names the link
    ],
    ids=["publish-dry-run", "check", "error-line"],
)
def test_terminal_escapes_in_file_names_are_printed_escaped(
    farm: Path, where: str, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    folder = farm / where.replace("{variant}", str(variant_dir(farm).relative_to(farm)))
    folder.mkdir(parents=True, exist_ok=True)
    if argv is BUILD_NOARCH:
        (folder / f"{ESCAPE_NAME}.py").symlink_to(folder / "__init__.py")
    else:
        (folder / f"{ESCAPE_NAME}.py").write_text("# x\n")
    main(argv)
    text = "".join(capsys.readouterr())
    assert "\x1b" not in text and "\x07" not in text
    assert "\\x1b]0;owned\\x07\\x1b[2Jx.py" in text, text[-3000:]
