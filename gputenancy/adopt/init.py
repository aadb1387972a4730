"""`init DIR`: a repository with no tenants and no clusters, ready to import a cluster into; it validates
and renders an empty output."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from gputenancy.common.findings import Origin, PipelineError

PLATFORM = """\
# yaml-language-server: $schema=../gputenancy/schemas/platform.schema.json
# The platform: device-class catalog, ResourceFlavors, cohorts and the base Kueue Configuration.
# `python pipeline.py import` adds what a cluster's live objects need.
apiVersion: gputenancy.io/v1
kind: Platform
kueueConfig: kueue-config.yaml
deviceClasses: []
flavors: []
# The platform team: owns base/, overlays/, generated/ and the pipeline in .github/CODEOWNERS.
owners: {owners}
"""

KUEUE_CONFIG = """\
# Base Kueue manager Configuration for every cluster. Overlays change it under kueue.config;
# the pipeline adds featureGates and resources.deviceClassMappings.
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
"""

KUSTOMIZATION = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
# Static platform objects for every cluster. platform.yaml and kueue-config.yaml are pipeline inputs,
# not kustomize resources.
resources: []
"""

README = """\
# GPU tenancy

Tenants in `tenants/`, the platform in `base/`, clusters in `overlays/<cluster>/`; `generated/` is
rendered by `python pipeline.py render`. Adopt a cluster that already runs Kueue with
`python pipeline.py import --cluster NAME --from FILE` (docs/adopting.md of gputenancy).
"""


def files(owners: Sequence[str]) -> Mapping[str, str]:
    quoted = "[" + ", ".join(f'"{o}"' for o in owners) + "]"
    return {
        "base/platform.yaml": PLATFORM.format(owners=quoted),
        "base/kueue-config.yaml": KUEUE_CONFIG,
        "base/kustomization.yaml": KUSTOMIZATION,
        "tenants/.gitkeep": "",
        "overlays/.gitkeep": "",
        "README.md": README,
    }


def init(directory: Path, owners: Sequence[str]) -> list[str]:
    """Write the files into `directory` (created; it must be empty or absent). Returns their paths."""
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise PipelineError(
            [Origin(str(directory)).finding("init-target", "not an empty directory: nothing was written")]
        )
    written = []
    for rel, text in files(owners).items():
        path = directory / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(rel)
    return written
