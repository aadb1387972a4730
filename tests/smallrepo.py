"""A small repository of its own under tmp_path (independent of the example content): one cluster `c1`,
two tenants, a driver-installed DeviceClass and a rendered one, two flavors and a cohort."""

from __future__ import annotations

import textwrap
from pathlib import Path

PLATFORM = """\
apiVersion: gputenancy.io/v1
kind: Platform
kueueConfig: kueue-config.yaml
deviceClasses:
  - name: gpu.example.com
    resource: example.com/gpu
  - name: slice.example.com
    resource: example.com/slice
    selectors:
      - device.driver == 'gpu.example.com'
flavors:
  - name: big
  - name: small
cohorts:
  - name: pool
"""

KUEUE_CONFIG = """\
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
integrations:
  frameworks:
    - batch/job
"""

CLUSTER = """\
apiVersion: gputenancy.io/v1
kind: Cluster
name: c1
kubernetesVersion: "1.35"
kueue:
  version: {version}
  install: {install}
{extra}capacity:
  - flavor: big
    devices:
      gpu.example.com: 16
      slice.example.com: 16
    resources:
      cpu: 512
      memory: 4Ti
  - flavor: small
    devices:
      gpu.example.com: 16
    resources:
      cpu: 512
      memory: 4Ti
"""

OVERLAY = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ../../base
  - _platform
"""

COMPONENT = """\
apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
"""

TENANT = """\
apiVersion: gputenancy.io/v1
kind: Tenant
name: {name}
owners: ["@acme/{name}"]
namespaces:
  - {name}-ns
cohort: pool
budgets:
  default:
    - flavor: big
      devices:
        gpu.example.com: {{nominal: 4, borrowingLimit: 2}}
        slice.example.com: 2
      resources:
        cpu: 32
        memory: 128Gi
claimTemplates:
  - name: gpu-x2
    deviceClass: gpu.example.com
    count: 2
  - name: slice-x1
    deviceClass: slice.example.com
"""


def make(
    tmp_path: Path,
    *,
    version: str = "v0.19.2",
    install: str = "manifests",
    cluster_extra: str = "",
    component: str | None = None,
    overlay_extra: str = "",
    tenants: dict[str, str] | None = None,
    platform_extra: str = "",
) -> Path:
    """Write the repository; returns its root. `component` (text appended to a Component) creates
    overlays/c1/tenants/kustomization.yaml; `tenants` maps names to whole tenant files."""
    root = tmp_path / "repo"
    (root / "base").mkdir(parents=True)
    (root / "base/platform.yaml").write_text(PLATFORM + platform_extra)
    (root / "base/kueue-config.yaml").write_text(KUEUE_CONFIG)
    (root / "base/kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n"
    )
    overlay = root / "overlays/c1"
    overlay.mkdir(parents=True)
    (overlay / "cluster.yaml").write_text(
        CLUSTER.format(
            version=version, install=install, extra=textwrap.indent(textwrap.dedent(cluster_extra), "  ")
        )
    )
    (overlay / "kustomization.yaml").write_text(OVERLAY + textwrap.dedent(overlay_extra))
    if component is not None:
        (overlay / "tenants").mkdir()
        (overlay / "tenants/kustomization.yaml").write_text(COMPONENT + textwrap.dedent(component))
    (root / "tenants").mkdir()
    files = tenants if tenants is not None else {"a": TENANT.format(name="a"), "b": TENANT.format(name="b")}
    for name, text in files.items():
        (root / "tenants" / f"{name}.yaml").write_text(text)
    return root


def line_of(root: Path, rel: str, needle: str, nth: int = 1) -> int:
    seen = 0
    for n, text in enumerate((root / rel).read_text().splitlines(), 1):
        if needle in text:
            seen += 1
            if seen == nth:
                return n
    raise AssertionError(f"{needle!r} not in {rel}")
