"""Reading a release's files exactly once into a manifest, and back for the upload, verified.

``hash_file`` streams a file once into its (size, sha256, git blob id): the plan's manifest, with no
whole-file read. :class:`VerifiedFile` is what the upload reads instead of the path: every pass over
it from the start to the recorded size is hashed as it is read and must give the manifest's sha256,
or it raises a :class:`~pybuild.errors.PublishError` naming the file; the commit that would publish
it is never sent.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
from pathlib import Path
from typing import Any

from ..errors import PublishError
from ..safeload import shown

CHUNK = 1 << 20


def changed_error(path: Path, why: str) -> PublishError:
    return PublishError(
        f"{shown(path)}: changed after it was checked ({why}); nothing was committed: let the build "
        "finish, run `python -m pybuild check` and publish again"
    )


def hash_file(path: Path) -> tuple[int, str, str]:
    """``(size, sha256 hex, git blob sha1 hex)`` of ``path`` read once in chunks, never following a
    symlink; a file whose size changes while it is read raises naming it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise changed_error(path, f"it cannot be opened: {e.strerror}") from None
    with os.fdopen(fd, "rb", buffering=0) as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise PublishError(f"{shown(path)}: not a regular file; publish uploads files only: remove it")
        size = st.st_size
        sha256, git = hashlib.sha256(), hashlib.sha1(b"blob %d\0" % size)
        read = 0
        while chunk := f.read(CHUNK):
            read += len(chunk)
            if read > size:
                break
            sha256.update(chunk)
            git.update(chunk)
    if read != size:
        raise changed_error(path, f"{size} bytes when opened, {read} read")
    return size, sha256.hexdigest(), git.hexdigest()


class VerifiedFile(io.BufferedIOBase):
    """``path`` as a read-only binary file for ``huggingface_hub``'s upload, checked against the
    release manifest's ``size`` and ``sha256`` on every pass read from its start (a seek elsewhere
    makes that pass unverifiable: the next pass from 0 is verified again). The file is opened on the
    first read of a pass and closed at its end, so a release of many files holds few descriptors.
    SEEK_END is relative to the recorded size: the client never learns another size."""

    def __init__(self, path: Path, size: int, sha256: str) -> None:
        super().__init__()
        self.path, self.size, self.sha256 = path, size, sha256
        self._file: io.FileIO | None = None
        self._pos = 0
        self._hash = hashlib.sha256()
        self._sequential = True
        self._done = False  # this pass reached the recorded size and was checked
        self.verified_passes = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self.size}[whence]
        target = base + offset
        if target < 0:
            raise ValueError(f"negative seek position {target}")
        if target == 0:
            self._hash, self._sequential, self._done = hashlib.sha256(), True, False
        elif target != self._pos:
            self._sequential, self._done = False, False
        self._pos = target
        if self._file is not None:
            self._file.seek(target)
        return target

    def _open(self) -> io.FileIO:
        if self._file is None:
            try:
                fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
            except OSError as e:
                raise changed_error(self.path, f"it cannot be opened: {e.strerror}") from None
            self._file = io.FileIO(fd, "rb")
            self._file.seek(self._pos)
        return self._file

    def read(self, size: int | None = -1) -> bytes:
        if self._done:
            return b""
        f = self._open()
        remaining = self.size - self._pos
        want = remaining if size is None or size < 0 else size
        data = f.read(max(want, 0)) or b""
        if len(data) > remaining:
            raise changed_error(self.path, f"{self.size} bytes checked, it has more")
        if len(data) < min(want, remaining):  # a regular file reads short only at its end
            raise changed_error(self.path, f"{self.size} bytes checked, it ends at {self._pos + len(data)}")
        if self._sequential:
            self._hash.update(data)
        self._pos += len(data)
        if self._pos == self.size:
            self._finish(f)
        return data

    def _finish(self, f: io.FileIO) -> None:
        """A pass reached the recorded size: nothing may follow, and a sequential pass must match."""
        if f.read(1):
            raise changed_error(self.path, f"{self.size} bytes checked, it has more")
        if self._sequential:
            got = self._hash.hexdigest()
            if got != self.sha256:
                raise changed_error(self.path, f"sha256 {self.sha256[:12]}… checked, {got[:12]}… read")
            self.verified_passes += 1
        f.close()
        self._file, self._done = None, True

    def read1(self, size: int = -1) -> bytes:
        return self.read(size)

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        super().close()
