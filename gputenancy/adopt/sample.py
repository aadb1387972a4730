"""What `kubectl get -o yaml` would print for a cluster Argo CD synced from a render: the rendered
objects of the kinds import reads, the manager's ConfigMap holding the rendered Configuration and (for
the Kueue version) its Deployment. The round trip's other end, for tests and the benchmark."""

from __future__ import annotations

from typing import Any

from gputenancy import engine
from gputenancy.adopt import records
from gputenancy.cluster.dump import CONFIG_KEY, CONFIG_MAP
from gputenancy.policy import rules
from gputenancy.render import kueueconfig


def rendered_list(result: engine.Result, cluster: str, *, deployment: bool = True) -> dict[str, Any]:
    """A `v1` List of what the cluster holds after Argo CD synced `result`'s render of `cluster`."""
    c = result.model.clusters[cluster]
    items = [dict(o.body) for o in result.clusters[cluster].objects if o.body["kind"] in records.IMPORTED]
    config, _ = kueueconfig.build(result.model, c, rules.effective_catalog(result.model))
    namespace, name = CONFIG_MAP
    items.append(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace},
            "data": {CONFIG_KEY: config.text},
        }
    )
    if deployment:
        image = {"name": "manager", "image": f"registry.k8s.io/kueue/kueue:{c.kueue_version}"}
        items.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "kueue-controller-manager", "namespace": namespace},
                "spec": {"template": {"spec": {"containers": [image]}}},
            }
        )
    return {"apiVersion": "v1", "kind": "List", "items": items}
