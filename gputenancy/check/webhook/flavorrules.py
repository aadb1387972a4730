"""Admission rules of ResourceFlavor (Kueue's webhook: node labels, taints, tolerations) and of
LocalQueue (the naming rules that jobs depend on), listed by `gputenancy.check.webhook.webhooks.RULES`."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from gputenancy.check.webhook.admission import Problem, get_in, label_problems, mapping_items
from gputenancy.common.names import (
    dns1123_subdomain_errors,
    invalid,
    label_value_errors,
    qualified_name_errors,
)


def rf_node_labels(body: Mapping[str, Any]) -> Iterator[Problem]:
    """ResourceFlavor nodeLabels: keys are qualified names, values are label values.

    Passes: nodeLabels: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}.
    Fails: nodeLabels: {"gpu type": h100}.
    """
    yield from label_problems(get_in(body, "spec", "nodeLabels"), ("spec", "nodeLabels"))


def rf_node_taints(body: Mapping[str, Any]) -> Iterator[Problem]:
    """ResourceFlavor nodeTaints: valid key and value, unique by key and effect.

    Passes: [{key: gpu, value: "true", effect: NoSchedule}, {key: gpu, effect: NoExecute}].
    Fails: two taints with key gpu and effect NoSchedule.
    """
    seen: set[tuple[Any, Any]] = set()
    for i, taint in mapping_items(get_in(body, "spec", "nodeTaints")):
        key, value = taint.get("key"), taint.get("value")
        for msg in qualified_name_errors(key if isinstance(key, str) else ""):
            yield Problem(("spec", "nodeTaints", i, "key"), invalid(key, msg))
        for msg in label_value_errors(value) if isinstance(value, str) else []:
            yield Problem(("spec", "nodeTaints", i, "value"), invalid(value, msg))
        pair = (key, taint.get("effect"))
        if pair in seen:
            yield Problem(
                ("spec", "nodeTaints", i), "Duplicate value: taints must be unique by key and effect pair"
            )
        seen.add(pair)


def rf_tolerations(body: Mapping[str, Any]) -> Iterator[Problem]:
    """ResourceFlavor tolerations: a non-empty key is a qualified name; an Equal value is a label value.

    Passes: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}].
    Fails: [{key: "gpu type", operator: Exists}].
    """
    for i, tol in mapping_items(get_in(body, "spec", "tolerations")):
        key, value = tol.get("key"), tol.get("value")
        if isinstance(key, str) and key:
            for msg in qualified_name_errors(key):
                yield Problem(("spec", "tolerations", i, "key"), invalid(key, msg))
        if tol.get("operator", "Equal") == "Equal" and isinstance(value, str):
            for msg in label_value_errors(value):
                yield Problem(("spec", "tolerations", i, "value"), invalid(value, msg))


def lq_name_length(body: Mapping[str, Any]) -> Iterator[Problem]:
    """A LocalQueue name fits the kueue.x-k8s.io/queue-name label value: at most 63 characters.

    Passes: name: team-a.
    Fails: a 64-character name (jobs could not select the queue).
    """
    name = get_in(body, "metadata", "name")
    if isinstance(name, str) and len(name) > 63:
        yield Problem(
            ("metadata", "name"),
            f"{len(name)} characters: a LocalQueue name must be at most 63 characters, "
            "since jobs select it with the kueue.x-k8s.io/queue-name label",
        )


def lq_cluster_queue_ref(body: Mapping[str, Any]) -> Iterator[Problem]:
    """spec.clusterQueue is a ClusterQueue reference: a DNS subdomain of at most 253 characters.

    Passes: clusterQueue: team-a.
    Fails: clusterQueue: Team_A; clusterQueue missing.
    """
    ref = get_in(body, "spec", "clusterQueue")
    if not isinstance(ref, str) or not ref:
        yield Problem(("spec", "clusterQueue"), "Required value: a LocalQueue must name its ClusterQueue")
        return
    for msg in dns1123_subdomain_errors(ref):
        yield Problem(("spec", "clusterQueue"), invalid(ref, msg))
