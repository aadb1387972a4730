"""`python pipeline.py schemas fetch [--update]`: the release manifests of every Kueue version the
clusters declare (and every version already in schemas.lock), downloaded into the schemas directory
and verified against the lock.

- The URL is `kueueManifestsURL` of base/platform.yaml (`{version}` is replaced), by default Kueue's
  GitHub release asset; http(s) and file URLs work, for mirrors and air-gapped sites.
- A version whose files in the directory already match the lock is not downloaded again. Beside
  them the fetch leaves `.verified.json` (the lock entry they were verified against and the sha256
  of their bytes), so the next fetch need not parse them again while both still hold; any change
  to a file or to its lock entry means a full check (the directory is the runner's, section 7 of
  docs/security.md).
- A download whose parsed content differs from the lock is an error, never a silent replace; a
  version without a lock entry is an error too. `--update` downloads every version again and
  rewrites the lock. What the lock records is in `versions/releases.py` and docs/security.md.
- The fetch runs in CI with a pull request's own lock and platform.yaml, so both are hostile: lock
  keys and versions are checked before they become paths (`releases.read_lock`, `version_dir`),
  only http, https and local file URLs are opened, a local file must be a regular file (a FIFO is
  refused at once), each download is capped at `MAX_BYTES` and must be complete within `DEADLINE`
  seconds in all (a server that sends one byte a second is cut off), and every downloaded file is
  read by the hardened reader and checked for shape (`versions/releasedata.py`) before it is locked
  or written: an alias bomb or a CRD whose `versions` is not a list never reaches the directory.
- Every finding is located at a file the user can open: a download at the `kueueManifestsURL` line
  of base/platform.yaml (or `--url`), a missing lock entry at the cluster's `kueue.version`, a
  differing release at its line in schemas.lock. Each hint names the command that works.
- Atomic: every download is staged in a temporary directory inside the schemas directory; only when all
  of them succeeded are the versions' directories swapped in (SIGINT and SIGTERM wait for the swap) and
  the lock written. An interrupted or failed fetch leaves the directory and the lock as they were.
"""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gputenancy.common import interrupt
from gputenancy.common.findings import Finding, Origin, PipelineError
from gputenancy.inputs.spec import load_model
from gputenancy.versions import releasedata, releases

MAX_BYTES = releasedata.MAX_RELEASE_BYTES
TIMEOUT = 60.0
"""Seconds a single read may wait."""
DEADLINE = 300.0
"""Seconds a whole download may take, however the server paces it."""
_CHUNK = 64 * 1024
_URL_LINE = re.compile(r"^[ \t]*kueueManifestsURL[ \t]*:[ \t]*", re.MULTILINE)
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


def declared_versions(root: Path) -> tuple[dict[str, Origin], str]:
    """The Kueue versions the clusters declare (each at the first `kueue.version` that names it)
    and the URL template of base/platform.yaml."""
    model, _ = load_model(root, cache=None)
    versions: dict[str, Origin] = {}
    for name in sorted(model.clusters):
        c = model.clusters[name]
        versions.setdefault(c.kueue_version, c.document.origin("kueue", "version"))
    return versions, model.platform.kueue_manifests_url or releases.DEFAULT_URL


def _url_origin(root: Path, from_cli: bool) -> Origin:
    """Where the URL template comes from: --url, the kueueManifestsURL line, or platform.yaml."""
    if from_cli:
        return Origin("--url")
    try:
        text = (root / "base" / "platform.yaml").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        text = ""
    match = _URL_LINE.search(text)
    if match is None:
        return Origin("base/platform.yaml")
    line = text.count("\n", 0, match.start()) + 1
    return Origin("base/platform.yaml", line, match.end() - match.start() + 1)


def _local(url: str) -> bytes:
    parts = urllib.parse.urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        raise OSError(f"a file URL on another host ({parts.netloc}) is not read")
    path = Path(urllib.request.url2pathname(parts.path))
    try:
        return releasedata.read_bytes(path, MAX_BYTES)
    except PipelineError as exc:
        raise OSError(f"{path}: {exc.findings[0].message}") from None


def _http(url: str, until: float) -> bytes:
    request = urllib.request.Request(url, headers={"User-Agent": "gputenancy-schemas-fetch"})  # noqa: S310 - http(s) by design
    with urllib.request.urlopen(request, timeout=min(TIMEOUT, DEADLINE)) as response:  # noqa: S310
        length = response.headers.get("Content-Length")
        if length is not None and length.isdigit() and int(length) > MAX_BYTES:
            raise OSError(f"larger than {MAX_BYTES} bytes ({length} announced)")
        data = bytearray()
        while True:
            if time.monotonic() > until:
                raise OSError(f"not complete within {DEADLINE:g} s ({len(data)} bytes received)")
            chunk: bytes = response.read1(_CHUNK)
            if not chunk:
                break
            data += chunk
            if len(data) > MAX_BYTES:
                raise OSError(f"larger than {MAX_BYTES} bytes")
        if length is not None and length.isdigit() and int(length) != len(data):
            raise OSError(f"connection closed after {len(data)} of {length} bytes")
        return bytes(data)


def download(url: str) -> bytes:
    """The body at `url` (http, https or a local file); OSError (with the reason) when it cannot be
    had in full, within `MAX_BYTES` and `DEADLINE`. The request runs in a daemon thread the caller
    waits for at most `DEADLINE` (and a little): a server that drips its headers is cut off too."""
    scheme = urllib.parse.urlsplit(url).scheme.lower()
    if scheme == "file":
        return _local(url)
    if scheme not in ("http", "https"):
        raise OSError(f"only http, https and file URLs are fetched, not {scheme or 'a relative path'}")
    result: list[bytes] = []
    failure: list[BaseException] = []
    until = time.monotonic() + DEADLINE

    def work() -> None:
        try:
            result.append(_http(url, until))
        except BaseException as exc:  # handed to the caller
            if isinstance(exc, urllib.error.HTTPError):
                exc.close()  # its code and reason stay; the connection does not
            failure.append(exc)

    worker = threading.Thread(target=work, name="schemas-fetch", daemon=True)
    worker.start()
    worker.join(DEADLINE + 1)
    if worker.is_alive():
        raise OSError(f"not complete within {DEADLINE:g} s (the deadline of a whole download)")
    if failure:
        raise failure[0]
    return result[0]


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
    hint_schemas: Path | None = None,
) -> list[Outcome]:
    """Fetch, verify and swap in; raises PipelineError with every problem found (nothing changed).
    `url` replaces the URL template of base/platform.yaml; `hint_schemas` is the --schemas the hints
    repeat."""
    lock = releases.read_lock(root)
    declared, template = declared_versions(root)
    if url is not None:
        if "{version}" not in url:
            raise PipelineError([_error(RULE, f"--url {url!r} has no {{version}}", path="--url")])
        template = url
    source = _url_origin(root, url is not None)
    invalid = [
        where.finding(RULE, f"{version!r} is not a Kueue version (v<major>.<minor>.<patch>)")
        for version, where in declared.items()
        if not releases.valid_version(version)
    ]
    if invalid:
        raise PipelineError(invalid)
    versions = sorted(set(declared) | set(lock.versions))
    if not versions:
        return []
    problems: list[Finding] = []
    fresh: dict[str, tuple[dict[str, bytes], dict[str, str]]] = {}
    outcomes: list[Outcome] = []
    for version in versions:
        url = template.replace("{version}", version)
        locked = lock.versions.get(version)
        present = releases.read_version(schemas, version)
        if (
            not update
            and locked is not None
            and present is not None
            and _matches(present, locked, schemas, version)
        ):
            outcomes.append(Outcome(version, "up to date", url, len(present)))
            continue
        if locked is None and not update:
            where = declared.get(version, Origin(releases.LOCK_FILE))
            problems.append(
                where.finding(
                    RULE_LOCK,
                    f"Kueue {version} has no entry in {releases.LOCK_FILE}: run "
                    f"{releases.fetch_hint(hint_schemas, False)} (it downloads every version again, "
                    f"verified by nothing but the server: review the {releases.LOCK_FILE} diff)",
                )
            )
            continue
        progress(f"{version}: downloading {url}\n")
        try:
            files, parsed = releases.release(download(url), url)
        except PipelineError as exc:
            problems += [
                source.finding(RULE, f"Kueue {version}: {url} is not a usable release manifest: {f.format()}")
                for f in exc.findings
            ]
            continue
        except (OSError, ValueError) as exc:
            what = (
                "is not a Kueue release manifest"
                if isinstance(exc, releases.NotAManifest)
                else "cannot be downloaded"
            )
            problems.append(
                source.finding(RULE, f"Kueue {version}: {url} {what}: {_reason(exc)} (nothing was changed)")
            )
            continue
        if locked is not None and not update:
            differences = list(releases.verify(files, locked, parsed))
            if differences:
                problems.append(
                    Origin(releases.LOCK_FILE, *releases.lock_line(root, version)).finding(
                        RULE_LOCK,
                        f"Kueue {version}: {url} differs from {releases.LOCK_FILE} in content (not only "
                        "in formatting): "
                        + "; ".join(differences)
                        + " (refused; if the release was re-published on purpose, review the change and "
                        f"run `{releases.FETCH_COMMAND} --update`)",
                    )
                )
                continue
        fresh[version] = (files, releases.digests(parsed))
        outcomes.append(Outcome(version, _recorded(files, locked, parsed, update), url, len(files)))
    if problems:
        raise PipelineError(problems)
    new = dict(lock.versions)
    for version, (_, digests) in fresh.items():
        if update:
            new[version] = digests
    with interrupt.deferred():
        if fresh:
            _install(schemas, {v: (files, new[v]) for v, (files, _) in fresh.items()})
        if update and (new != lock.versions or not (root / releases.LOCK_FILE).is_file()):
            releases.write_lock(root, releases.Lock(new))
    return outcomes


def _recorded(
    files: Mapping[str, bytes], locked: Mapping[str, str] | None, parsed: Mapping[str, Any], update: bool
) -> str:
    """The outcome of a download; with --update, whether it changes what the lock held (said out
    loud: --update replaces the lock's entry, and the reviewer should know which ones changed)."""
    if not update:
        return "downloaded"
    if locked is None:
        return f"downloaded, new in {releases.LOCK_FILE}"
    changed = list(releases.verify(files, locked, parsed))
    if not changed:
        return f"downloaded, as {releases.LOCK_FILE} held it"
    return (
        f"downloaded, DIFFERENT from what {releases.LOCK_FILE} held ({len(changed)} file(s); review the "
        "lock's diff before committing it)"
    )


def _matches(present: dict[str, bytes], locked: Mapping[str, str], schemas: Path, version: str) -> bool:
    """Whether the files in the directory are what the lock records (unreadable ones are not). The
    record the last fetch left beside them (`VERIFIED`: the lock entry they were verified against
    and the sha256 of their bytes) answers without parsing them again when both still hold."""
    if _verified(schemas, version) == {"lock": dict(locked), "bytes": _bytes(present)}:
        return True
    try:
        parsed = releases.parse(present, "present")
    except PipelineError:
        return False
    return not list(releases.verify(present, locked, parsed))


VERIFIED = ".verified.json"


def _bytes(files: Mapping[str, bytes]) -> dict[str, str]:
    return {name: releases.sha256(data) for name, data in sorted(files.items())}


def _verified(schemas: Path, version: str) -> Any:
    try:
        data = releasedata.read_bytes(releases.version_dir(schemas, version) / VERIFIED, 1024 * 1024)
        return json.loads(data)
    except (PipelineError, ValueError):
        return None


def _install(schemas: Path, fresh: dict[str, tuple[dict[str, bytes], Mapping[str, str]]]) -> None:
    """Write every version into a staging directory, then swap each version's directory in (the
    caller defers signals)."""
    schemas.mkdir(parents=True, exist_ok=True)
    ignore = schemas / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# written by `python pipeline.py schemas fetch`\n*\n", encoding="utf-8")
    staging = interrupt.mkdtemp(".fetch-", schemas)
    try:
        for version, (files, entry) in fresh.items():
            for name, data in files.items():
                path = staging / "new" / version / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
            record = {"lock": dict(entry), "bytes": _bytes(files)}
            (staging / "new" / version / VERIFIED).write_text(json.dumps(record, indent=1) + "\n")
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
    root: Path,
    schemas: Path,
    *,
    update: bool,
    fmt: str,
    emit: Callable[[str], Any],
    url: str | None = None,
    hint_schemas: Path | None = None,
) -> int:
    from gputenancy.common import report

    try:
        outcomes = fetch(
            root,
            schemas,
            update=update,
            url=url,
            progress=emit if fmt == "text" else lambda _: None,
            hint_schemas=hint_schemas,
        )
    except PipelineError as exc:
        emit(report.format_findings(list(exc.findings), fmt))
        return 1
    told = [
        f"{o.version}: {o.action} ({o.files} files in {releases.version_dir(schemas, o.version)})"
        for o in outcomes
    ]
    if update:
        told.append(f"{releases.LOCK_FILE}: {len(outcomes)} version(s) recorded")
    emit(report.format_findings([], "json", told) if fmt == "json" else "".join(f"{t}\n" for t in told))
    return 0
