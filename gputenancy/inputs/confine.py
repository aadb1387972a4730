"""Reads confined to the repository: the files of a directory that kustomize may read, walked without
trusting a single link, and copied into a staging tree.

`walk(root, top)` lists every file under ``root/top`` (``base`` or ``overlays/<cluster>``) as the
path kustomize will see and the real file behind it. A symlink is followed only when its target
resolves inside the repository root and is a regular file or a directory; a link that leaves the
root, dangles, loops, or points at a FIFO, socket or device is a finding (`source-symlink`,
`source-not-regular`), and so is any special file met on the way. A directory reached twice
through links (``a -> ..``) is a loop. Sizes are bounded: one file at most `MAX_FILE_BYTES`, a
tree at most `MAX_TREE_BYTES` and `MAX_TREE_FILES` files (`source-size`), so a link to a large
directory inside the repository cannot make every run copy it.

`copy(entries, dest)` writes the listed files into a staging directory, reading each real file
with ``O_NOFOLLOW`` and at most its size bound, so nothing outside the root is ever read even
when a path changes between the walk and the copy.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import stat
from pathlib import Path

from gputenancy.common.findings import Finding, Origin

MAX_FILE_BYTES = 4 * 1024 * 1024
"""Largest file kustomize may read from base/ or an overlay (4 MiB: far above any patch or static
object list, small enough that a run stays cheap)."""

MAX_TREE_BYTES = 64 * 1024 * 1024
"""Most bytes staged from one directory (base/ or one overlay)."""

MAX_TREE_FILES = 10_000
"""Most files staged from one directory."""

DOCS = {
    "source-symlink": """A symlink under tenants/, base/ or overlays/ resolves inside the repository (not
into .git/), to a regular file or a directory, without a loop. Its target is what the pipeline reads; a link that
leaves the repository would copy any file of the machine (the CI job's environment in /proc
included) into generated/.

Passes: base/objects.yaml -> shared/objects.yaml (inside the repository).
Fails: overlays/prod/secrets.yaml -> /proc/self/environ; base/loop -> base/loop; base/c -> ../.git/config.
""",
    "source-not-regular": """Every input is a regular file or a directory: FIFOs, sockets and devices (or
links to them) are refused, since reading one can block forever or return endless bytes.

Passes: base/workloadpriorityclasses.yaml, a regular file.
Fails: base/pipe, a FIFO; overlays/prod/zero.yaml -> /dev/zero.
""",
    "source-size": """Input files are bounded: a tenant, cluster or platform file or a kustomization at most
256 KiB, any other file kustomize reads from base/ or an overlay at most 4 MiB, and each of those
directories at most 64 MiB in 10,000 files (links followed).

Passes: base/workloadpriorityclasses.yaml of a few KiB.
Fails: overlays/prod/big.yaml of 5 MiB; base/vendor -> a directory of 100,000 files.
""",
}


@dataclasses.dataclass(frozen=True)
class Entry:
    """A file to stage: `rel` is its POSIX path under the walked directory, `real` the file read."""

    rel: str
    real: str
    size: int


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "not a regular file"


class _Walk:
    def __init__(self, root: Path, top: str) -> None:
        self.root = os.path.realpath(root)
        self.top = top
        self.entries: list[Entry] = []
        self.findings: list[Finding] = []
        self.bytes = 0
        self.full = False

    def where(self, rel: str) -> Origin:
        return Origin(f"{self.top}/{rel}" if rel else self.top)

    def refuse(self, rel: str, rule: str, message: str) -> None:
        self.findings.append(self.where(rel).finding(rule, message))

    def target(self, path: str, rel: str) -> str | None:
        """The resolved target of the symlink `path`, or None after a finding."""
        try:
            real = os.path.realpath(path, strict=True)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                self.refuse(rel, "source-symlink", "symlink loop")
            elif exc.errno == errno.ENOENT:
                self.refuse(rel, "source-symlink", "symlink target does not exist")
            else:
                self.refuse(rel, "source-symlink", f"cannot resolve symlink: {exc.strerror}")
            return None
        except RuntimeError:  # Python < 3.13 reports loops this way
            self.refuse(rel, "source-symlink", "symlink loop")
            return None
        if not _inside(real, self.root):
            self.refuse(rel, "source-symlink", "symlink points outside the repository root")
            return None
        if _inside(real, os.path.join(self.root, ".git")):
            self.refuse(rel, "source-symlink", "symlink points into .git/ (its config can hold credentials)")
            return None
        return real

    def visit(self, path: str, rel: str, chain: tuple[str, ...]) -> None:
        if self.full:
            return
        try:
            info = os.lstat(path)
        except OSError as exc:
            self.refuse(rel, "source-read", f"cannot read: {exc.strerror}")
            return
        real = path
        if stat.S_ISLNK(info.st_mode):
            resolved = self.target(path, rel)
            if resolved is None:
                return
            real = resolved
            try:
                info = os.stat(real)
            except OSError as exc:
                self.refuse(rel, "source-read", f"cannot read: {exc.strerror}")
                return
        if stat.S_ISDIR(info.st_mode):
            here = os.path.realpath(real)
            if here in chain:
                self.refuse(rel, "source-symlink", "symlink loop: the directory contains itself")
                return
            try:
                names = sorted(os.listdir(real))
            except OSError as exc:
                self.refuse(rel, "source-read", f"cannot list directory: {exc.strerror}")
                return
            for name in names:
                self.visit(os.path.join(real, name), f"{rel}/{name}" if rel else name, (*chain, here))
            return
        if not stat.S_ISREG(info.st_mode):
            self.refuse(rel, "source-not-regular", _kind(info.st_mode))
            return
        if info.st_size > MAX_FILE_BYTES:
            self.refuse(rel, "source-size", f"file is {info.st_size} bytes; the limit is {MAX_FILE_BYTES}")
            return
        self.bytes += info.st_size
        self.entries.append(Entry(rel, os.path.realpath(real), info.st_size))
        if self.bytes > MAX_TREE_BYTES or len(self.entries) > MAX_TREE_FILES:
            self.full = True
            self.refuse(
                "",
                "source-size",
                f"more than {MAX_TREE_FILES} files or {MAX_TREE_BYTES} bytes (symlinks followed);"
                " keep only what kustomize needs here",
            )


def walk(root: Path, top: str) -> tuple[list[Entry], list[Finding]]:
    """Every file under root/top (POSIX `top`), links followed only inside the root; and findings.
    A missing directory gives nothing."""
    w = _Walk(root, top)
    path = os.path.join(root, top)
    if not os.path.lexists(path):
        return [], []
    w.visit(path, "", ())
    return w.entries, w.findings


def copy(entries: list[Entry], dest: Path) -> None:
    """Write `entries` under `dest` (which may exist). Reads never follow a link: `real` paths are
    resolved already, and a file replaced by a link since the walk fails to open."""
    made: set[str] = set()
    for entry in entries:
        target = os.path.join(dest, *entry.rel.split("/"))
        parent = os.path.dirname(target)
        if parent not in made:
            os.makedirs(parent, exist_ok=True)
            made.add(parent)
        fd = os.open(entry.real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(errno.EINVAL, "not a regular file", entry.real)
            chunks: list[bytes] = []
            left = MAX_FILE_BYTES
            while left > 0:
                data = os.read(fd, min(left, 1 << 20))
                if not data:
                    break
                chunks.append(data)
                left -= len(data)
        finally:
            os.close(fd)
        with open(target, "wb") as out:
            out.write(b"".join(chunks))
