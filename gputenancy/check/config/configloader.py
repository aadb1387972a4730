"""The Configuration checks of Kueue's loader that `configcheck` did not cover: `tls`,
`visibilityServer` and `metrics.customLabels` (pkg/config/validation.go `validateTLS`,
`validateVisibilityServer`, `validateCustomLabels` at v0.18.1 and v0.19.2; v0.19 added the custom-label
limits, which come from `gputenancy.versions.startup`). `configcheck.check_configuration` reports them
under `kueue-config-invalid`.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator, Mapping
from typing import Any

from gputenancy.common.names import qualified_name_errors
from gputenancy.versions import startup

Problem = tuple[tuple[str | int, ...], str]
_LABEL_NAME = re.compile(r"^[a-zA-Z][a-zA-Z0-9_]*\Z")
# tlsconfig.convertTLSMinVersion: "" means TLS 1.2; 1.0 and 1.1 are refused
_TLS_VERSIONS = ("", "VersionTLS12", "VersionTLS13")


def problems(config: Mapping[str, Any], version: str) -> Iterator[Problem]:
    yield from _tls(config.get("tls"))
    yield from _visibility_server(config.get("visibilityServer"))
    metrics = config.get("metrics")
    labels = metrics.get("customLabels") if isinstance(metrics, dict) else None
    if isinstance(labels, list) and labels:
        rules = startup.rules_for(version)
        yield from _custom_labels(labels, rules.custom_labels if rules is not None else None)


def _tls(tls: Any) -> Iterator[Problem]:
    if not isinstance(tls, dict):
        return
    version = tls.get("minVersion", "")
    if isinstance(version, str) and version not in _TLS_VERSIONS:
        reason = "" if version in ("VersionTLS10", "VersionTLS11") else f": unknown tls version {version!r}"
        yield ("tls",), f"Invalid value: invalid minVersion{reason}. Please use VersionTLS12 or VersionTLS13"
    elif version == "VersionTLS13" and tls.get("cipherSuites"):
        yield (
            ("tls", "cipherSuites"),
            "Invalid value: may not be specified when `minVersion` is 'VersionTLS13'",
        )


def _visibility_server(section: Any) -> Iterator[Problem]:
    if not isinstance(section, dict):
        return
    address = section.get("bindAddress")
    if isinstance(address, str):
        try:
            ipaddress.ip_address(address)
        except ValueError:
            yield (
                ("visibilityServer", "bindAddress"),
                f"Invalid value {address!r}: must be a valid IP address",
            )
    port = section.get("bindPort")
    if isinstance(port, int) and not isinstance(port, bool) and not 1 <= port <= 65535:
        yield ("visibilityServer", "bindPort"), f"Invalid value {port}: must be a valid port number (1-65535)"


def _custom_labels(labels: list[Any], limits: startup.CustomLabelLimits | None) -> Iterator[Problem]:
    base = ("metrics", "customLabels")
    if limits is not None and len(labels) > limits.most:
        yield base, f"Too many: {len(labels)}: must have at most {limits.most} items"
    seen: set[str] = set()
    per_kind: dict[str, int] = {}
    for i, entry in enumerate(labels):
        if not isinstance(entry, dict):
            continue
        path = (*base, i)
        name = entry.get("name", "")
        if isinstance(name, str):
            if not _LABEL_NAME.match(name):
                yield (*path, "name"), f"Invalid value {name!r}: must match ^[a-zA-Z][a-zA-Z0-9_]*$"
            if name in seen:
                yield (*path, "name"), f"Duplicate value: {name!r}"
            seen.add(name)
        label, annotation = entry.get("sourceLabelKey") or "", entry.get("sourceAnnotationKey") or ""
        if label and annotation:
            yield path, "Invalid value: sourceLabelKey and sourceAnnotationKey are mutually exclusive"
        key_field, key = (
            ("sourceLabelKey", label)
            if label
            else ("sourceAnnotationKey", annotation)
            if annotation
            else ("name", name)
        )
        if isinstance(key, str) and (errs := qualified_name_errors(key)):
            yield (*path, key_field), f"Invalid value {key!r}: {'; '.join(errs)}"
        if limits is None:
            continue
        kind = entry.get("sourceKind") or limits.default_source_kind
        tracked = entry.get("trackedValues") or []
        if isinstance(kind, str):
            per_kind[kind] = per_kind.get(kind, 0) + 1
        if kind == "Workload":
            if not tracked:
                yield (
                    (*path, "trackedValues"),
                    "Invalid value: must not be empty when sourceKind is 'Workload'",
                )
            elif len(tracked) > limits.most_tracked_workload:
                yield (
                    (*path, "trackedValues"),
                    f"Invalid value: must not be greater than {limits.most_tracked_workload} when sourceKind is 'Workload'",
                )
        elif isinstance(tracked, list) and len(tracked) > limits.most_tracked:
            yield (
                (*path, "trackedValues"),
                f"Too many: {len(tracked)}: must have at most {limits.most_tracked} items",
            )
        if isinstance(tracked, list) and len(set(map(str, tracked))) < len(tracked):
            yield (*path, "trackedValues"), "Invalid value: must not contain duplicates"
    if limits is None:
        return
    for kind in sorted(per_kind):
        most = limits.per_source_kind.get(kind)
        if most is None:
            yield base, f"Invalid value: unknown source kind: {kind}"
        elif per_kind[kind] > most:
            yield (
                base,
                f"Invalid value: too many custom labels for source kind {kind}: found {per_kind[kind]}, expected <= {most}",
            )
