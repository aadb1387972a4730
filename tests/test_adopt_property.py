"""The round trip over drawn fleets: any cluster of a synthetic fleet (`bench.fleet`: whole GPUs and MIG
slices, cohorts with borrowing and lending, claim templates, a tenant Component with its own labels and
annotations, Kueue v0.18 and v0.19), rendered, dumped as `kubectl get -o yaml` prints it and imported into
an empty repository, renders back to the same bytes."""

from __future__ import annotations

import tempfile
from pathlib import Path

import yaml
from conftest import shared_dir
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from bench import fleet
from gputenancy import engine
from gputenancy.adopt import importing, init, output, sample
from gputenancy.adopt.proof import Verdict
from gputenancy.cluster import dump as dumps

SPECS = {s.name: s for s in fleet.CLUSTERS}


def _dump(src: Path, cluster: str, shared: Path, out: Path) -> None:
    result = engine.run(src, cluster=cluster, schemas=shared, cache=None)
    assert not result.failed
    out.write_text(yaml.safe_dump(sample.rendered_list(result, cluster)))


@settings(max_examples=6)
@given(
    seed=st.integers(min_value=1, max_value=100_000),
    tenants=st.integers(min_value=2, max_value=8),
    cluster=st.sampled_from(sorted(SPECS)),
)
def test_a_drawn_fleet_cluster_imports_into_an_empty_repository_and_renders_back_byte_for_byte(
    seed: int, tenants: int, cluster: str
) -> None:
    shared = shared_dir()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        fleet.generate(base / "src", tenants, seed=seed)
        _dump(base / "src", cluster, shared, base / "dump.yaml")
        assume("kind: ClusterQueue" in (base / "dump.yaml").read_text())  # a cluster no tenant is placed on
        root = base / "adopted"
        init.init(root, ["@acme/gpu-platform"])
        options = importing.Options(cluster, kubernetes_version=SPECS[cluster].kubernetes, schemas=shared)
        outcome = importing.plan(root, dumps.read_dump(base / "dump.yaml"), options)
        assert outcome.exact, [
            (r.shown(), r.why, r.diffs) for r in outcome.results if r.verdict is Verdict.DIFFERENT
        ]
        output.write(root, outcome.files)
        want = engine.run(base / "src", cluster=cluster, schemas=shared, cache=None).clusters[cluster].tree
        got = engine.run(root, cluster=cluster, schemas=shared, cache=None).clusters[cluster].tree
        keep = [k for k in want if not k.startswith("_hub/")]
        assert {k: got.get(k) for k in keep} == {k: want[k] for k in keep}
        assert sorted(k for k in got if not k.startswith("_hub/")) == sorted(keep)
