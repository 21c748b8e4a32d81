"""`build --sandbox`: a build step that reads $HOME, writes outside its folders, opens a socket or
looks for a token in its environment fails that step, and nothing escapes."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from pybuild.__main__ import main
from pybuild.sandbox import sandboxed
from tests.helpers.fakebuild import make_kernel

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap (apt-get install bubblewrap)")

SECRET = "hf_not_for_kernels_0123456789"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home folder with a private key in it."""
    h = tmp_path / "home"
    (h / ".ssh").mkdir(parents=True)
    (h / ".ssh" / "id_ed25519").write_text(SECRET)
    return h


def run_in_sandbox(script: str, tmp_path: Path, home: Path) -> subprocess.CompletedProcess[str]:
    work, kernel = tmp_path / "work", tmp_path / "kernel"
    work.mkdir(exist_ok=True)
    kernel.mkdir(exist_ok=True)
    cmd = sandboxed(
        [sys.executable, "-c", script],
        {**os.environ, "HF_TOKEN": SECRET},
        cwd=work,
        writable=[work],
        readable=[kernel, Path(sys.executable).resolve().parent.parent, Path(sys.prefix)],
        home=home,
    )
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def test_the_home_folder_is_empty(tmp_path: Path, home: Path) -> None:
    r = run_in_sandbox(f"print(open({str(home / '.ssh' / 'id_ed25519')!r}).read())", tmp_path, home)
    assert r.returncode != 0 and "No such file" in r.stderr and SECRET not in r.stdout + r.stderr


def test_only_the_given_folders_are_writable(tmp_path: Path, home: Path) -> None:
    """The kernel folder is read-only; /tmp and HOME are the sandbox's own, gone when it ends."""
    in_kernel = tmp_path / "kernel" / "planted.h"
    r = run_in_sandbox(f"open({str(in_kernel)!r}, 'w').write('x')", tmp_path, home)
    assert r.returncode != 0 and "Read-only file system" in r.stderr and not in_kernel.exists()
    in_tmp, in_home = tmp_path / "elsewhere.txt", home / ".bashrc"
    script = f"open({str(in_tmp)!r}, 'w').write('x'); open({str(in_home)!r}, 'w').write('x')"
    assert run_in_sandbox(script, tmp_path, home).returncode == 0
    assert not in_tmp.exists() and not in_home.exists()  # written into the sandbox's own, discarded
    inside = tmp_path / "work" / "out.o"
    assert run_in_sandbox(f"open({str(inside)!r}, 'w').write('x')", tmp_path, home).returncode == 0
    assert inside.read_text() == "x"


def test_no_network(tmp_path: Path, home: Path) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    accepted: list[object] = []
    server.settimeout(5)
    t = threading.Thread(target=lambda: accepted.append(_accept(server)), daemon=True)
    t.start()
    r = run_in_sandbox(f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3)", tmp_path, home)
    t.join(6)
    server.close()
    assert r.returncode != 0 and accepted == [None]


def _accept(server: socket.socket) -> object:
    try:
        conn, _ = server.accept()
    except OSError:
        return None
    conn.close()
    return "connected"


def test_no_environment_but_the_allow_list(tmp_path: Path, home: Path) -> None:
    r = run_in_sandbox("import os, json; print(json.dumps(dict(os.environ)))", tmp_path, home)
    assert r.returncode == 0, r.stderr
    assert SECRET not in r.stdout and '"HOME": "/tmp/home"' in r.stdout and "CCACHE_DISABLE" in r.stdout


@pytest.mark.slow
def test_a_sandboxed_build_cannot_include_a_file_from_home(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The kernel's source includes a private file by its absolute path: without the sandbox the
    compile reads it; with it, that compile step fails and the file's content is nowhere."""
    pytest.importorskip("torch")
    secret_h = home / ".ssh" / "secret.h"
    secret_h.write_text(f'static const char *stolen = "{SECRET}";\n')
    kernel = make_kernel(tmp_path / "kernels")
    (kernel / "csrc" / "tinyk_cpu.cpp").write_text(f'#include "{secret_h}"\nconst char *leak() {{ return stolen; }}\n')
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HF_TOKEN", SECRET)
    assert main(["build", str(kernel), "--sandbox", "-q"]) == 6  # a compile error: the file is not there
    err = capsys.readouterr().err
    assert "secret.h" in err and SECRET not in err
    assert not list((kernel / "build").glob("torch*"))
    leaks = [p for p in kernel.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    assert leaks == []
    assert main(["build", str(kernel), "--no-sandbox", "-q"]) == 0  # the same build, unsandboxed, reads it
