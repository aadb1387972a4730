"""Kueue versions as data: every supported minor has all its parts; versions outside the supported set
are findings that name it, in every output format; Kubernetes 1.34 to 1.37 validate against their own
resource.k8s.io/v1 schemas."""

from __future__ import annotations

import json
import types
from pathlib import Path
from typing import Any

import minirepo
import pytest

from gputenancy.check import validate
from gputenancy.check.config import configcheck
from gputenancy.check.webhook import webhooks
from gputenancy.cli import app as cli
from gputenancy.common.findings import Origin
from gputenancy.common.objects import RenderedObject
from gputenancy.versions import gates, kueue

REPO = Path(__file__).resolve().parent.parent


def main(root: Path, *args: str) -> int:
    return cli.main(["--root", str(root), "--no-cache", *args])


def test_every_supported_minor_has_all_its_parts() -> None:
    minors = kueue.supported_minors()
    assert minors == sorted(minors, key=lambda m: tuple(int(x) for x in m[1:].split(".")))
    assert {"v0.18", "v0.19"} <= set(minors)
    for minor in minors:
        assert kueue.missing_parts(minor) == [], minor
        data = kueue.for_version(minor + ".0")
        assert data.kubernetes_minimum <= data.kubernetes_maximum
        assert data.config_api_versions and data.frameworks
        assert "flavorFungibility" in data.object_defaults["ClusterQueue"]
        release = data.release
        assert release.repository.startswith("https://") and release.kustomize_path
        assert release.configmap_installed_name.endswith(release.configmap_name)
        assert release.deployment_installed_name.endswith(release.deployment_name)
    # Every minor of the gate table is supported (a table without data would be a half-added version).
    assert set(gates.supported_versions()) <= set(minors)


def test_a_minor_without_a_part_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    table = dict(kueue._table())
    table["v0.99"] = table["v0.19"]
    monkeypatch.setattr(kueue, "_table", lambda: types.MappingProxyType(table))
    assert kueue.missing_parts("v0.99") == [
        "feature gates (data/kueue_feature_gates.json)",
        "start-up rules (data/kueue_startup_rules.json)",
    ]
    assert kueue.missing_parts("v0.19") == []


@pytest.mark.parametrize("fmt", ["text", "github", "json"])
def test_an_unsupported_kueue_version_is_a_finding_naming_the_supported_ones(
    tmp_path: Path, fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = minirepo.make(
        tmp_path, [minirepo.cluster("c1", kueue="v0.21.0"), minirepo.cluster("c2", k8s="1.38")]
    )
    assert main(root, "validate", "--format", fmt) == 1
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    supported = ", ".join(f"{m}.x" for m in kueue.supported_minors())
    if fmt == "json":
        found = {f["rule"]: f for f in json.loads(captured.out)["findings"]}
        assert found["kueue-version-unsupported"]["path"] == "overlays/c1/cluster.yaml"
        assert (
            f"Kueue v0.21.0 is not supported (supported: {supported}"
            in found["kueue-version-unsupported"]["message"]
        )
        assert "docs/adding-a-kueue-version.md" in found["kueue-version-unsupported"]["message"]
        assert found["k8s-version-unsupported"]["message"] == (
            "Kubernetes 1.38 is not supported with Kueue v0.19 (supported: 1.34 to 1.37)"
        )
    elif fmt == "github":
        assert "::error file=overlays/c1/cluster.yaml,line=" in captured.out
        assert (
            f"title=kueue-version-unsupported::Kueue v0.21.0 is not supported (supported: {supported}"
            in captured.out
        )
    else:
        assert "overlays/c1/cluster.yaml:" in captured.out and "(kueue-version-unsupported)" in captured.out
        assert "overlays/c2/cluster.yaml:" in captured.out and "(k8s-version-unsupported)" in captured.out


def test_plan_with_an_unsupported_version_is_a_finding_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = minirepo.make(tmp_path, [minirepo.cluster("c1", kueue="v0.21.0")])
    assert main(root, "plan", "--format", "json") == 1
    out = capsys.readouterr().out
    assert [f["rule"] for f in json.loads(out)["findings"]] == ["kueue-version-unsupported"]


def test_older_kubernetes_is_refused_with_the_supported_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = minirepo.make(tmp_path, [minirepo.cluster("c1", k8s="1.33")])
    assert main(root, "validate") == 1
    assert (
        "Kubernetes 1.33 has no resource.k8s.io/v1, which Kueue reads for DRA (supported: 1.34 to 1.37)"
        in (capsys.readouterr().out)
    )


@pytest.mark.parametrize("k8s", ["1.34", "1.35", "1.36", "1.37"])
def test_each_supported_kubernetes_release_validates_against_its_own_dra_schema(
    tmp_path: Path, k8s: str, shared: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = minirepo.make(tmp_path, [minirepo.cluster("c1", k8s=k8s)])
    assert main(root, "validate", "--schemas", str(shared)) == 0, capsys.readouterr().out
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "x", "namespace": "t1"},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "typo": 1}}]
                }
            }
        },
    }
    report = validate.validate_objects(
        [RenderedObject("c1", claim, Origin("tenants/t1.yaml", 1, 1))],
        kueue_version="v0.19.2",
        kubernetes_version=k8s,
        crd_dir=None,
    )
    assert f"kubernetes-validate/v{k8s}.0-local-strict" in report.schema_dirs_used
    assert not any("newest bundled" in s for s in report.skipped)
    assert any("typo" in f.message for f in report.findings)  # the strict schema of that release


def test_reserved_resource_names_come_from_the_version_data(monkeypatch: pytest.MonkeyPatch) -> None:
    config: dict[str, Any] = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "resources": {"deviceClassMappings": [{"name": "pods", "deviceClassNames": ["gpu.nvidia.com"]}]},
    }
    origin = lambda path: Origin("base/kueue-config.yaml", 1, 1)  # noqa: E731
    assert not [
        f
        for f in configcheck.check_configuration(config, "v0.19.2", origin_of=origin)
        if "reserves" in f.message
    ]
    data = kueue.for_version("v0.19.2")
    patched = types.SimpleNamespace(**{**data.__dict__, "reserved_resource_names": frozenset({"pods"})})
    monkeypatch.setattr(kueue, "for_version", lambda version: patched)
    (found,) = [
        f
        for f in configcheck.check_configuration(config, "v0.19.2", origin_of=origin)
        if "reserves" in f.message
    ]
    assert (
        "resources.deviceClassMappings[0].name: Invalid value: 'pods': a resource name Kueue v0.19 reserves"
        in found.message
    )


def test_webhook_rules_a_version_does_not_enforce_are_not_run(monkeypatch: pytest.MonkeyPatch) -> None:
    every = {r.id for r in webhooks.rules_for("kueue.x-k8s.io/v1beta2", "ClusterQueue", "v0.19.2")}
    assert "kueue-webhook-cq-flavor-unique" in every
    data = kueue.for_version("v0.19.2")
    patched = types.SimpleNamespace(
        **{**data.__dict__, "webhook_rules_not_enforced": frozenset({"kueue-webhook-cq-flavor-unique"})}
    )
    monkeypatch.setattr(kueue, "for_version", lambda version: patched)
    webhooks.rules_for.cache_clear()
    try:
        fewer = {r.id for r in webhooks.rules_for("kueue.x-k8s.io/v1beta2", "ClusterQueue", "v0.19.2")}
    finally:
        webhooks.rules_for.cache_clear()
    assert fewer == every - {"kueue-webhook-cq-flavor-unique"}


def test_the_recipe_names_every_part() -> None:
    recipe = (REPO / "docs" / "adding-a-kueue-version.md").read_text()
    files = [name.split("(", 1)[1].rstrip(")") for name in kueue.PARTS]  # "data/kueue/<minor>.json", ...
    assert len(files) >= 3
    for part in (
        *files,
        "tools/extract_feature_gates.py",
        "tools/verify_kueue_application.py",
        "schemas fetch --update",
    ):
        assert part in recipe, part
