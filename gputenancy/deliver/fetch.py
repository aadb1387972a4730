"""`python pipeline.py schemas fetch [--update]`: the release manifests of every Kueue version the
clusters declare (and every version already in schemas.lock), downloaded into the schemas directory
and verified against the lock.

- The URL is `kueueManifestsURL` of base/platform.yaml (`{version}` is replaced), by default Kueue's
  GitHub release asset; http(s) and file URLs work, for mirrors and air-gapped sites.
- A version whose files in the directory already match the lock is not downloaded again.
- A download whose sha256 differs from the lock is an error, never a silent replace; a version without
  a lock entry is an error too. `--update` downloads every version again and rewrites the lock.
- Atomic: every download is staged in a temporary directory inside the schemas directory; only when all
  of them succeeded are the versions' directories swapped in (SIGINT and SIGTERM wait for the swap) and
  the lock written. An interrupted or failed fetch leaves the directory and the lock as they were.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gputenancy import interrupt
from gputenancy.findings import Finding, Origin, PipelineError
from gputenancy.inputs.spec import load_model
from gputenancy.versions import releases

MAX_BYTES = 64 * 1024 * 1024
TIMEOUT = 60.0
RULE = "schemas-fetch"
RULE_LOCK = "schemas-lock"


@dataclass(frozen=True)
class Outcome:
    version: str
    action: str  # "up to date" | "downloaded"
    url: str
    files: int


def _error(rule: str, message: str, path: str = releases.LOCK_FILE) -> Finding:
    return Origin(path).finding(rule, message)


def declared_versions(root: Path) -> tuple[list[str], str]:
    """The Kueue versions the clusters declare and the URL template of base/platform.yaml."""
    model, _ = load_model(root, cache=None)
    versions = sorted({c.kueue_version for c in model.clusters.values()})
    return versions, model.platform.kueue_manifests_url or releases.DEFAULT_URL


def download(url: str) -> bytes:
    """The body at `url`; OSError (with the reason) when it cannot be had in full."""
    request = urllib.request.Request(url, headers={"User-Agent": "gputenancy-schemas-fetch"})  # noqa: S310 - http(s) and file URLs by design
    with urllib.request.urlopen(request, timeout=TIMEOUT) as response:  # noqa: S310
        length = response.headers.get("Content-Length")
        data: bytes = response.read(MAX_BYTES + 1)
        if len(data) > MAX_BYTES:
            raise OSError(f"larger than {MAX_BYTES} bytes")
        if length is not None and length.isdigit() and int(length) != len(data):
            raise OSError(f"connection closed after {len(data)} of {length} bytes")
        return data


def _reason(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        return str(exc.reason)
    return str(exc) or type(exc).__name__


def fetch(
    root: Path,
    schemas: Path,
    *,
    update: bool = False,
    url: str | None = None,
    progress: Callable[[str], Any] = lambda _: None,
) -> list[Outcome]:
    """Fetch, verify and swap in; raises PipelineError with every problem found (nothing changed).
    `url` replaces the URL template of base/platform.yaml."""
    lock = _read_lock(root)
    declared, template = declared_versions(root)
    if url is not None:
        if "{version}" not in url:
            raise PipelineError([_error(RULE, f"--url {url!r} has no {{version}}", path="--url")])
        template = url
    versions = sorted(set(declared) | set(lock.versions))
    if not versions:
        return []
    problems: list[Finding] = []
    fresh: dict[str, dict[str, bytes]] = {}
    outcomes: list[Outcome] = []
    for version in versions:
        url = template.replace("{version}", version)
        locked = lock.versions.get(version)
        present = releases.read_version(schemas, version)
        if (
            not update
            and locked is not None
            and present is not None
            and not list(releases.verify(present, locked))
        ):
            outcomes.append(Outcome(version, "up to date", url, len(present)))
            continue
        if locked is None and not update:
            problems.append(
                _error(
                    RULE_LOCK,
                    f"Kueue {version} has no entry in {releases.LOCK_FILE}: run "
                    f"`{releases.FETCH_COMMAND} --update` and commit {releases.LOCK_FILE}",
                )
            )
            continue
        progress(f"{version}: downloading {url}\n")
        try:
            files = releases.split(download(url))
        except (OSError, ValueError) as exc:
            what = (
                "is not a Kueue release manifest"
                if isinstance(exc, releases.NotAManifest)
                else "cannot be downloaded"
            )
            problems.append(
                _error(RULE, f"Kueue {version}: {url} {what}: {_reason(exc)} (nothing was changed)")
            )
            continue
        if locked is not None and not update:
            differences = list(releases.verify(files, locked))
            if differences:
                problems.append(
                    _error(
                        RULE_LOCK,
                        f"Kueue {version}: {url} differs from {releases.LOCK_FILE}: "
                        + "; ".join(differences)
                        + f" (refused; if the release was re-published on purpose, review it and run "
                        f"`{releases.FETCH_COMMAND} --update`)",
                    )
                )
                continue
        fresh[version] = files
        outcomes.append(Outcome(version, "downloaded", url, len(files)))
    if problems:
        raise PipelineError(problems)
    new = dict(lock.versions)
    for version, files in fresh.items():
        new[version] = {name: releases.sha256(data) for name, data in files.items()}
    with interrupt.deferred():
        if fresh:
            _install(schemas, fresh)
        if update and (new != lock.versions or not (root / releases.LOCK_FILE).is_file()):
            releases.write_lock(root, releases.Lock(new))
    return outcomes


def _read_lock(root: Path) -> releases.Lock:
    try:
        return releases.read_lock(root)
    except releases.LockError as exc:
        raise PipelineError([_error(RULE_LOCK, str(exc))]) from exc


def _install(schemas: Path, fresh: dict[str, dict[str, bytes]]) -> None:
    """Write every version into a staging directory, then swap each version's directory in (the
    caller defers signals)."""
    schemas.mkdir(parents=True, exist_ok=True)
    ignore = schemas / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# written by `python pipeline.py schemas fetch`\n*\n", encoding="utf-8")
    staging = interrupt.mkdtemp(".fetch-", schemas)
    try:
        for version, files in fresh.items():
            for name, data in files.items():
                path = staging / "new" / version / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
        interrupt.checkpoint("installing")
        (staging / "old").mkdir()
        for version in fresh:
            target = releases.version_dir(schemas, version)
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.exists():
                target.rename(staging / "old" / version)
            (staging / "new" / version).rename(target)
    finally:
        interrupt.rmtree(staging)


def command(
    root: Path, schemas: Path, *, update: bool, fmt: str, emit: Callable[[str], Any], url: str | None = None
) -> int:
    from gputenancy import report

    try:
        outcomes = fetch(
            root, schemas, update=update, url=url, progress=emit if fmt == "text" else lambda _: None
        )
    except PipelineError as exc:
        emit(report.format_findings(list(exc.findings), fmt))
        return 1
    for o in outcomes:
        emit(f"{o.version}: {o.action} ({o.files} files in {releases.version_dir(schemas, o.version)})\n")
    if update:
        emit(f"{releases.LOCK_FILE}: {len(outcomes)} version(s) recorded\n")
    return 0
