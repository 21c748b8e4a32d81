"""README.md and docs/: links that resolve, a CLI page that covers every command and option, a
manifest page that lists every key each edition reads, the quick start CI runs, and performance
figures that are the committed run's."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

_FENCE = re.compile(r"^```.*?^```", re.M | re.S)
_CODE_SPAN = re.compile(r"`[^`]+`")
_LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*$", re.M)


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lowercased, punctuation dropped, spaces to '-'."""
    seen: dict[str, int] = {}
    out = set()
    for title in _HEADING.findall(_FENCE.sub("", text)):
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def broken_links(page: Path) -> list[str]:
    """Each relative link of ``page`` (outside code) whose file or heading does not exist."""
    text = page.read_text(encoding="utf-8")
    prose = _CODE_SPAN.sub("", _FENCE.sub("", text))
    broken = []
    for target in _LINK.findall(prose):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{page.name}: {target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest.read_text(encoding="utf-8")):
            broken.append(f"{page.name}: {target}: no heading #{anchor} in {dest.name}")
    return broken


def test_pages_exist() -> None:
    assert len(PAGES) > 5, PAGES


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_resolve(page: Path) -> None:
    assert broken_links(page) == []


def test_link_checker_finds_broken_links(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other page\n\n## A section: `[x]`\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n## Here\n\n"
        "[ok](other.md) [ok](other.md#a-section-x) [ok](#here) [web](https://example.org/x.md)\n"
        "`[in code](missing.md)`\n```\n[in a block](missing.md)\n```\n"
        "[gone](missing.md) [bad anchor](other.md#nope) [bad self](#nowhere)\n"
    )
    assert broken_links(page) == [
        "page.md: missing.md: no such file",
        "page.md: other.md#nope: no heading #nope in other.md",
        "page.md: #nowhere: no heading #nowhere in page.md",
    ]


def _help(*argv: str) -> str:
    env = {**os.environ, "COLUMNS": "1000"}
    done = subprocess.run(
        [sys.executable, "-m", "pybuild", *argv, "--help"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _section(text: str, title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"docs/cli.md has no section `## {title}`"
    return match.group(1)


def test_cli_page_has_a_section_per_command_naming_each_option() -> None:
    top = _help()
    commands = re.findall(r"^ {4}([a-z][a-z-]*)(?= |$)", top.split("options:")[0], re.M)
    assert len(commands) > 10, top
    cli = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    missing = []
    for command in commands:
        section = _section(cli, f"`{command}`")
        options = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", _help(command).split("options:", 1)[1]))
        for option in sorted(options - {"--help"}):
            if not re.search(rf"`{re.escape(option)}(?![\w-])", section):
                missing.append(f"{command} {option}")
    assert missing == [], f"docs/cli.md does not describe: {', '.join(missing)}"


def _commands_in_help() -> list[tuple[str, str]]:
    """(command, one-line help) in the order of `python -m pybuild --help`."""
    top = _help().split("options:")[0]
    # argparse puts a long command's line under its name
    return re.findall(r"^ {4}([a-z][a-z-]*)(?: +|\n +)(\S.*)$", top, re.M)


def test_cli_page_lists_the_commands_as_help_does() -> None:
    """docs/cli.md's table and sections: every command, in --help's order, with --help's line."""
    cli = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| \[`([a-z-]+)`\]\(#[a-z-]+\) \| (.+?) \|$", cli, re.M)
    sections = re.findall(r"^## `([a-z-]+)`$", cli, re.M)
    helped = _commands_in_help()
    assert [c for c, _ in rows] == [c for c, _ in helped], "the table of docs/cli.md, against --help"
    assert sections == [c for c, _ in helped], "the sections of docs/cli.md, against --help"
    for (command, text), (_, line) in zip(rows, helped, strict=True):
        assert text.replace("`", "") == line.replace("`", ""), command


def test_cli_page_shows_each_option_with_the_metavar_help_shows() -> None:
    """An option that takes a value is written with --help's name for it (`--variants FILE`)."""
    cli = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    wrong = []
    for command, _ in _commands_in_help():
        section = _section(cli, f"`{command}`")
        options = _help(command).split("options:", 1)[1]
        for option, metavar in re.findall(
            r"^ {2}(?:-\w [A-Z_]+, |-\w, )?(--[a-z][a-z-]*) ([A-Z_{][^ ,\n]*)", options, re.M
        ):
            if f"{option} {metavar}" not in section:
                wrong.append(f"{command} {option} {metavar}")
    assert wrong == [], f"docs/cli.md does not write these as --help does: {', '.join(wrong)}"


# A minimal [general] per edition the farm reads; the probes below add one unknown key somewhere and
# read the allowed keys back from the error, so the page is checked against the parser itself.
_GENERAL = {
    "5": 'name = "k"\nversion = 1\nedition = 5\nlicense = "MIT"\nbackends = ["cuda"]\n',
    "v4": 'name = "k"\nversion = 1\nlicense = "MIT"\nbackends = ["cuda"]\n',
    "v3": 'name = "k"\nbackends = ["cuda"]\n',
    "farm": 'name = "k"\nuniversal = false\n',
}
_SUBTABLES = ("hub", "cuda", "neuron", "tpu", "xpu")
_FRAMEWORKS = ("torch", "torch-noarch", "tvm-ffi")
_BACKENDS = ("cpu", "cuda", "metal", "rocm", "xpu")


def _probe_manifest(edition: str, where: str) -> str:
    framework = where if where in _FRAMEWORKS else "torch"
    text = "zzzz = 1\n" if where == "top" else ""
    text += "[general]\n" + _GENERAL[edition] + ("zzzz = 1\n" if where == "general" else "")
    if where.startswith("general."):
        text += f"[{where}]\nzzzz = 1\n"
    text += f"[{framework}]\n" + ("" if framework == "torch-noarch" else 'src = ["a.cpp"]\n')
    text += "zzzz = 1\n" if where == framework else ""
    if where.startswith("kernel."):
        depends = "" if edition == "farm" else 'depends = ["torch"]\n'
        text += f'[kernel.k]\nbackend = "{where[7:]}"\n{depends}src = ["k.cc"]\nzzzz = 1\n'
    return text


def _keys_the_parser_reads(tmp_path: Path) -> set[tuple[str, str, str]]:
    """(edition, table, key) for every key each edition reads; key "" for a table itself."""
    from pybuild.manifest import load_manifest

    read: set[tuple[str, str, str]] = set()
    places = [
        "top",
        "general",
        *(f"general.{t}" for t in _SUBTABLES),
        *_FRAMEWORKS,
        *(f"kernel.{b}" for b in _BACKENDS),
    ]
    for edition in _GENERAL:
        for where in places:
            if edition == "v3" and where in ("torch-noarch", "tvm-ffi"):
                continue  # a file with either table is taken for v4, so v3's reading cannot be probed here
            folder = tmp_path / f"{edition}-{where}"
            folder.mkdir()
            (folder / "build.toml").write_text(_probe_manifest(edition, where))
            with pytest.raises(Exception) as info:  # noqa: B017 (whichever error class the parser raises)
                load_manifest(folder)
            found = re.search(
                r"unknown key `(\w+)` in \[([^\]]+)\]; (?:allowed keys: (.*)|did you mean)", str(info.value)
            )
            assert found, f"{edition} {where}: {info.value}"
            key, table, allowed = found.groups()
            if key != "zzzz":  # the table itself is not read in this edition (e.g. [general.tpu] before 5)
                continue
            table = "kernel" if table.startswith("kernel.") else table
            for name in (allowed or "").split(", "):
                if table == "top level":
                    read.add((edition, name, ""))
                elif table == "general" and name in _SUBTABLES:
                    read.add((edition, f"general.{name}", ""))
                else:
                    read.add((edition, table, name))
    return read


def _keys_the_page_lists() -> set[tuple[str, str, str]]:
    page = (REPO / "docs" / "manifest.md").read_text(encoding="utf-8")
    listed: set[tuple[str, str, str]] = set()
    current: list[str] = []
    for row in _section(page, "Every key, by edition").splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) < 6 or not cells[0].startswith("`"):
            continue
        tables = [t.removesuffix(".<name>") for t in re.findall(r"`\[([^\]]+)\]`", cells[0])]
        keys = re.findall(r"`([a-z][\w-]*)`", cells[0])
        if tables and not keys:
            current = tables
        for edition, cell in zip(("farm", "v3", "v4", "5"), cells[1:5], strict=True):
            if cell == "–":
                continue
            only = re.findall(r"`([a-z][\w-]*)`", cell)
            for table in tables or current:
                for key in {"", *(only or keys)}:
                    listed.add((edition, table, key))
    return listed


def test_manifest_page_lists_every_key_each_edition_reads(tmp_path: Path) -> None:
    def probed(entry: tuple[str, str, str]) -> bool:
        return not (entry[0] == "v3" and entry[1] in ("torch-noarch", "tvm-ffi") and entry[2])

    read = set(filter(probed, _keys_the_parser_reads(tmp_path)))
    listed = set(filter(probed, _keys_the_page_lists()))
    assert sorted(read - listed) == [], "read by the parser, missing from docs/manifest.md"
    assert sorted(listed - read) == [], "in docs/manifest.md, not read by the parser"


def test_quick_start_test_command_is_what_ci_runs() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    command = "bash .ci/setup && python3 -m pytest -q"
    assert f"# 2. Run the whole test suite (this is what CI runs).\n{command}\n" in readme
    assert "bash .ci/setup && python3 -m pybuild build\n" in readme
    ci = [line.strip() for line in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert f"{command} || status=$?" in ci, ".ci/run must run exactly the README's test command"
    # and, beside it, in a fresh virtual environment: README command 1, then tests under that interpreter
    made = next((i for i, line in enumerate(ci) if line.startswith("python3 -m venv ")), None)
    assert made is not None, ".ci/run must make a fresh virtual environment beside the system-Python run"
    rest = ci[made:]
    activate = next(i for i, line in enumerate(rest) if line.startswith("source ") and "bin/activate" in line)
    assert "bash .ci/setup && python3 -m pybuild build" in rest[activate:]
    assert any(line.startswith("python3 -m pytest -q") for line in rest[activate:])
    # the run waits for that leg, and either leg's failure fails it
    assert 'wait "$venv_leg" || venv_status=$?' in ci
    assert ci[-1] == '[ "$status" = 0 ] && [ "$venv_status" = 0 ]'


def _headline_row(result: dict) -> str:
    t = result["timings"]
    return (
        f"| {result['kernel']} `{result['op']}` | {result['label']} | {result['dtype']} "
        f"| {t['ours']['ms'] * 1e3:.1f} | {t['ours']['gbps']:.0f} | {t['compile']['gbps']:.0f} "
        f"| {t['eager']['gbps']:.0f} |"
    )


def test_readme_performance_headline_is_the_committed_h200_run() -> None:
    # The README shows a few rows of the committed H200 run; a new run committed without updating
    # them, or a hand-edited figure, fails here.
    doc = json.loads((REPO / "benchmarks" / "results" / "gpu-nvidia-h200.json").read_text())
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    headline = _section(readme, "Performance")
    rows = [line for line in headline.splitlines() if re.match(r"\| \w+ `", line)]
    assert len(rows) >= 3, "README's Performance section shows no result rows"
    committed = {_headline_row(r) for r in doc["results"]}
    assert [r for r in rows if r not in committed] == [], "README rows differ from the committed H200 JSON"
    met = sum(x["met"] for r in doc["results"] for x in r["targets"])
    total = sum(len(r["targets"]) for r in doc["results"])
    git = doc["environment"]["git"]
    assert f"{met} of {total} targets met; large copy {doc['copy_large']['gbps']:.0f} GB/s; source {git}" in headline
    assert f"source commit\n`{git[:7]}`" in headline or f"source commit `{git[:7]}`" in headline


def test_every_documented_command_is_run_or_listed_with_a_reason() -> None:
    """Each command of a shell block in README.md and docs/ is run as written on a scratch farm
    (tests/integration/test_doc_commands.py) or listed with why it cannot run here; an entry no page
    shows any more goes too."""
    from tests.helpers.doc_commands import NOT_HERE, RUN, documented_commands

    shown = {c.text: c.page for c in documented_commands()}
    assert len(shown) > 30, shown
    unlisted = [f"{page}: {text}" for text, page in shown.items() if text not in RUN and text not in NOT_HERE]
    assert unlisted == [], "run these in tests/helpers/doc_commands.py RUN, or say in NOT_HERE why not"
    stale = sorted((set(RUN) | set(NOT_HERE)) - set(shown))
    assert stale == [], "listed in tests/helpers/doc_commands.py, shown on no page"
    assert not set(RUN) & set(NOT_HERE)
    assert all(reason.strip() for reason in NOT_HERE.values())


def test_commands_are_read_whole_from_shell_blocks(tmp_path: Path) -> None:
    from tests.helpers.doc_commands import documented_commands

    page = tmp_path / "page.md"
    page.write_text(
        "```bash\npython -m pybuild build   # a comment\nFOO=1 python -m pybuild x \\\n  --y 'a # b'\n"
        "\n# only a note\n```\n"
        "```\npython -m pybuild build [--all]\n```\n```python\nimport torch\n```\n"
    )
    assert [c.text for c in documented_commands([page])] == [
        "python -m pybuild build",
        "FOO=1 python -m pybuild x --y 'a # b'",
    ]


def test_readme_tour_names_every_command() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    tour = _section(readme, "A 30-second tour")
    missing = [c for c, _ in _commands_in_help() if not re.search(rf"(?<![\w-]){re.escape(c)}(?![\w-])", tour)]
    assert missing == [], f"the README tour does not name: {missing}"
