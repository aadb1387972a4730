"""The schemas directory and its lock: Kueue release manifests as `schemas fetch` keeps them.

Layout (`--schemas DIR`, `$GPUTENANCY_SCHEMAS`, or `.gputenancy-schemas/` in the repository):

    DIR/kueue/<version>/manifests.yaml       the release's install manifests, as downloaded
    DIR/kueue/<version>/crds/<group>_<plural>.yaml   each CustomResourceDefinition, cut from it

`schemas.lock` (committed, at the repository root) records a digest of every file of each version;
`schemas fetch` verifies against it. Nothing here touches the network.

What the lock holds: for each version, for `manifests.yaml` and each CRD file, `parsed-sha256:<hex>`,
the sha256 of the file's parsed documents in canonical JSON (`releasedata.canonical_sha256`): a
release file re-serialised by another kustomize or YAML writer (spacing, key order, quoting,
comments) verifies; any changed key, value or document does not. Entries written before this form (a
bare hex sha256 of the bytes) are still read and verified byte for byte.

Every name that becomes a path is checked first: versions match `VERSION` (`v1.2.3`, an optional
`-suffix` of letters, digits, dots and dashes, nothing else), lock file names are `manifests.yaml`
or `crds/<group>_<plural>.yaml`; `version_dir` refuses anything else, so no key of a pull request's
lock can name a directory outside the schemas directory.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gputenancy.common import fastyaml
from gputenancy.common.findings import Finding, Origin, PipelineError
from gputenancy.versions import releasedata

LOCK_FILE = "schemas.lock"
DEFAULT_DIR = ".gputenancy-schemas"
MANIFESTS = "manifests.yaml"
CRDS = "crds"
DEFAULT_URL = "https://github.com/kubernetes-sigs/kueue/releases/download/{version}/manifests.yaml"
FETCH_COMMAND = "python pipeline.py schemas fetch"
PARSED = "parsed-sha256:"
VERSION = re.compile(r"\Av[0-9]{1,6}\.[0-9]{1,6}\.[0-9]{1,6}(?:-[0-9A-Za-z][0-9A-Za-z.-]{0,63})?\Z")
FILE_NAME = re.compile(
    r"\A(?:manifests\.yaml|crds/[0-9A-Za-z][0-9A-Za-z.-]{0,252}_[0-9A-Za-z][0-9A-Za-z.-]{0,252}\.yaml)\Z"
)
_DIGEST = re.compile(r"\A(?:parsed-sha256:)?[0-9a-f]{64}\Z")
_DOC_SPLIT = re.compile(rb"^---[ \t]*\r?\n", re.MULTILINE)


def valid_version(version: str) -> bool:
    return VERSION.match(version) is not None and ".." not in version


def version_dir(schemas: Path, version: str) -> Path:
    """<schemas>/kueue/<version>; ValueError for a version that is not a plain version name."""
    if not valid_version(version):
        raise ValueError(f"{version!r} is not a Kueue version (v<major>.<minor>.<patch>)")
    return schemas / "kueue" / version


def crd_dir(schemas: Path | None, version: str) -> Path | None:
    """<schemas>/kueue/<version>/crds (or the older <schemas>/<version>/crds), or None."""
    if schemas is None or not valid_version(version):
        return None
    for candidate in (version_dir(schemas, version) / CRDS, schemas / version / CRDS):
        if candidate.is_dir():
            return candidate
    return None


def manifests_file(schemas: Path | None, version: str) -> Path | None:
    if schemas is None or not valid_version(version):
        return None
    path = version_dir(schemas, version) / MANIFESTS
    return path if path.is_file() else None


def fetch_hint(schemas: Path | None, locked: bool) -> str:
    """The fetch command that works: `--update` when the lock has no entry for the version yet
    (a plain fetch refuses a version the lock does not record)."""
    command = FETCH_COMMAND + ("" if locked else " --update")
    command += f" --schemas {schemas}" if schemas is not None else ""
    return f"`{command}`" + ("" if locked else f" and commit {LOCK_FILE}")


def missing_message(schemas: Path, version: str, locked: bool = True) -> str:
    where = schemas / "kueue" / version / CRDS if valid_version(version) else schemas
    return (
        f"the schemas directory {schemas} has no Kueue {version} ({where}); run {fetch_hint(schemas, locked)}"
    )


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ------------------------------------------------------------------------------ splitting a release


class NotAManifest(ValueError):
    """The downloaded file is not a Kueue release manifest."""


def release(data: bytes, shown: str) -> tuple[dict[str, bytes], dict[str, list[Any]]]:
    """The files of one version from its manifests.yaml, and the documents of each: the manifests
    themselves and one file per CRD, each CRD the exact bytes of its document (documents are
    separated by `---` lines). The whole file is read as hostile input first (`releasedata`:
    PipelineError at `shown`); NotAManifest when it holds no Kueue CRD."""
    text = releasedata.decode(data, shown)
    found = releasedata.problems(text, shown)
    if found:
        raise PipelineError(found)
    files = {MANIFESTS: data}
    everything: list[Any] = []
    parsed: dict[str, list[Any]] = {}
    for chunk in _DOC_SPLIT.split(data):
        docs = [d for d in fastyaml.load_all(chunk.decode("utf-8")) if d is not None]
        everything += docs
        crds = [d for d in docs if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition"]
        if not crds:
            continue
        if len(docs) != 1:
            raise NotAManifest(
                "a CustomResourceDefinition not separated from other documents by a `---` line"
            )
        meta = crds[0].get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        plural, _, group = name.partition(".") if isinstance(name, str) else ("", "", "")
        file = f"{CRDS}/{group}_{plural}.yaml"
        if FILE_NAME.match(file) is None or file in files:
            raise NotAManifest(f"a CustomResourceDefinition named {name!r}")
        files[file] = chunk if chunk.startswith(b"---") else b"---\n" + chunk
        parsed[file] = docs
    shape = releasedata.shape_problems(everything, shown)
    if shape:
        raise PipelineError(shape)
    if not any(k.startswith(f"{CRDS}/kueue.x-k8s.io_") for k in files):
        raise NotAManifest("no kueue.x-k8s.io CustomResourceDefinition in it")
    parsed[MANIFESTS] = everything
    return files, parsed


def read_version(schemas: Path, version: str) -> dict[str, bytes] | None:
    """The files of `version` in the schemas directory, or None when it has none or one of them is
    not a bounded regular file (a FIFO is never opened for a blocking read)."""
    base = version_dir(schemas, version)
    if base.is_symlink() or not (base / MANIFESTS).is_file():
        return None
    try:
        out = {MANIFESTS: releasedata.read_bytes(base / MANIFESTS)}
        crds = base / CRDS
        if crds.is_dir() and not crds.is_symlink():
            for path in sorted(crds.iterdir()):
                out[f"{CRDS}/{path.name}"] = releasedata.read_bytes(path)
    except PipelineError:
        return None
    return out


def parse(files: Mapping[str, bytes], shown: str) -> dict[str, list[Any]]:
    """The documents of each file of a version, each read as hostile input (`releasedata`);
    PipelineError with every finding, each at `shown` (and the file within the version)."""
    found: list[Finding] = []
    out: dict[str, list[Any]] = {}
    for name, data in sorted(files.items()):
        where = shown if name == MANIFESTS else f"{shown} ({name})"
        try:
            out[name] = releasedata.load_text(releasedata.decode(data, where), where)
        except PipelineError as exc:
            found += exc.findings
    if found:
        raise PipelineError(found)
    return out


def digests(parsed: Mapping[str, list[Any]]) -> dict[str, str]:
    """The lock entry of a version: each file's canonical digest."""
    return {name: PARSED + releasedata.canonical_sha256(docs) for name, docs in parsed.items()}


# ------------------------------------------------------------------------------ the lock


@dataclass(frozen=True)
class Lock:
    """{version: {relative file: sha256}}."""

    versions: Mapping[str, Mapping[str, str]]

    def digest(self) -> str:
        return sha256(dumps(self).encode())


MAX_LOCK_BYTES = 1024 * 1024


def _where(text: str, needle: str) -> tuple[int, int]:
    """Line and column (1-based) of the first `needle` in `text`; (0, 0) when it is not there."""
    at = text.find(needle)
    if at < 0:
        return 0, 0
    line = text.count("\n", 0, at)
    return line + 1, at - (text.rfind("\n", 0, at) + 1) + 1


def lock_line(root: Path, version: str) -> tuple[int, int]:
    """Where `version` is recorded in the lock (for findings about it); (0, 0) when it is not."""
    try:
        text = releasedata.read_bytes(root / LOCK_FILE, MAX_LOCK_BYTES).decode("utf-8", "replace")
    except PipelineError:
        return 0, 0
    return _where(text, json.dumps(version))


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def read_lock(root: Path) -> Lock:
    """The lock at the root (empty when there is none); PipelineError with a finding at the line of
    each problem: not a bounded regular file, not JSON, a duplicate key, not the expected shape, a
    version or file name that is not one (it would become a path), a digest that is not one."""
    path = root / LOCK_FILE
    if not path.exists() and not path.is_symlink():
        return Lock({})
    if path.is_symlink():
        raise PipelineError(
            [Origin(LOCK_FILE).finding("source-symlink", "a symlink; commit the file itself")]
        )
    try:
        data = releasedata.read_bytes(path, MAX_LOCK_BYTES)
    except PipelineError as exc:
        raise PipelineError([dataclasses.replace(f, path=LOCK_FILE) for f in exc.findings]) from None
    text = releasedata.decode(data, LOCK_FILE)
    try:
        raw: Any = json.loads(text, object_pairs_hook=_no_duplicates)
    except (json.JSONDecodeError, ValueError) as exc:
        line, col = (exc.lineno, exc.colno) if isinstance(exc, json.JSONDecodeError) else (0, 0)
        raise PipelineError(
            [Origin(LOCK_FILE, line, col).finding("schemas-lock", f"not valid JSON: {exc}")]
        ) from None
    kueue = raw.get("kueue") if isinstance(raw, dict) else None
    if not isinstance(kueue, dict):
        raise PipelineError(
            [
                Origin(LOCK_FILE, 1, 1).finding(
                    "schemas-lock", 'expected {"kueue": {"<version>": {"<file>": "<digest>"}}}'
                )
            ]
        )
    found: list[Finding] = []
    for version, files in kueue.items():
        where = Origin(LOCK_FILE, *_where(text, json.dumps(version)))
        if not valid_version(version):
            found.append(
                where.finding(
                    "schemas-lock", f"{version!r} is not a Kueue version (v<major>.<minor>.<patch>)"
                )
            )
            continue
        if not isinstance(files, dict):
            found.append(where.finding("schemas-lock", f'{version}: expected {{"<file>": "<digest>"}}'))
            continue
        for name, digest in files.items():
            at = Origin(LOCK_FILE, *_where(text, json.dumps(name)))
            if FILE_NAME.match(name) is None:
                found.append(at.finding("schemas-lock", f"{version}: {name!r} is not a release file name"))
            elif not isinstance(digest, str) or _DIGEST.match(digest) is None:
                found.append(at.finding("schemas-lock", f"{version}: {name}: not a sha256 digest"))
    if found:
        raise PipelineError(found)
    return Lock({str(v): dict(files) for v, files in kueue.items()})


def dumps(lock: Lock) -> str:
    body = {
        "comment": "sha256 of the parsed documents (canonical JSON) of each file of each Kueue release, "
        f"written by `{FETCH_COMMAND} --update`; every fetch is verified against it (docs/security.md)",
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


def verify(
    files: Mapping[str, bytes], locked: Mapping[str, str], parsed: Mapping[str, list[Any]]
) -> Iterator[str]:
    """The differences between `files` (their documents `parsed`) and a lock entry, one line each.
    A `parsed-sha256:` entry compares the canonical digest, a bare one the bytes."""
    for name in sorted(set(files) | set(locked)):
        if name not in locked:
            yield f"{name} is not in the lock"
        elif name not in files:
            yield f"{name} is missing"
        else:
            entry = locked[name]
            if entry.startswith(PARSED):
                have = PARSED + releasedata.canonical_sha256(parsed[name])
                what = "parsed content"
            else:
                have, what = sha256(files[name]), "sha256"
            if have != entry:
                yield f"{name}: its {what} is {have.removeprefix(PARSED)}, the lock says {entry.removeprefix(PARSED)}"
