"""The schemas directory and its lock: Kueue release manifests as `schemas fetch` keeps them.

Layout (`--schemas DIR`, `$GPUTENANCY_SCHEMAS`, or `.gputenancy-schemas/` in the repository):

    DIR/kueue/<version>/manifests.yaml       the release's install manifests, as downloaded
    DIR/kueue/<version>/crds/<group>_<plural>.yaml   each CustomResourceDefinition, cut from it

`schemas.lock` (committed, at the repository root) records the sha256 of every file of each version;
`schemas fetch` verifies against it. Nothing here touches the network.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LOCK_FILE = "schemas.lock"
DEFAULT_DIR = ".gputenancy-schemas"
MANIFESTS = "manifests.yaml"
CRDS = "crds"
DEFAULT_URL = "https://github.com/kubernetes-sigs/kueue/releases/download/{version}/manifests.yaml"
FETCH_COMMAND = "python pipeline.py schemas fetch"
_DOC_SPLIT = re.compile(rb"^---[ \t]*\r?\n", re.MULTILINE)
_KIND = re.compile(rb"^kind:[ \t]*([A-Za-z0-9]+)[ \t]*\r?$", re.MULTILINE)
_NAME = re.compile(rb"^  name:[ \t]*([A-Za-z0-9.-]+)[ \t]*\r?$", re.MULTILINE)


def version_dir(schemas: Path, version: str) -> Path:
    return schemas / "kueue" / version


def crd_dir(schemas: Path | None, version: str) -> Path | None:
    """<schemas>/kueue/<version>/crds (or the older <schemas>/<version>/crds), or None."""
    if schemas is None:
        return None
    for candidate in (version_dir(schemas, version) / CRDS, schemas / version / CRDS):
        if candidate.is_dir():
            return candidate
    return None


def manifests_file(schemas: Path | None, version: str) -> Path | None:
    if schemas is None:
        return None
    path = version_dir(schemas, version) / MANIFESTS
    return path if path.is_file() else None


def missing_message(schemas: Path, version: str) -> str:
    return (
        f"the schemas directory {schemas} has no Kueue {version} "
        f"({version_dir(schemas, version) / CRDS}); run `{FETCH_COMMAND} --schemas {schemas}`"
    )


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ------------------------------------------------------------------------------ splitting a release


class NotAManifest(ValueError):
    """The downloaded file is not a Kueue release manifest."""


def split(data: bytes) -> dict[str, bytes]:
    """The files of one version from its manifests.yaml: itself and one file per CRD, each CRD the
    exact bytes of its document (so every file's sha256 follows from the download's)."""
    files = {MANIFESTS: data}
    for doc in _DOC_SPLIT.split(data):
        kind = _KIND.search(doc)
        if kind is None or kind.group(1) != b"CustomResourceDefinition":
            continue
        name = _NAME.search(doc)
        if name is None:
            raise NotAManifest("a CustomResourceDefinition without metadata.name")
        plural, _, group = name.group(1).decode().partition(".")
        files[f"{CRDS}/{group}_{plural}.yaml"] = doc if doc.startswith(b"---") else b"---\n" + doc
    if len(files) == 1 or not any(k.startswith(f"{CRDS}/kueue.x-k8s.io_") for k in files):
        raise NotAManifest("no kueue.x-k8s.io CustomResourceDefinition in it")
    return files


def read_version(schemas: Path, version: str) -> dict[str, bytes] | None:
    """The files of `version` in the schemas directory, or None when it has none."""
    base = version_dir(schemas, version)
    if not (base / MANIFESTS).is_file():
        return None
    out = {MANIFESTS: (base / MANIFESTS).read_bytes()}
    crds = base / CRDS
    if crds.is_dir():
        for path in sorted(crds.iterdir()):
            if path.is_file():
                out[f"{CRDS}/{path.name}"] = path.read_bytes()
    return out


# ------------------------------------------------------------------------------ the lock


@dataclass(frozen=True)
class Lock:
    """{version: {relative file: sha256}}."""

    versions: Mapping[str, Mapping[str, str]]

    def digest(self) -> str:
        return sha256(dumps(self).encode())


class LockError(ValueError):
    pass


def read_lock(root: Path) -> Lock:
    path = root / LOCK_FILE
    if not path.is_file():
        return Lock({})
    try:
        raw: Any = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LockError(f"{LOCK_FILE} is not valid JSON: {exc}") from exc
    kueue = raw.get("kueue") if isinstance(raw, dict) else None
    if not isinstance(kueue, dict) or not all(
        isinstance(files, dict) and all(isinstance(v, str) for v in files.values())
        for files in kueue.values()
    ):
        raise LockError(f'{LOCK_FILE}: expected {{"kueue": {{"<version>": {{"<file>": "<sha256>"}}}}}}')
    return Lock({str(v): dict(files) for v, files in kueue.items()})


def dumps(lock: Lock) -> str:
    body = {
        "comment": f"sha256 of each file of each Kueue release, written by `{FETCH_COMMAND} --update`; "
        "every fetch is verified against it",
        "kueue": {v: dict(sorted(files.items())) for v, files in sorted(lock.versions.items())},
    }
    return json.dumps(body, indent=2) + "\n"


def write_lock(root: Path, lock: Lock) -> None:
    """Atomically: a temporary file beside it, then a rename."""
    path = root / LOCK_FILE
    fd, tmp = tempfile.mkstemp(prefix=f".{LOCK_FILE}.", dir=root)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(dumps(lock))
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def verify(files: Mapping[str, bytes], locked: Mapping[str, str]) -> Iterator[str]:
    """The differences between `files` and a lock entry, one line each."""
    for name in sorted(set(files) | set(locked)):
        if name not in locked:
            yield f"{name} is not in the lock"
        elif name not in files:
            yield f"{name} is missing"
        elif sha256(files[name]) != locked[name]:
            yield f"{name} has sha256 {sha256(files[name])}, the lock says {locked[name]}"
