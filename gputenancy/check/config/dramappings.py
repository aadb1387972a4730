"""Kueue's checks of the resources.deviceClassMappings of its manager Configuration
(pkg/config/validation.go), which `gputenancy.check.config.configcheck` reports."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from gputenancy.check.config.configfields import as_list, as_mapping
from gputenancy.check.kubernetes.dra import cel_selector_error
from gputenancy.check.webhook.admission import Problem
from gputenancy.common.names import (
    device_qualified_name_errors,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    qualified_name_errors,
)
from gputenancy.common.objects import FieldPath

# --- Kueue Configuration resources.deviceClassMappings (pkg/config/validation.go) -----------------

MAX_DEVICE_CLASSES_PER_MAPPING = 8
_MAX_RESOURCE_NAME_LENGTH = 253
_DRIVER_NAME_MAX_LENGTH = 63
_SOURCE_KINDS = ("counter", "capacity")


def _resource_name_problems(name: str, path: FieldPath) -> Iterator[Problem]:
    if errs := qualified_name_errors(name):
        yield Problem(path, f"Invalid value {name!r}: {'; '.join(errs)}")
    if len(name) > _MAX_RESOURCE_NAME_LENGTH:
        yield Problem(path, f"Invalid value {name!r}: must not exceed {_MAX_RESOURCE_NAME_LENGTH} characters")


def _source_common_problems(source: Mapping[str, Any], path: FieldPath) -> Iterator[Problem]:
    driver = source.get("driver")
    if driver is None or driver == "":
        yield Problem((*path, "driver"), "Required value")
    elif isinstance(driver, str):
        if len(driver) > _DRIVER_NAME_MAX_LENGTH:
            yield Problem(
                (*path, "driver"),
                f"Invalid value {driver!r}: must not exceed {_DRIVER_NAME_MAX_LENGTH} characters",
            )
        elif errs := dns1123_subdomain_errors(driver):
            yield Problem((*path, "driver"), f"Invalid value {driver!r}: {','.join(errs)}")
    selector_path = (*path, "deviceSelector", "cel", "expression")
    selector = as_mapping((as_mapping(source.get("deviceSelector")) or {}).get("cel"))
    expression = selector.get("expression") if selector is not None else None
    if expression is None or expression == "":
        yield Problem(selector_path, "Required value")
    elif isinstance(expression, str) and (error := cel_selector_error(expression)) is not None:
        prefix = "CEL" if error.startswith("compilation failed") else "CEL expression"
        yield Problem(selector_path, f"{prefix} {error}")


def _source_problems(
    mapping: Mapping[str, Any], mapping_path: FieldPath, disabled_sources: Mapping[str, str]
) -> Iterator[Problem]:
    sources = as_list(mapping.get("sources"))
    if not sources:
        return
    sources_path = (*mapping_path, "sources")
    used: set[str] = set()
    for index, raw in enumerate(sources):
        source = as_mapping(raw)
        if source is None:
            continue
        path = (*sources_path, index)
        kinds = [kind for kind in _SOURCE_KINDS if source.get(kind) is not None]
        if not kinds:
            yield Problem(path, "Required value: exactly one source type must be set per entry")
            continue
        if len(kinds) > 1:
            yield Problem(
                path, 'Invalid value "counter+capacity": exactly one source type must be set per entry'
            )
            continue
        kind = kinds[0]
        used.add(kind)
        if kind in disabled_sources:
            yield Problem((*path, kind), disabled_sources[kind])
            continue
        spec = as_mapping(source[kind])
        if spec is None:
            continue
        at, name = (*path, kind), spec.get("name")
        if kind == "counter":
            if name is None or name == "":
                yield Problem((*at, "name"), "Required value")
            elif isinstance(name, str) and (errs := dns1123_label_errors(name)):
                yield Problem((*at, "name"), f"Invalid value {name!r}: {','.join(errs)}")
        elif (isinstance(name, str) or name is None) and (errs := device_qualified_name_errors(name or "")):
            yield Problem((*at, "name"), f"Invalid value {name!r}: {'; '.join(errs)}")
        yield from _source_common_problems(spec, at)
    if len(used) > 1:
        yield Problem(sources_path, "cannot mix counter and capacity sources in the same mapping")


def _counter_name(mapping: Mapping[str, Any]) -> str:
    sources = as_list(mapping.get("sources"))
    first = as_mapping(sources[0]) if sources else None
    counter = as_mapping(first.get("counter")) if first is not None else None
    name = counter.get("name") if counter is not None else None
    return name if isinstance(name, str) else ""


def device_class_mapping_problems(
    mappings: Sequence[Any], path: FieldPath, disabled_sources: Mapping[str, str]
) -> Iterator[Problem]:
    """Kueue's checks of each deviceClassMappings entry.

    The name and every device class name are label keys of at most 253 characters; names are unique; a
    mapping lists 1..8 device classes, each once; a device class maps to one resource unless every mapping
    of it counts a distinct counter; each source is exactly one of counter / capacity (not mixed in one
    mapping) with a valid name, driver and CEL device selector. `disabled_sources` maps a source kind whose
    feature gate is off to the message for using it.
    """
    seen_names: set[str] = set()
    class_to_resource: dict[str, str] = {}
    class_counters: dict[str, set[str]] = {}
    for index, raw in enumerate(mappings):
        mapping = as_mapping(raw)
        if mapping is None:
            continue
        at = (*path, index)
        name = mapping.get("name")
        if name is None:
            name = ""
        if isinstance(name, str):
            yield from _resource_name_problems(name, (*at, "name"))
            if name in seen_names:
                yield Problem((*at, "name"), f"Duplicate value: {name!r}")
            seen_names.add(name)
        classes = as_list(mapping.get("deviceClassNames"))
        classes_path = (*at, "deviceClassNames")
        if not classes:
            yield Problem(classes_path, "Required value: at least one device class name is required")
        if len(classes) > MAX_DEVICE_CLASSES_PER_MAPPING:
            yield Problem(
                classes_path,
                f"Too many: {len(classes)}: must have at most {MAX_DEVICE_CLASSES_PER_MAPPING} items",
            )
        counter_name = _counter_name(mapping)
        seen_classes: set[str] = set()
        for class_index, device_class in enumerate(classes):
            if not isinstance(device_class, str):
                continue
            class_path = (*classes_path, class_index)
            yield from _resource_name_problems(device_class, class_path)
            if device_class in seen_classes:
                yield Problem(class_path, f"Duplicate value: {device_class!r}")
            seen_classes.add(device_class)
            existing = class_to_resource.get(device_class)
            if existing is None:
                class_to_resource[device_class] = name if isinstance(name, str) else ""
                class_counters[device_class] = {counter_name} if counter_name else set()
            elif existing != name:
                counters = class_counters[device_class]
                if not counter_name or not counters:
                    yield Problem(
                        class_path,
                        f"Invalid value {device_class!r}: device class already mapped to resource {existing}",
                    )
                elif counter_name in counters:
                    yield Problem(
                        class_path,
                        f"Invalid value {device_class!r}: device class already has a counter source "
                        f'for counter "{counter_name}"',
                    )
                else:
                    counters.add(counter_name)
        yield from _source_problems(mapping, at, disabled_sources)
