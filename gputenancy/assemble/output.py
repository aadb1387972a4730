"""The generated tree: one object per file at a deterministic path, written atomically.

    generated/<cluster>/<kind>/<name>.yaml               cluster-scoped objects
    generated/<cluster>/<kind>/<namespace>/<name>.yaml   namespaced objects
    generated/<cluster>/_hub/<kind>/<namespace>/<name>.yaml   Argo CD objects: synced by the hub
                                                         (gputenancy.render.hub), not by the cluster

Paths are built only from names that are valid Kubernetes names (DNS subdomains), so no object can
write outside generated/<cluster>/.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from gputenancy.common import fastyaml, interrupt
from gputenancy.common.findings import Finding, PipelineError, Severity
from gputenancy.common.objects import RenderedObject, to_yaml
from gputenancy.render import hub

GENERATED = "generated"
_SAFE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?\Z")
_KIND = re.compile(r"^[A-Za-z][A-Za-z0-9]*\Z")

MAX_TREE_FILE_BYTES = 16 * 1024 * 1024
"""Largest file read back from a generated tree (a committed file can be anything)."""

Tree = Mapping[str, bytes]  # POSIX path relative to generated/<cluster>/ -> file content


def object_path(obj: RenderedObject) -> str:
    key = obj.key
    if (
        not _KIND.match(key.kind)
        or not _SAFE.match(key.name)
        or (key.namespace and not _SAFE.match(key.namespace))
    ):
        raise PipelineError(
            [
                obj.origin.finding(
                    "object-name",
                    f"{key}: kind, name and namespace must be valid Kubernetes names to be written",
                )
            ]
        )
    if ".." in key.name or ".." in key.namespace:
        raise PipelineError([obj.origin.finding("object-name", f"{key}: '..' is not allowed in a name")])
    parts = [hub.HUB_DIR] if hub.is_hub_object(obj.body) else []
    parts.append(key.kind.lower())
    if key.namespace:
        parts.append(key.namespace)
    parts.append(f"{key.name}.yaml")
    return "/".join(parts)


def tree_of(objects: Sequence[RenderedObject]) -> dict[str, bytes]:
    tree: dict[str, bytes] = {}
    findings: list[Finding] = []
    for obj in objects:
        try:
            path = object_path(obj)
        except PipelineError as exc:
            findings.extend(exc.findings)
            continue
        if path in tree:
            findings.append(obj.origin.finding("object-name", f"{obj.key} would overwrite {path}"))
        tree[path] = to_yaml(obj.body).encode()
    if findings:
        raise PipelineError(findings)
    return dict(sorted(tree.items()))


def files_of(objects: Sequence[RenderedObject]) -> tuple[list[tuple[str, bytes]], list[Finding]]:
    """The generated/ path and bytes of each object, or the findings of those that cannot be written."""
    files, findings = [], []
    for obj in objects:
        try:
            files.append((object_path(obj), fastyaml.dump(obj.body).encode()))
        except PipelineError as exc:
            findings.extend(exc.findings)
    return files, findings


def assemble(
    objects: Sequence[RenderedObject], files: Sequence[tuple[str, bytes]]
) -> tuple[dict[str, bytes], list[Finding]]:
    """The tree of `objects` from their `files_of` (sorted by path), and a finding for each object
    whose file another object's would overwrite."""
    tree: dict[str, bytes] = {}
    findings = []
    for obj, (path, data) in zip(objects, files, strict=True):
        if path in tree:
            findings.append(obj.origin.finding("object-name", f"{obj.key} would overwrite {path}"))
        tree[path] = data
    return dict(sorted(tree.items())), findings


def read_tree(directory: Path) -> dict[str, bytes]:
    """Every regular file under directory (symlinks are not followed) by relative POSIX path, sorted.
    Each file is read through a plain file descriptor in one read of its listed size (no buffered
    file object per file: a fifth less CPU for 11,000 files; reading in threads did not help)."""
    if not directory.is_dir():
        return {}
    files: list[tuple[str, str, int]] = []  # (relative POSIX path, absolute path, size)
    pending = [(str(directory), "")]
    while pending:
        absolute, relative = pending.pop()
        with os.scandir(absolute) as entries:
            for entry in entries:
                rel = f"{relative}{entry.name}"
                if entry.is_dir(follow_symlinks=False):
                    pending.append((entry.path, f"{rel}/"))
                elif entry.is_file(follow_symlinks=False):
                    size = entry.stat(follow_symlinks=False).st_size
                    if size > MAX_TREE_FILE_BYTES:
                        message = f"larger than {MAX_TREE_FILE_BYTES} bytes, far beyond any rendered object; remove it"
                        shown = f"{directory.parent.name}/{directory.name}/{rel}"
                        raise PipelineError([Finding(shown, 0, 0, Severity.ERROR, "source-size", message)])
                    files.append((rel, entry.path, size))
    files.sort()
    return {rel: _read_file(absolute, size) for rel, absolute, size in files}


_READ = os.O_RDONLY | getattr(os, "O_BINARY", 0)


def _read_file(path: str, size: int) -> bytes:
    """The whole file: one read of the size it had when listed, more while it has grown since."""
    fd = os.open(path, _READ)
    try:
        data = os.read(fd, size + 1)
        if len(data) <= size:
            return data
        chunks = [data]
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def diff_paths(want: Tree, have: Tree) -> list[str]:
    """Paths that differ, as `+ path`, `- path`, `~ path`."""
    out = [f"+ {p}" for p in want if p not in have]
    out += [f"- {p}" for p in have if p not in want]
    out += [f"~ {p}" for p in want if p in have and want[p] != have[p]]
    return sorted(out, key=lambda s: s[2:])


_WRITERS = 4
"""Threads that create files. Creating a file is almost all kernel time, which the threads spend
without the GIL; four threads write 11,000 files in about half the time of one (docs/performance.md)."""


def _fill(directory: Path, tree: Tree) -> None:
    """Write a tree into a new, empty directory: each directory made once, each file created with
    O_EXCL, the files split in contiguous runs (mostly whole directories) over `_WRITERS` threads."""
    base = str(directory)
    items = list(tree.items())
    for parent in sorted({rel.rpartition("/")[0] for rel, _ in items} - {""}):
        os.makedirs(f"{base}/{parent}", exist_ok=True)
    workers = max(1, min(_WRITERS, len(items) // 256))
    runs = [items[i * len(items) // workers : (i + 1) * len(items) // workers] for i in range(workers)]
    if workers == 1:
        _write_files(base, items)
        return
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        for done in [pool.submit(_write_files, base, run) for run in runs]:
            done.result()


def _write_files(base: str, items: Sequence[tuple[str, bytes]]) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for rel, data in items:
        fd = os.open(f"{base}/{rel}", flags, 0o666)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)


@contextlib.contextmanager
def staged(parent: Path, trees: Mapping[str, Tree]) -> Iterator[dict[str, Path]]:
    """parent/.staging-<pid>-*/<name> filled with each tree, removed when the block ends, however it
    ends (a signal included: `interrupt.mkdtemp`)."""
    parent.mkdir(parents=True, exist_ok=True)
    with interrupt.temporary_directory(f".staging-{os.getpid()}-", parent) as staging:
        out = {}
        for name, tree in trees.items():
            out[name] = staging / name
            out[name].mkdir()
            _fill(out[name], tree)
        interrupt.checkpoint("staged")
        yield out
