"""Quantities that survive every YAML reader: what generated/ holds reads back, through kustomize's own
YAML (Go, YAML 1.2) and PyYAML (YAML 1.1), as the same string, in the canonical form the API server
stores. A quantity written plain as `30e9` reaches the API server as a number and is stored as `30G`."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from gputenancy.common import fastyaml, proc
from gputenancy.common.objects import to_yaml
from gputenancy.inputs.quantity import parse

SUFFIXES = ["", "m", "k", "M", "G", "T", "Ki", "Mi", "Gi", "Ti", "n", "u"]

number = st.builds(
    lambda whole, frac: whole + (f".{frac}" if frac else ""),
    st.integers(min_value=0, max_value=10**7).map(str),
    st.one_of(st.just(""), st.integers(min_value=0, max_value=999).map(str)),
)
exponent = st.integers(min_value=-6, max_value=12).map(lambda e: f"e{e}")
quantity_text = st.builds(
    lambda n, s: n + s,
    number,
    st.one_of(st.sampled_from(SUFFIXES), exponent, st.sampled_from(["E3", "e+3"])),
)


def _canonical(text: str) -> str:
    return parse(text).canonical()


def _through_kustomize(values: list[str]) -> list[object]:
    body = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "q"},
        "spec": {
            "resourceGroups": [
                {
                    "coveredResources": ["r"],
                    "flavors": [
                        {
                            "name": "f",
                            "resources": [{"name": f"r{i}", "nominalQuota": v} for i, v in enumerate(values)],
                        }
                    ],
                }
            ]
        },
    }
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "q.yaml").write_text(to_yaml(body))
        (d / "kustomization.yaml").write_text("resources: [q.yaml]\n")
        out = proc.run([*proc.kustomize_command(), str(d)]).out
        # the same text PyYAML reads and the one generated/ gets written from it
        built = fastyaml.load(out)
        assert to_yaml(built) == to_yaml(body)
    flavors = built["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    return [r["nominalQuota"] for r in flavors]


@settings(max_examples=25)
@given(st.lists(quantity_text, min_size=1, max_size=30))
def test_canonical_quantities_survive_kustomize(texts: list[str]) -> None:
    values = [_canonical(t) for t in texts]
    assert _through_kustomize(values) == values
    for v in values:
        assert _canonical(v) == v  # canonical is a fixed point: what the API server stores back


def test_the_examples_of_the_issue() -> None:
    values = ["30e9", "7500e-3", "32", "1792Gi", "500m", "1e3", "0"]
    assert _through_kustomize(values) == values
    # written quoted, so no reader takes them for numbers
    text = to_yaml({"a": values})
    for v in values:
        assert f"'{v}'" in text
