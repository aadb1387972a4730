"""metadata of every object as the API server checks it: names, namespace, labels, annotation keys and size."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

from gputenancy.check.checkrun import Run
from gputenancy.check.webhook import webhooks
from gputenancy.common.findings import Severity
from gputenancy.common.objects import FieldPath, RenderedObject

_MAX_ANNOTATIONS_BYTES = 256 * 1024
_LABELS: FieldPath = ("metadata", "labels")


def _strings_key(mapping: Any, *, values: bool) -> tuple[Any, ...] | None:
    """A small dict of short strings as a hashable key (its items, or its keys when `values` is
    False, the values then being free), else None."""
    if type(mapping) is not dict or len(mapping) > 32:
        return None
    for key, value in mapping.items():
        if type(key) is not str or len(key) > 256:
            return None
        if values and (type(value) is not str or len(value) > 256):
            return None
    return tuple(mapping.items()) if values else tuple(mapping)


@functools.lru_cache(maxsize=4096)
def _label_problems(items: tuple[tuple[str, str], ...]) -> tuple[tuple[FieldPath, str], ...]:
    """Label problems of metadata.labels, for labels objects repeat."""
    return tuple((p.path, p.message) for p in webhooks.label_problems(dict(items), _LABELS))


def _annotation_key_problems(key: Any) -> list[tuple[FieldPath, str]]:
    return [
        (("metadata", "annotations", str(key)), f"Invalid value: {json.dumps(key)}: {msg}")
        for msg in webhooks.qualified_name_errors(str(key).lower())
    ]


@functools.lru_cache(maxsize=4096)
def _annotation_problems(keys: tuple[str, ...]) -> tuple[tuple[FieldPath, str], ...]:
    """Problems of metadata.annotations keys, for annotation keys objects repeat."""
    return tuple(problem for key in keys for problem in _annotation_key_problems(key))


def check_metadata(run: Run, obj: RenderedObject, body: Mapping[str, Any], group: str, kind: str) -> None:
    meta = body.get("metadata")
    if not isinstance(meta, Mapping):
        run.add(obj, body, ("metadata",), "k8s-metadata", "Required value")
        return
    name, generate = meta.get("name"), meta.get("generateName")
    check = (
        webhooks.dns1123_label_errors
        if (group, kind) == ("", "Namespace")
        else webhooks.dns1123_subdomain_errors
    )
    if isinstance(name, str) and name:
        for msg in check(name):
            run.add(
                obj, body, ("metadata", "name"), "k8s-metadata", f"Invalid value: {json.dumps(name)}: {msg}"
            )
    elif isinstance(generate, str) and generate:
        run.add(
            obj,
            body,
            ("metadata", "generateName"),
            "k8s-metadata",
            "generateName without name: Argo CD would create a new object on every sync",
            Severity.WARNING,
        )
        # The API server checks the prefix with a trailing '-' read as a letter.
        for msg in check(generate[:-1] + "a" if generate.endswith("-") else generate):
            run.add(
                obj,
                body,
                ("metadata", "generateName"),
                "k8s-metadata",
                f"Invalid value: {json.dumps(generate)}: {msg}",
            )
    else:
        run.add(
            obj, body, ("metadata", "name"), "k8s-metadata", "Required value: a GitOps object needs a name"
        )
    namespace = meta.get("namespace")
    if isinstance(namespace, str) and namespace:
        for msg in webhooks.dns1123_label_errors(namespace):
            run.add(
                obj,
                body,
                ("metadata", "namespace"),
                "k8s-metadata",
                f"Invalid value: {json.dumps(namespace)}: {msg}",
            )
    labels = meta.get("labels")
    labels_key = _strings_key(labels, values=True)
    for path, message in (
        _label_problems(labels_key)
        if labels_key is not None
        else [(p.path, p.message) for p in webhooks.label_problems(labels, _LABELS)]
    ):
        run.add(obj, body, path, "k8s-metadata", message)
    annotations = meta.get("annotations")
    if isinstance(annotations, Mapping):
        keys = _strings_key(annotations, values=False)
        size = 0
        for key, value in annotations.items():
            size += len(str(key)) + len(str(value))
            if keys is None:
                for path, message in _annotation_key_problems(key):
                    run.add(obj, body, path, "k8s-metadata", message)
        if keys is not None:
            for path, message in _annotation_problems(keys):
                run.add(obj, body, path, "k8s-metadata", message)
        if size > _MAX_ANNOTATIONS_BYTES:
            run.add(
                obj,
                body,
                ("metadata", "annotations"),
                "k8s-metadata",
                f"Too long: must have at most {_MAX_ANNOTATIONS_BYTES} bytes",
            )
