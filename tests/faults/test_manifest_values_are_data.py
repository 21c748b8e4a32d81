"""A build.toml is untrusted input: no value in it becomes CMake, TOML or YAML syntax.

Every value either reaches the generated files as data (CMake bracket arguments, tomlkit, PyYAML's safe
dumper) and round-trips exactly, or is refused at load with one line naming the key and the fix. The
configure test runs CMake for real on a hostile manifest: nothing runs, nothing is written outside the
build folder, no environment value shows up anywhere.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pybuild.__main__ import main
from pybuild.card import front_matter
from pybuild.errors import ManifestError
from pybuild.generate import ProjectSpec, cmake_bracket, render_project, write_project
from pybuild.manifest import load_manifest, parse_manifest
from tests.helpers.corpus import snapshot
from tests.helpers.fakebuild import make_kernel

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SECRET = "s3cr3t-value-of-the-builder"
#: What a hostile contributor would put in a flag (of what CMake could represent): each reaches the
#: compiler as exactly one argument.
HOSTILE_FLAGS = (
    '-DB=")file(WRITE ${CMAKE_SOURCE_DIR}/../pwned x)#',
    "-DC=${SECRET_TOKEN}",
    "-DD=$ENV{SECRET_TOKEN}",
    "-DG=$(touch pwned-shell)",
    "-DH=`touch pwned-tick`",
    "-DI=a>b,c",
    "-DJ='x y' \\n",
)


def toml_string(value: str) -> str:
    """``value`` as a TOML basic string (the test's own writer, independent of the code under test)."""
    out = []
    for c in value:
        if c in '"\\' or ord(c) < 32 or ord(c) == 127:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def manifest_text(
    *,
    cxx_flags: tuple[str, ...] = (),
    torch_flags: tuple[str, ...] = (),
    src: str = "csrc/tinyk_cpu.cpp",
    license: str = "MIT",
) -> str:
    """The tiny kernel's manifest in upstream's current edition, with these values."""
    return f"""\
[general]
name = "tinyk"
version = 1
edition = 5
license = {toml_string(license)}
backends = ["cpu"]

[torch]
src = ["torch-ext/torch_binding.cpp"]
cxx-flags = [{", ".join(map(toml_string, torch_flags))}]

[kernel.tinyk_cpu]
backend = "cpu"
depends = ["torch"]
src = [{toml_string(src)}]
cxx-flags = [{", ".join(map(toml_string, cxx_flags))}]
"""


@pytest.fixture
def tinyk(tmp_path: Path) -> Path:
    return make_kernel(tmp_path / "kernels")


def error_line(fn) -> str:
    with pytest.raises(ManifestError) as info:
        fn()
    text = str(info.value)
    assert "\n" not in text, text
    return text


# --- refused, one line naming the key and the fix ------------------------------------------------------

REFUSED_FLAGS = [
    ("newline", '-DA=")\nfile(WRITE x)', "contains a control character"),
    ("semicolon", "-DA=1;-DB=2", "contains ';' (CMake's list separator)"),
    ("genex", "-DA=$<TARGET_FILE:x>", "contains '$<' (a CMake generator expression)"),
    ("open-bracket", "-DA=[", "contains a square bracket"),
    ("close-bracket", "-DA=]", "contains a square bracket"),
    ("trailing-backslash", "-DA=x\\", "ends in a backslash"),
    ("empty", "", "is empty"),
    ("escape", "-DA=\x1b[31m", "contains a control character"),
]


@pytest.mark.parametrize("name, flag, fragment", REFUSED_FLAGS, ids=[c[0] for c in REFUSED_FLAGS])
def test_a_flag_cmake_would_split_or_evaluate_is_refused(tinyk: Path, name: str, flag: str, fragment: str) -> None:
    for where in ("kernel", "torch"):
        text = manifest_text(cxx_flags=(flag,)) if where == "kernel" else manifest_text(torch_flags=(flag,))
        line = error_line(lambda text=text: parse_manifest(text, tinyk / "build.toml"))
        section = "[kernel.tinyk_cpu]" if where == "kernel" else "[torch]"
        assert f"`cxx-flags` in {section}: flag" in line and fragment in line, line
        assert "write each flag as one plain argument" in line


REFUSED_PATHS = [
    ("semicolon", "csrc/a.cpp;/etc/passwd.cpp", "';'"),
    ("dollar", "csrc/${HOME}.cpp", "'$'"),
    ("env", "csrc/$ENV{HOME}.cpp", "'$'"),
    ("bracket", "csrc/a]].cpp", "']'"),
    ("quote", 'csrc/a".cpp', "'\"'"),
    ("backtick", "csrc/a`id`.cpp", "'`'"),
    ("backslash", "csrc/a\\b.cpp", "'\\\\'"),
    ("glob", "csrc/*.cpp", "'*'"),
]


@pytest.mark.parametrize("name, rel, fragment", REFUSED_PATHS, ids=[c[0] for c in REFUSED_PATHS])
def test_a_path_with_list_or_expansion_characters_is_refused_by_name(
    tinyk: Path, name: str, rel: str, fragment: str
) -> None:
    """The decoy file with that literal name exists: the inside-the-kernel check alone would pass it."""
    decoy = tinyk / rel
    decoy.parent.mkdir(parents=True, exist_ok=True)
    decoy.write_text("// decoy\n")
    line = error_line(lambda: parse_manifest(manifest_text(src=rel), tinyk / "build.toml"))
    assert "`src` in [kernel.tinyk_cpu]: path" in line and fragment in line, line
    assert "rename the file with letters, digits" in line


def test_check_config_refuses_the_semicolon_path_in_one_line(tinyk: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tinyk / "csrc" / "a.cpp;x.cpp").write_text("// decoy\n")
    (tinyk / "build.toml").write_text(manifest_text(src="csrc/a.cpp;x.cpp"))
    code = main(["check-config", str(tinyk)])
    err = capsys.readouterr().err
    assert code == 3 and "Traceback" not in err
    assert [line for line in err.splitlines() if line.startswith("error:")] == [
        f"error: {tinyk / 'build.toml'}: `src` in [kernel.tinyk_cpu]: path 'csrc/a.cpp;x.cpp' contains ';', "
        "which CMake or a shell would read as a list or an expansion; rename the file with letters, digits, "
        "'.', '_', '-' and '/'"
    ]


# --- handled: values reach CMake as data ---------------------------------------------------------------

ACCEPTED = list(HOSTILE_FLAGS)


def test_hostile_flags_are_bracket_arguments_in_the_project(tinyk: Path) -> None:
    m = parse_manifest(manifest_text(cxx_flags=tuple(ACCEPTED)), tinyk / "build.toml")
    text = render_project(m, ProjectSpec("cpu", "_tinyk_cpu_0123456789"))["CMakeLists.txt"]
    line = next(x for x in text.splitlines() if "pybuild_language_options(_options" in x)
    assert line == '  pybuild_language_options(_options "CXX,OBJCXX" ' + " ".join(map(cmake_bracket, ACCEPTED)) + ")"
    assert "SECRET_TOKEN" not in text.replace(line, "")  # the value appears once, inside its bracket argument


@pytest.mark.parametrize(
    "value, expected",
    [
        ("plain", "[[plain]]"),
        ("a]]b", "[=[a]]b]=]"),
        ("a]", "[=[a]]=]"),
        ("]=]]]", "[==[]=]]]]==]"),
        ("x]=", "[[x]=]]"),
        ('${HOME} $ENV{HOME} \\n "', '[[${HOME} $ENV{HOME} \\n "]]'),
    ],
)
def test_the_bracket_level_is_one_the_value_cannot_close(value: str, expected: str) -> None:
    assert cmake_bracket(value) == expected


def test_a_control_character_never_reaches_a_bracket_argument() -> None:
    with pytest.raises(ValueError, match="control character"):
        cmake_bracket("\nfile(WRITE x)")


def shell_argv(command: str, cwd: Path, env: dict[str, str]) -> list[str]:
    """The arguments the compile ``command`` passes, as the shell ninja runs it parses them (the
    compiler replaced by printf, so nothing is compiled)."""
    compiler, _, rest = command.partition(" ")
    out = subprocess.run(
        ["/bin/sh", "-c", "printf '%s\\0' " + rest], cwd=cwd, env=env, capture_output=True, check=True
    ).stdout
    return out.decode().split("\0")[:-1]


@pytest.mark.slow
def test_configure_of_a_hostile_manifest_runs_nothing_and_leaks_nothing(tinyk: Path, tmp_path: Path) -> None:
    """Real CMake on the generated project: each flag reaches the compile command as one argument,
    byte for byte; nothing is written outside the build folder; the environment's secret appears
    nowhere."""
    if not shutil.which("cmake") or not shutil.which("ninja"):
        pytest.skip("needs cmake and ninja")
    pytest.importorskip("torch")
    (tinyk / "build.toml").write_text(manifest_text(cxx_flags=tuple(ACCEPTED)))
    m = load_manifest(tinyk)
    write_project(m, ProjectSpec("cpu", "_tinyk_cpu_0123456789"))
    before = snapshot(tmp_path)
    build = tmp_path / "kernels" / "tinyk" / "build" / "cmake"
    env = {**os.environ, "SECRET_TOKEN": SECRET}
    configure = subprocess.run(
        ["cmake", "-S", str(tinyk), "-B", str(build), "-G", "Ninja", f"-DPython3_EXECUTABLE={sys.executable}",
         "-DPYBUILD_BACKEND=cpu", "-DOPS_NAME=_tinyk_cpu_0123456789"],
        env=env, capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert configure.returncode == 0, configure.stdout + configure.stderr
    commands = subprocess.run(
        ["ninja", "-C", str(build), "-t", "commands"], capture_output=True, text=True, check=True
    ).stdout
    argv = shell_argv(next(c for c in commands.splitlines() if "tinyk_cpu.cpp" in c and " -c " in c), build, env)
    for flag in ACCEPTED:
        assert argv.count(flag) == 1, (flag, argv)
    binding = shell_argv(next(c for c in commands.splitlines() if "torch_binding.cpp" in c and " -c " in c), build, env)
    assert not set(ACCEPTED) & set(binding)  # a kernel section's flags reach its own sources only
    after = snapshot(tmp_path)
    outside = [p for p in set(after) ^ set(before) if not p.startswith(b"kernels/tinyk/build")]
    assert outside == [], outside
    assert not list(tmp_path.rglob("pwned*")) and not list(Path("/tmp").glob("pwned*"))
    leaks = [str(p) for p in build.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    assert leaks == [] and SECRET not in configure.stdout + configure.stderr + commands


# --- property: any string either round-trips or is refused ---------------------------------------------

METACHARACTERS = "\"'\\$`;[]{}()<>=#*?|&,~!%^:\n\r\t\x1b\x00 -_./=\u00e9\u2028"
STRINGS = st.text(alphabet=st.sampled_from(METACHARACTERS) | st.characters(codec="utf-8"), max_size=24)
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def cmake_read_back(values: list[str], work: Path) -> list[str]:
    """What CMake itself reads from each value's bracket argument (script mode; nothing is configured)."""
    script = work / "read.cmake"
    for i in range(len(values)):
        (work / f"out{i}").unlink(missing_ok=True)
    lines = [f'set(v{i} {cmake_bracket(v)})\nfile(WRITE [[{work}/out{i}]] "${{v{i}}}")' for i, v in enumerate(values)]
    script.write_text("\n".join(lines) + "\n")
    subprocess.run(["cmake", "-P", str(script)], check=True, capture_output=True, env={"PATH": os.environ["PATH"]})
    return [(work / f"out{i}").read_bytes().decode() for i in range(len(values))]


@PROPERTY
@given(flag=STRINGS, license=STRINGS)
def test_any_flag_or_license_round_trips_or_is_refused(tinyk: Path, flag: str, license: str) -> None:
    if not shutil.which("cmake"):
        pytest.skip("needs cmake")
    text = manifest_text(cxx_flags=(flag,), license=license)
    try:
        m = parse_manifest(text, tinyk / "build.toml")
    except ManifestError as e:
        assert "\n" not in str(e) and "`cxx-flags` in [kernel.tinyk_cpu]" in str(e), str(e)
        return
    assert m.kernels[0].cxx_flags == (flag,) and m.license == license
    files = render_project(m, ProjectSpec("cpu", "_tinyk_cpu_0123456789"))
    assert cmake_bracket(flag) in files["CMakeLists.txt"]
    assert cmake_read_back([flag], tinyk.parent) == [flag]
    project = tomllib.loads(files["pyproject.toml"])["project"]
    assert project["license"] == {"text": license} and set(project) == {
        "name",
        "version",
        "description",
        "license",
        "requires-python",
        "dependencies",
    }
    assert yaml.safe_load(front_matter(license)) == {"license": license.lower(), "tags": ["kernels", "pybuild"]}


@PROPERTY
@given(rel=STRINGS)
def test_any_source_path_round_trips_or_is_refused(tinyk: Path, rel: str) -> None:
    if not shutil.which("cmake"):
        pytest.skip("needs cmake")
    name = f"csrc/{rel}.cpp"
    try:
        decoy = tinyk / name
        if "\0" not in name and decoy.resolve().is_relative_to(tinyk.resolve()):
            decoy.parent.mkdir(parents=True, exist_ok=True)
            decoy.write_text("// decoy\n")
    except (OSError, ValueError):
        pass
    try:
        m = parse_manifest(manifest_text(src=name), tinyk / "build.toml")
    except ManifestError as e:
        assert "\n" not in str(e) and "`src` in [kernel.tinyk_cpu]" in str(e), str(e)
        return
    files = render_project(m, ProjectSpec("cpu", "_tinyk_cpu_0123456789"))
    assert cmake_bracket(name) in files["CMakeLists.txt"]
    assert cmake_read_back([name], tinyk.parent) == [name]


# --- license: written by tomlkit and PyYAML, warned about when not SPDX ---------------------------------

CRAFTED_LICENSE = 'MIT" }\n[project.scripts]\nevil = "os:system"\n---\nextra_gated_prompt: "give me your token'


def test_a_crafted_license_stays_one_value_in_pyproject_and_the_card(tinyk: Path) -> None:
    m = parse_manifest(manifest_text(license=CRAFTED_LICENSE), tinyk / "build.toml")
    pyproject = tomllib.loads(render_project(m, ProjectSpec("cpu", "_tinyk_cpu_0123456789"))["pyproject.toml"])
    assert set(pyproject) == {"build-system", "project"} and "scripts" not in pyproject["project"]
    assert pyproject["project"]["license"] == {"text": CRAFTED_LICENSE}
    assert yaml.safe_load(front_matter(CRAFTED_LICENSE)) == {
        "license": CRAFTED_LICENSE.lower(),
        "tags": ["kernels", "pybuild"],
    }


@pytest.mark.parametrize(
    "license, warned",
    [
        ("Apache-2.0", False),
        ("apache-2.0", False),
        ("MIT OR Apache-2.0", False),
        ("other", True),
        ("not a license", True),
    ],
)
def test_a_license_that_is_not_spdx_is_accepted_with_a_warning(
    tinyk: Path, license: str, warned: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """kernel-builder takes any string, so check-config accepts it (exit 0) and warns in one line."""
    (tinyk / "build.toml").write_text(manifest_text(license=license))
    assert main(["check-config", str(tinyk)]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    expected = f"warning: {tinyk / 'build.toml'}: `license` in [general] is {license!r}, not an SPDX license expression"
    assert [w.startswith(expected) for w in warnings] == ([True] if warned else [])


#: Every other string key of an edition-5 manifest: (where it goes in the TOML, the model's reading).
STRING_KEYS = {
    "name": ("[general]\nname = {v}\n", lambda m: m.name),
    "upstream": ("[general]\nupstream = {v}\n", lambda m: m.upstream),
    "source": ("[general]\nsource = {v}\n", lambda m: m.source),
    "hub-repo-id": ("[general.hub]\nrepo-id = {v}\n", lambda m: m.repo_id),
    "hub-branch": ("[general.hub]\nbranch = {v}\n", lambda m: m.hub_branch),
    "kernel-depends-repo-id": (
        "[general]\nkernel-depends = [{{ repo-id = {v}, version = 1 }}]\n",
        lambda m: m.kernel_depends[0][0],
    ),
    "kernel-depends-revision": (
        '[general]\nkernel-depends = [{{ repo-id = "org/dep", revision = {v} }}]\n',
        lambda m: m.kernel_depends[0][1],
    ),
    "python-depends": ("[general]\npython-depends = [{v}]\n", lambda m: m.python_depends[0]),
}


def with_key(key: str, value: str) -> str:
    """The tiny kernel's edition-5 manifest with ``value`` at ``key`` (the key's table merged in)."""
    snippet = STRING_KEYS[key][0].format(v=toml_string(value))
    table, _, line = snippet.partition("\n")
    base = manifest_text()
    if key == "name":
        return base.replace('name = "tinyk"\n', line)
    if table in base:
        return base.replace(table + "\n", table + "\n" + line, 1)
    return base + "\n" + snippet


@PROPERTY
@given(key=st.sampled_from(sorted(STRING_KEYS)), value=STRINGS)
def test_any_string_key_round_trips_or_is_refused(tinyk: Path, key: str, value: str) -> None:
    """Refused in one line naming the file, or read back exactly; every generated file still renders
    and parses, its TOML with no key the template did not write."""
    try:
        m = parse_manifest(with_key(key, value), tinyk / "build.toml")
    except ManifestError as e:
        assert "\n" not in str(e) and str(tinyk / "build.toml") in str(e), str(e)
        return
    assert STRING_KEYS[key][1](m) == value
    files = render_project(m, ProjectSpec("cpu", "_tinyk_cpu_0123456789"))
    project = tomllib.loads(files["pyproject.toml"])["project"]
    assert project["name"] == m.name and project["dependencies"] == ["torch", *m.python_depends]
