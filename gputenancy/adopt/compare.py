"""The import's side of the comparison (the shared normaliser and compare are gputenancy.cluster's):
the pipeline's own bookkeeping set aside, quantities written as the pipeline writes them, and the
differences as JSON pointers into the rendered object, which the round trip turns into patches."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gputenancy.cluster import compare as shared
from gputenancy.cluster.compare import MISSING as MISSING
from gputenancy.cluster.compare import FieldDiff as FieldDiff
from gputenancy.cluster.normalise import normalise
from gputenancy.inputs import quantity

PIPELINE_LABELS = ("app.kubernetes.io/managed-by", "gputenancy.io/tenant", "gputenancy.io/cluster")
PIPELINE_ANNOTATIONS = (
    "gputenancy.io/source",
    "argocd.argoproj.io/sync-wave",
    "argocd.argoproj.io/sync-options",
)
"""Bookkeeping the pipeline adds to every object it renders (where it came from, its sync wave): the
first sync adds them to the live objects, which changes nothing Kueue reads."""
_QUANTITIES = frozenset({"nominalQuota", "borrowingLimit", "lendingLimit", "weight"})
_DEFAULTS: Mapping[str, Mapping[str, Any]] = {
    "ClusterQueue": {
        "queueingStrategy": "BestEffortFIFO",
        "stopPolicy": "None",
        "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
        "preemption": {
            "borrowWithinCohort": {"policy": "Never"},
            "reclaimWithinCohort": "Never",
            "withinClusterQueue": "Never",
        },
    },
    "LocalQueue": {"stopPolicy": "None"},
}
"""The defaults Kueue's CRDs write, for when the CRDs are not at hand (no --schemas)."""


@dataclasses.dataclass(frozen=True)
class Pointed:
    """A field that differs, with its JSON pointer into the rendered object."""

    diff: FieldDiff
    pointer: tuple[str | int, ...]


def comparable(body: Mapping[str, Any], crd_dir: Path | None) -> dict[str, Any]:
    """`normalise`, the CRD defaults filled in, and every quota and weight in canonical form."""
    out = normalise(body, crd_dir=crd_dir)
    spec = out.get("spec")
    defaults = (
        _DEFAULTS.get(str(out.get("kind"))) if str(out.get("apiVersion")).startswith("kueue.") else None
    )
    if defaults and isinstance(spec, dict):
        for key, value in defaults.items():
            if key not in spec:
                spec[key] = copy.deepcopy(value)
            elif isinstance(value, dict) and isinstance(spec[key], dict):
                for k, v in value.items():
                    spec[key].setdefault(k, copy.deepcopy(v))
    result: dict[str, Any] = canonical_quantities(out)
    return result


def canonical_quantities(value: Any, key: str = "") -> Any:
    """Quotas and weights as the pipeline writes them (canonical strings)."""
    if isinstance(value, dict):
        return {k: canonical_quantities(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [canonical_quantities(v) for v in value]
    if key in _QUANTITIES and isinstance(value, str | int) and not isinstance(value, bool):
        try:
            return quantity.canonical(value)
        except quantity.QuantityError:
            return value
    return value


def without_bookkeeping(rendered: Mapping[str, Any], live: Mapping[str, Any]) -> dict[str, Any]:
    """`rendered` without the pipeline's labels and annotations that `live` does not carry."""
    out = copy.deepcopy(dict(rendered))
    live_meta = live.get("metadata") or {}
    meta = out.get("metadata") or {}
    for key, names in (("labels", PIPELINE_LABELS), ("annotations", PIPELINE_ANNOTATIONS)):
        theirs = live_meta.get(key) or {}
        kept = {k: v for k, v in (meta.get(key) or {}).items() if k not in names or k in theirs}
        if kept:
            meta[key] = kept
        else:
            meta.pop(key, None)
    spec = out.get("spec")
    template = (
        spec.get("metadata")
        if out.get("kind") == "ResourceClaimTemplate" and isinstance(spec, dict)
        else None
    )
    if isinstance(template, dict) and isinstance(spec, dict):
        live_labels = ((live.get("spec") or {}).get("metadata") or {}).get("labels") or {}
        labels = {
            k: v
            for k, v in (template.get("labels") or {}).items()
            if k not in PIPELINE_LABELS or k in live_labels
        }
        if labels:
            template["labels"] = labels
        else:
            template.pop("labels", None)
        if not template and "metadata" not in (live.get("spec") or {}):
            spec.pop("metadata")
    return out


def compare(
    live: Mapping[str, Any], rendered: Mapping[str, Any], crd_dir: Path | None
) -> tuple[FieldDiff, ...]:
    """The shared compare of the live object and the rendered one without the pipeline's bookkeeping."""
    a = comparable(live, crd_dir)
    b = comparable(without_bookkeeping(rendered, a), crd_dir)
    return shared.compare(a, b)


def pointed(live: Mapping[str, Any], rendered: Mapping[str, Any], crd_dir: Path | None) -> list[Pointed]:
    """The same differences, each at a JSON pointer into the rendered object (list items by index; a
    list whose items differ in number or names is one difference)."""
    a = comparable(live, crd_dir)
    b = comparable(without_bookkeeping(rendered, a), crd_dir)
    out: list[Pointed] = []
    _walk(a, b, "", (), out)
    return out


def _walk(live: Any, rendered: Any, path: str, pointer: tuple[str | int, ...], out: list[Pointed]) -> None:
    if isinstance(live, dict) and isinstance(rendered, dict):
        for key in [*live, *(k for k in rendered if k not in live)]:
            sub = f"{path}.{key}" if path else str(key)
            a, b = live.get(key, MISSING), rendered.get(key, MISSING)
            if a is MISSING or b is MISSING:
                if not (b is MISSING and a in ({}, [])):
                    out.append(Pointed(FieldDiff(sub, a, b), (*pointer, key)))
            else:
                _walk(a, b, sub, (*pointer, key), out)
        return
    if (
        isinstance(live, list)
        and isinstance(rendered, list)
        and len(live) == len(rendered)
        and live != rendered
    ):
        names = [_name(x) for x in live]
        if names == [_name(y) for y in rendered] and all(isinstance(x, dict) for x in live):
            for i, (x, y) in enumerate(zip(live, rendered, strict=True)):
                _walk(x, y, f"{path}[{names[i] if names[i] is not None else i}]", (*pointer, i), out)
            return
    if live != rendered or isinstance(live, bool) != isinstance(rendered, bool):
        out.append(Pointed(FieldDiff(path, live, rendered), pointer))


def _name(item: Any) -> str | None:
    name = item.get("name") if isinstance(item, dict) else None
    return name if isinstance(name, str) else None
