"""What the server stores and what the pipeline renders, made comparable.

`strip_server` removes what the API server and controllers own (status, managedFields, uid, ...);
`normalise` also converts Kueue objects to `kueue.x-k8s.io/v1beta2` as Kueue's conversion does for the
fields the pipeline writes, writes quota quantities in their canonical form (as apimachinery prints them),
and, given the Kueue CRDs of the cluster's version, fills in the defaults the API server writes. Two
objects that mean the same normalise to equal values: a hand-written v1beta1 object, its server-stored
form, and the pipeline's rendering of it.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gputenancy.check.kubernetes import crds, crdschema
from gputenancy.check.kubernetes.crdcheck import apply_defaults
from gputenancy.inputs import quantity

SERVER_OWNED: tuple[str, ...] = (
    "managedFields",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)
"""metadata fields the server writes; never in Git."""
SERVER_ANNOTATIONS = frozenset(
    {
        "kubectl.kubernetes.io/last-applied-configuration",
        "argocd.argoproj.io/tracking-id",
        "deployment.kubernetes.io/revision",
    }
)
"""Annotations written by the tools that apply objects, not by their authors."""
KUEUE_FINALIZERS = frozenset({"kueue.x-k8s.io/resource-in-use", "kueue.x-k8s.io/managed-resources"})
"""Finalizers Kueue adds to the objects it tracks."""
KUEUE = "kueue.x-k8s.io"
HUB = f"{KUEUE}/v1beta2"
QUOTA_FIELDS = frozenset({"nominalQuota", "borrowingLimit", "lendingLimit"})
_V1BETA1_FUNGIBILITY = {"Borrow": "MayStopSearch", "Preempt": "MayStopSearch"}


def strip_server(body: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of `body` without the fields the server and controllers own."""
    out = copy.deepcopy(dict(body))
    out.pop("status", None)
    meta = out.get("metadata")
    if isinstance(meta, dict):
        for key in SERVER_OWNED:
            meta.pop(key, None)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict):
            for key in SERVER_ANNOTATIONS & annotations.keys():
                del annotations[key]
        finalizers = meta.get("finalizers")
        if isinstance(finalizers, list):
            meta["finalizers"] = [f for f in finalizers if f not in KUEUE_FINALIZERS]
        for key in ("annotations", "labels", "finalizers"):
            if key in meta and not meta[key]:
                del meta[key]
    return out


def normalise(body: Mapping[str, Any], *, crd_dir: Path | None = None) -> dict[str, Any]:
    """`strip_server`, then v1beta2, canonical quota quantities and (with `crd_dir`) the CRD defaults."""
    out = strip_server(body)
    api_version = str(out.get("apiVersion", ""))
    if api_version.startswith(KUEUE + "/"):
        if api_version != HUB:
            _to_v1beta2(out)
        if crd_dir is not None:
            _defaults(out, crd_dir)
        _canonical_quotas(out.get("spec"))
    return out


def _to_v1beta2(body: dict[str, Any]) -> None:
    """Kueue's v1beta1 -> v1beta2 conversion for what a policy repository writes."""
    body["apiVersion"] = HUB
    spec = body.get("spec")
    if body.get("kind") != "ClusterQueue" or not isinstance(spec, dict):
        return
    if "cohort" in spec:
        cohort = spec.pop("cohort")
        if cohort:
            spec["cohortName"] = cohort
    checks = spec.pop("admissionChecks", None)
    if checks:
        strategy = spec.setdefault("admissionChecksStrategy", {})
        listed = strategy.setdefault("admissionChecks", [])
        known = {c.get("name") for c in listed if isinstance(c, Mapping)}
        listed.extend({"name": name} for name in checks if name not in known)
    fungibility = spec.get("flavorFungibility")
    if isinstance(fungibility, dict):
        for key in ("whenCanBorrow", "whenCanPreempt"):
            value = fungibility.get(key)
            if value in _V1BETA1_FUNGIBILITY:
                fungibility[key] = _V1BETA1_FUNGIBILITY[value]


def _defaults(body: dict[str, Any], crd_dir: Path) -> None:
    kind = str(body.get("kind", ""))
    try:
        if "v1beta2" not in crds.load(crd_dir)[(KUEUE, kind)].versions:
            return
        plan = crdschema.compiled(crd_dir, KUEUE, kind, "v1beta2").plan
    except (KeyError, OSError):
        return
    if plan is not None:
        apply_defaults(body, plan)


def _canonical_quotas(value: Any) -> None:
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, item in node.items():
                if key in QUOTA_FIELDS and isinstance(item, str | int | float) and not isinstance(item, bool):
                    with contextlib.suppress(quantity.QuantityError):
                        node[key] = quantity.canonical(item)
                else:
                    stack.append(item)
        elif isinstance(node, list):
            stack.extend(node)
