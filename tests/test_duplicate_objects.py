"""`kustomize.duplicates`: an object produced twice on one cluster is found, as `ObjectKey` compares
objects (group, kind, namespace, name), whatever the shape of the fields kustomize wrote."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import repokit as s

from gputenancy import engine
from gputenancy.assemble import kustomize
from gputenancy.common.findings import Origin
from gputenancy.common.objects import RenderedObject

BLAME = Origin("overlays/c1/kustomization.yaml")


def _by_keys(objects: list[RenderedObject]) -> list[str]:
    """The duplicates as comparing each object's ObjectKey finds them."""
    seen = set()
    out = []
    for o in objects:
        if o.key in seen:
            out.append(f"{o.key} is produced twice on cluster 'c1'")
        seen.add(o.key)
    return out


def _object(api_version: Any, kind: Any, namespace: Any, name: Any) -> RenderedObject:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    return RenderedObject("c1", {"apiVersion": api_version, "kind": kind, "metadata": meta}, BLAME)


def test_duplicates_are_those_of_the_object_keys(tmp_path: Path) -> None:
    root = s.write(tmp_path / "repo", [s.tenant("a"), s.tenant("b")], component=True)
    built = list(engine.run(root, cache=None).clusters["c1"].objects)
    assert built and kustomize.duplicates("c1", built, BLAME) == []
    twice = [*built, built[0], built[-1], built[-1]]
    found = kustomize.duplicates("c1", twice, BLAME)
    assert [f.message for f in found] == _by_keys(twice) and len(found) == 3
    assert {(f.path, f.rule) for f in found} == {(BLAME.path, "duplicate-object")}
    # fields of other types, read as key_of reads them: 1 and "1", None and "" are the same name
    odd = [
        _object(*fields)
        for fields in itertools.product(
            ["v1", "apps/v1", 1, None], ["ConfigMap", 2], [None, "", "ns", 3], ["1", 1]
        )
    ]
    assert [f.message for f in kustomize.duplicates("c1", odd, BLAME)] == _by_keys(odd)
    assert kustomize.duplicates("c1", odd, BLAME)
