"""A live object and a rendered one, field by field, after removing what the server owns and filling the
defaults the Kueue API writes, so that two objects meaning the same compare equal. The records follow
gputenancy/cluster's (`strip_server`, `normalise`, `compare`, `FieldDiff`), so the shared normaliser
can take this module's place.

Besides the field path shown to people (list items by name where they have one), each difference keeps
its JSON pointer into the rendered object: the round trip turns the differences it cannot express into
JSON patches."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from typing import Any, Final

from gputenancy.inputs import quantity

MISSING: Final[object] = type("Missing", (), {"__repr__": lambda self: "(absent)"})()
SERVER_OWNED = (
    "managedFields",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)
KUEUE_FINALIZERS = ("kueue.x-k8s.io/resource-in-use", "kueue.x-k8s.io/managed")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
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


@dataclasses.dataclass(frozen=True)
class FieldDiff:
    path: str  # "spec.resourceGroups[0].flavors[h100].resources[cpu].nominalQuota"
    live: Any  # MISSING when absent on that side
    rendered: Any
    pointer: tuple[str | int, ...] = ()  # into the rendered object

    def shown(self) -> str:
        return f"{self.path}: {_short(self.live)} -> {_short(self.rendered)}"


def _short(value: Any) -> str:
    text = repr(value) if value is MISSING else str(value)
    return text if len(text) <= 100 else text[:97] + "..."


def strip_server(body: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(body))
    out.pop("status", None)
    meta = out.get("metadata")
    if isinstance(meta, dict):
        for key in SERVER_OWNED:
            meta.pop(key, None)
        meta.pop("namespace", None) if meta.get("namespace") == "" else None
        finalizers = [f for f in meta.get("finalizers") or [] if f not in KUEUE_FINALIZERS]
        if finalizers:
            meta["finalizers"] = finalizers
        else:
            meta.pop("finalizers", None)
        annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != LAST_APPLIED}
        for key in ("annotations", "labels"):
            value = annotations if key == "annotations" else meta.get("labels")
            if value:
                meta[key] = value
            else:
                meta.pop(key, None)
    return out


def normalise(body: Mapping[str, Any]) -> dict[str, Any]:
    out = strip_server(body)
    api = str(out.get("apiVersion", ""))
    if api == "kueue.x-k8s.io/v1beta1":
        out["apiVersion"] = "kueue.x-k8s.io/v1beta2"
        spec = out.get("spec")
        if isinstance(spec, dict) and "cohort" in spec:
            spec["cohortName"] = spec.pop("cohort")
    defaults = _DEFAULTS.get(str(out.get("kind"))) if api.startswith("kueue.x-k8s.io/") else None
    spec = out.get("spec")
    if defaults and isinstance(spec, dict):
        for key, value in defaults.items():
            if key not in spec:
                spec[key] = copy.deepcopy(value)
            elif isinstance(value, dict) and isinstance(spec[key], dict):
                for k, v in value.items():
                    spec[key].setdefault(k, copy.deepcopy(v))
    return canonical_quantities(out)


def canonical_quantities(value: Any, key: str = "") -> Any:
    """Quotas and weights as the pipeline writes them (canonical strings)."""
    if isinstance(value, dict):
        return {k: canonical_quantities(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [canonical_quantities(v) for v in value]
    if key in _QUANTITIES and isinstance(value, (str, int)) and not isinstance(value, bool):
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
        have = meta.get(key) or {}
        theirs = live_meta.get(key) or {}
        kept = {k: v for k, v in have.items() if k not in names or k in theirs}
        if kept:
            meta[key] = kept
        else:
            meta.pop(key, None)
    template = (out.get("spec") or {}).get("metadata") if out.get("kind") == "ResourceClaimTemplate" else None
    if isinstance(template, dict):
        live_labels = (((live.get("spec") or {}).get("metadata") or {}).get("labels")) or {}
        labels = {
            k: v
            for k, v in (template.get("labels") or {}).items()
            if k not in PIPELINE_LABELS or k in live_labels
        }
        if labels:
            template["labels"] = labels
        else:
            template.pop("labels", None)
        if not template:
            out["spec"].pop("metadata")
    return out


def compare(live: Mapping[str, Any], rendered: Mapping[str, Any]) -> tuple[FieldDiff, ...]:
    """The fields that differ, both sides normalised; () when equal."""
    out: list[FieldDiff] = []
    _diff(normalise(live), normalise(rendered), "", (), out)
    return tuple(out)


def _diff(live: Any, rendered: Any, path: str, pointer: tuple[str | int, ...], out: list[FieldDiff]) -> None:
    if isinstance(live, dict) and isinstance(rendered, dict):
        for key in [*live, *(k for k in rendered if k not in live)]:
            sub = f"{path}.{key}" if path else str(key)
            a, b = live.get(key, MISSING), rendered.get(key, MISSING)
            if a is MISSING or b is MISSING:
                if not (a in ({}, []) and b is MISSING):
                    out.append(FieldDiff(sub, a, b, (*pointer, key)))
            else:
                _diff(a, b, sub, (*pointer, key), out)
        return
    if isinstance(live, list) and isinstance(rendered, list) and len(live) == len(rendered):
        if live == rendered:
            return
        names = [_item_name(a) for a in live]
        if all(n is not None for n in names) and names == [_item_name(b) for b in rendered]:
            for i, (a, b) in enumerate(zip(live, rendered, strict=True)):
                _diff(a, b, f"{path}[{names[i]}]", (*pointer, i), out)
            return
        if all(isinstance(a, dict) for a in live):
            for i, (a, b) in enumerate(zip(live, rendered, strict=True)):
                _diff(a, b, f"{path}[{i}]", (*pointer, i), out)
            return
    if live != rendered:
        out.append(FieldDiff(path, live, rendered, pointer))


def _item_name(item: Any) -> str | None:
    name = item.get("name") if isinstance(item, dict) else None
    return name if isinstance(name, str) else None
