"""Input files in the repository: discovery of a folder's files, paths shown relative to the root, and
bounded reads of regular files that never leave the root nor block on a pipe or device."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from gputenancy.common.findings import Finding, Origin, PipelineError


def discover(
    root: Path, subdir: str, suffixes: Iterable[str] = (".yaml", ".yml")
) -> tuple[list[Path], list[Finding]]:
    """Files directly in ``root/subdir`` whose name ends with one of `suffixes`, sorted by name.

    Hidden names (leading ``.``) are ignored. Symlinks resolving outside `root` (``source-symlink``)
    and anything that is not a regular file (``source-not-regular``) are reported and skipped. A
    missing directory gives no files and no findings.
    """
    ends = (suffixes,) if isinstance(suffixes, str) else tuple(suffixes)
    directory = root / subdir
    shown_dir = display(directory, root)
    files: list[Path] = []
    findings: list[Finding] = []
    if not os.path.lexists(directory):
        return files, findings
    try:
        real_root = root.resolve()
        real_dir = directory.resolve()
    except (OSError, RuntimeError) as exc:
        return files, [Origin(shown_dir).finding("source-symlink", f"cannot resolve directory: {exc}")]
    if not inside(real_dir, real_root):
        message = "directory resolves outside the repository root"
        return files, [Origin(shown_dir).finding("source-symlink", message)]
    try:
        names = sorted(entry.name for entry in os.scandir(directory))
    except OSError as exc:
        return files, [Origin(shown_dir).finding("source-read", f"cannot list directory: {exc.strerror}")]
    for name in names:
        if name.startswith(".") or not name.endswith(ends):
            continue
        candidate = directory / name
        where = Origin(f"{shown_dir}/{name}" if shown_dir != "." else name)
        if candidate.is_symlink():
            try:
                target = candidate.resolve()
            except (OSError, RuntimeError) as exc:
                findings.append(where.finding("source-symlink", f"cannot resolve symlink: {exc}"))
                continue
            if not inside(target, real_root):
                findings.append(where.finding("source-symlink", "symlink points outside the repository root"))
                continue
        try:
            mode = candidate.stat().st_mode
        except OSError as exc:
            findings.append(where.finding("source-read", f"cannot read file: {exc.strerror}"))
            continue
        if not stat.S_ISREG(mode):
            findings.append(where.finding("source-not-regular", f"not a regular file ({_kind(mode)})"))
            continue
        files.append(candidate)
    return files, findings


def misplaced(root: Path, subdir: str, suffixes: tuple[str, ...] = (".yaml", ".yml")) -> list[Finding]:
    """YAML files under ``root/subdir`` that `discover` does not read, each a ``tenant-file-place``
    finding saying where the file must be: in a subdirectory, or with a suffix in other letter case
    (``x.YAML``). Hidden names are ignored, as by `discover`; links are not followed."""
    directory = root / subdir
    if not directory.is_dir() or directory.is_symlink():
        return []
    found = []
    for parent, dirs, names in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        here = Path(parent)
        for name in sorted(names):
            lowered = name.lower()
            if name.startswith(".") or not lowered.endswith(suffixes):
                continue
            nested = here != directory
            if not nested and name.endswith(suffixes):
                continue
            stem = name[: name.rfind(".")]
            want = f"{subdir}/{stem}.yaml"
            where = Origin(display(here / name, root), 1, 1)
            if nested:
                message = f"not read: files in {subdir}/ are read only directly in it, not in subdirectories"
            else:
                message = f"not read: file names in {subdir}/ end in .yaml or .yml, in lower case"
            taken = (
                " (a file of that name exists: merge the two)"
                if (directory / f"{stem}.yaml").exists()
                else ""
            )
            found.append(where.finding("tenant-file-place", f"{message}; move it to {want}{taken}"))
    return found


def inside(path: Path, root: Path) -> bool:
    """`path` is `root` or lies under it (`root in path.parents`, compared part by part)."""
    parts, within = path.parts, root.parts
    if parts[: len(within)] != within:
        return False
    return bool(within) or not path.is_absolute()  # "." holds every relative path, no absolute one


def display(full: Path, root: Path) -> str:
    """`full` relative to `root` as a POSIX path, lexically first, then through symlinks."""
    lexical, base = os.path.abspath(full), os.path.abspath(root)
    if os.sep == "/" and not (lexical.startswith("//") or base.startswith("//")):
        # normalised absolute paths: relative_to is a prefix of whole components (Path, which this
        # skips for speed, keeps a leading "//" as a part of its own)
        if lexical == base:
            return "."
        prefix = base if base.endswith("/") else base + "/"
        if lexical.startswith(prefix):
            return lexical[len(prefix) :]
    else:
        with contextlib.suppress(ValueError):
            return Path(lexical).relative_to(base).as_posix()
    try:
        return full.resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError, RuntimeError):
        return full.as_posix()


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a plain file"


def size_finding(where: Origin, size: int, max_bytes: int) -> Finding:
    return where.finding(
        "source-size", f"file is {size} bytes, over the limit of {max_bytes} bytes ({max_bytes / 1024:g} KiB)"
    )


def read_bounded(real: Path, where: Origin, max_bytes: int) -> bytes:
    """At most max_bytes + 1 bytes of a regular file; never blocks on a pipe or device."""
    flags = (
        os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    )
    try:
        fd = os.open(real, flags)
    except OSError as exc:
        raise PipelineError([where.finding("source-read", f"cannot read file: {exc.strerror}")]) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise PipelineError(
                [where.finding("source-not-regular", f"not a regular file ({_kind(info.st_mode)})")]
            )
        if info.st_size > max_bytes:
            raise PipelineError([size_finding(where, info.st_size, max_bytes)])
        chunks: list[bytes] = []
        remaining = max_bytes + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    except OSError as exc:
        raise PipelineError([where.finding("source-read", f"cannot read file: {exc.strerror}")]) from None
    finally:
        os.close(fd)
    return b"".join(chunks)
