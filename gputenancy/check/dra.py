"""Dynamic Resource Allocation (DRA) rules.

The API server's validation of resource.k8s.io ResourceClaimTemplate / ResourceClaim / DeviceClass
(pkg/apis/resource/validation/validation.go) as admission rules, which `gputenancy.check.webhooks.RULES` lists;
the check of CEL device selectors; and Kueue's checks of the deviceClassMappings of its manager
Configuration (pkg/config/validation.go), which `gputenancy.check.configcheck` reports.

It also holds what every admission rule builds on: `Problem` (a field path and a message), `Rule` (an
entry of the table), the accessors that tolerate malformed input (`get_in`, `mapping_items`,
`string_items`) and `label_problems`. Every rule tolerates wrong types and missing fields: schema
validation reports those.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from gputenancy.check import celtypes
from gputenancy.check.celext import cel
from gputenancy.check.configfields import as_list, as_mapping
from gputenancy.check.names import (
    DEVICE_MAX_ID_LENGTH,
    c_identifier_errors,
    device_qualified_name_errors,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    invalid,
    label_errors,
    qualified_name_errors,
)
from gputenancy.findings import Severity
from gputenancy.objects import FieldPath

# --- problems, rules and accessors ----------------------------------------------------------------


class Problem(NamedTuple):
    """One violation at a field path inside an object body."""

    path: FieldPath
    message: str
    severity: Severity = Severity.ERROR


Check = Callable[[Mapping[str, Any]], Iterator[Problem]]


@dataclasses.dataclass(frozen=True)
class Rule:
    """A rule applies to objects whose apiVersion is in `api_versions` and whose kind is in `kinds`.

    `also_in_crd` marks a rule that repeats an `x-kubernetes-validations` rule of the Kueue CRD; it runs
    only when no CRD schema was applied, so one mistake yields one finding.
    """

    id: str
    api_versions: frozenset[str]
    kinds: frozenset[str]
    check: Check
    also_in_crd: bool = False

    @property
    def doc(self) -> str:
        return (self.check.__doc__ or "").strip()


_MAPPING = (dict, Mapping)


def get_in(body: Any, *keys: str) -> Any:
    """body[key1][key2]..., or None where a level is missing or not a mapping."""
    for key in keys:
        if not isinstance(body, _MAPPING):
            return None
        body = body.get(key)
    return body


def mapping_items(value: Any) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """(index, item) for every mapping in a list; nothing when `value` is not a list."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, _MAPPING):
                yield i, item


def string_items(value: Any) -> Iterator[tuple[int, str]]:
    """(index, item) for every string in a list; nothing when `value` is not a list."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, str):
                yield i, item


def label_problems(labels: Any, path: FieldPath) -> Iterator[Problem]:
    """ValidateLabels: every key a qualified name, every value a label value."""
    for at, message in label_errors(labels, path):
        yield Problem(at, message)


# --- resource.k8s.io (pkg/apis/resource/validation/validation.go) ---------------------------------

MAX_REQUESTS = MAX_SELECTORS = MAX_CONSTRAINTS = MAX_CONFIG = MAX_DEVICES = 32
MAX_SUBREQUESTS = 8
MAX_TOLERATIONS = 16
MAX_CEL_BYTES = MAX_OPAQUE_BYTES = 10 * 1024
_COMPREHENSION_VARS = re.compile(
    r"\.\s*(?:all|exists|exists_one|map|filter|transformList|transformMap|transformMapEntry|sortBy)"
    r"\(\s*([A-Za-z_]\w*)\s*,(?:\s*([A-Za-z_]\w*)\s*,)?"
)
_BIND_VARS = re.compile(r"\bcel\s*\.\s*bind\(\s*([A-Za-z_]\w*)")


def _claim_spec(body: Mapping[str, Any]) -> tuple[FieldPath, Any]:
    if body.get("kind") == "ResourceClaimTemplate":
        return ("spec", "spec"), get_in(body, "spec", "spec")
    return ("spec",), get_in(body, "spec")


def _requests(body: Mapping[str, Any]) -> Iterator[tuple[FieldPath, Mapping[str, Any]]]:
    root, spec = _claim_spec(body)
    requests = get_in(spec, "devices", "requests")
    if isinstance(requests, list):
        for i, req in enumerate(requests):
            if isinstance(req, _MAPPING):
                yield (*root, "devices", "requests", i), req


def _device_requests(body: Mapping[str, Any]) -> Iterator[tuple[FieldPath, Mapping[str, Any]]]:
    """Every `exactly` request and every firstAvailable subrequest: both carry class, selectors, count."""
    for path, req in _requests(body):
        exactly = req.get("exactly")
        if isinstance(exactly, _MAPPING):
            yield (*path, "exactly"), exactly
        subrequests = req.get("firstAvailable")
        if isinstance(subrequests, list):
            for k, sub in enumerate(subrequests):
                if isinstance(sub, _MAPPING):
                    yield (*path, "firstAvailable", k), sub


def _selectors(body: Mapping[str, Any]) -> Iterator[tuple[FieldPath, Any]]:
    if body.get("kind") == "DeviceClass":
        yield ("spec", "selectors"), get_in(body, "spec", "selectors")
    for path, dev in _device_requests(body):
        yield (*path, "selectors"), dev.get("selectors")


def _device_count(dev: Mapping[str, Any]) -> int | None:
    mode, count = dev.get("allocationMode") or "ExactCount", dev.get("count", 1)
    if mode != "ExactCount" or isinstance(count, bool) or not isinstance(count, int):
        return None
    return count


@functools.lru_cache(maxsize=4096)
def cel_selector_error(expression: str) -> str | None:
    """Why the API server would refuse a DRA CEL selector, or None: size, syntax, undeclared names, types
    (`gputenancy.check.celtypes`)."""
    if len(expression.encode()) > MAX_CEL_BYTES:
        return f"must be no more than {MAX_CEL_BYTES} bytes, got {len(expression.encode())}"
    try:
        program = cel.compile(expression)
    except (ValueError, TypeError, RuntimeError) as exc:
        return f"compilation failed: {str(exc).strip()}"
    bound = {"device", "cel"}
    for match in (*_COMPREHENSION_VARS.finditer(expression), *_BIND_VARS.finditer(expression)):
        bound.update(name for name in match.groups() if name)
    unknown = sorted(set(program.variables()) - bound)
    if unknown:
        return f"compilation failed: undeclared reference to {unknown[0]!r} (the only variable is 'device')"
    return celtypes.type_error(expression)


def dra_request_name(body: Mapping[str, Any]) -> Iterator[Problem]:
    """Request and subrequest names are DNS labels, unique within the claim / the request.

    Passes: requests [{name: gpu}, {name: nic}].
    Fails: requests [{name: GPU_0}]; two requests named gpu.
    """
    seen: set[str] = set()
    for path, req in _requests(body):
        name = req.get("name")
        if isinstance(name, str):
            for msg in dns1123_label_errors(name):
                yield Problem((*path, "name"), invalid(name, msg))
            if name in seen:
                yield Problem((*path, "name"), f"Duplicate value: {json.dumps(name)}")
            seen.add(name)
        subs: set[str] = set()
        for k, sub in mapping_items(req.get("firstAvailable")):
            sub_name = sub.get("name")
            if isinstance(sub_name, str):
                for msg in dns1123_label_errors(sub_name):
                    yield Problem((*path, "firstAvailable", k, "name"), invalid(sub_name, msg))
                if sub_name in subs:
                    yield Problem(
                        (*path, "firstAvailable", k, "name"), f"Duplicate value: {json.dumps(sub_name)}"
                    )
                subs.add(sub_name)


def dra_device_class_name(body: Mapping[str, Any]) -> Iterator[Problem]:
    """deviceClassName of every exactly request and subrequest is a DNS subdomain.

    Passes: deviceClassName: gpu.nvidia.com.
    Fails: deviceClassName: GPU_Class.
    """
    for path, dev in _device_requests(body):
        name = dev.get("deviceClassName")
        if isinstance(name, str):
            for msg in dns1123_subdomain_errors(name):
                yield Problem((*path, "deviceClassName"), invalid(name, msg))


def dra_request_one_of(body: Mapping[str, Any]) -> Iterator[Problem]:
    """A request sets exactly one of `exactly` and `firstAvailable`.

    Passes: {name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}.
    Fails: both exactly and firstAvailable; neither.
    """
    for path, req in _requests(body):
        if (req.get("exactly") is None) == (req.get("firstAvailable") is None):
            yield Problem(path, "exactly one of `exactly` or `firstAvailable` is required")


def dra_allocation_mode(body: Mapping[str, Any]) -> Iterator[Problem]:
    """allocationMode is ExactCount or All.

    Passes: allocationMode: ExactCount.
    Fails: allocationMode: Sometimes.
    """
    for path, dev in _device_requests(body):
        mode = dev.get("allocationMode")
        if mode is not None and mode not in ("ExactCount", "All"):
            yield Problem(
                (*path, "allocationMode"),
                f'Unsupported value: {json.dumps(mode)}: supported values: "All", "ExactCount"',
            )


def dra_count(body: Mapping[str, Any]) -> Iterator[Problem]:
    """ExactCount needs count > 0; All forbids count.

    The API server defaults a zero count to 1, so `count: 0` would also leave Argo CD out of sync.
    Passes: count: 2; allocationMode: All without count.
    Fails: count: 0; allocationMode: All with count: 1.
    """
    for path, dev in _device_requests(body):
        mode, count = dev.get("allocationMode") or "ExactCount", dev.get("count")
        if mode == "All" and "count" in dev:
            yield Problem(
                (*path, "count"), invalid(count, "must not be specified when allocationMode is 'All'")
            )
        elif mode == "ExactCount" and isinstance(count, int) and not isinstance(count, bool) and count <= 0:
            yield Problem((*path, "count"), invalid(count, "must be greater than zero"))


def dra_total_devices(body: Mapping[str, Any]) -> Iterator[Problem]:
    """A claim asks for at most 32 devices (ExactCount counts; the smallest firstAvailable alternative).

    Passes: two requests of 16.
    Fails: one request of 33 (the allocator refuses: exceeds the claim limit of 32).
    """
    total = 0
    for _, req in _requests(body):
        exact = req.get("exactly")
        if isinstance(exact, Mapping):
            total += _device_count(exact) or 0
        counts = [_device_count(sub) for _, sub in mapping_items(req.get("firstAvailable"))]
        known = [c for c in counts if c is not None]
        total += min(known) if known and len(known) == len(counts) else 0
    if total > MAX_DEVICES:
        root, _ = _claim_spec(body)
        yield Problem(
            (*root, "devices", "requests"),
            f"number of requested devices {total} exceeds the claim limit of {MAX_DEVICES}",
        )


def _too_many(path: FieldPath, value: Any, limit: int) -> Iterator[Problem]:
    if isinstance(value, list) and len(value) > limit:
        yield _too_many_problem(path, value, limit)


def _too_many_problem(path: FieldPath, value: list[Any], limit: int) -> Problem:
    return Problem(path, f"Too many: {len(value)}: must have at most {limit} items")


def dra_claim_limits(body: Mapping[str, Any]) -> Iterator[Problem]:
    """At most 32 requests, selectors per request, constraints and config entries; 8 firstAvailable
    subrequests; 16 tolerations per request.

    Passes: 32 requests.
    Fails: 33 requests.
    """
    root, spec = _claim_spec(body)
    devices = get_in(spec, "devices")
    for field, limit in (
        ("requests", MAX_REQUESTS),
        ("constraints", MAX_CONSTRAINTS),
        ("config", MAX_CONFIG),
    ):
        value = get_in(devices, field)
        if isinstance(value, list) and len(value) > limit:
            yield _too_many_problem((*root, "devices", field), value, limit)
    for path, req in _requests(body):
        value = req.get("firstAvailable")
        if isinstance(value, list) and len(value) > MAX_SUBREQUESTS:
            yield _too_many_problem((*path, "firstAvailable"), value, MAX_SUBREQUESTS)
    for path, dev in _device_requests(body):
        for field, limit in (("selectors", MAX_SELECTORS), ("tolerations", MAX_TOLERATIONS)):
            value = dev.get(field)
            if isinstance(value, list) and len(value) > limit:
                yield _too_many_problem((*path, field), value, limit)


def dra_template_metadata(body: Mapping[str, Any]) -> Iterator[Problem]:
    """A ResourceClaimTemplate's spec.metadata carries valid labels and annotation keys for its claims.

    Passes: spec.metadata.labels: {tenant: team-a}.
    Fails: spec.metadata.labels: {"team name": a}.
    """
    meta = get_in(body, "spec", "metadata")
    yield from label_problems(get_in(meta, "labels"), ("spec", "metadata", "labels"))
    annotations = get_in(meta, "annotations")
    if isinstance(annotations, dict | Mapping):
        for key in annotations:
            for msg in qualified_name_errors(str(key).lower()):
                yield Problem(("spec", "metadata", "annotations", str(key)), invalid(key, msg))


def dra_deviceclass_limits(body: Mapping[str, Any]) -> Iterator[Problem]:
    """A DeviceClass has at most 32 selectors and 32 config entries.

    Passes: 1 selector.
    Fails: 33 selectors.
    """
    yield from _too_many(("spec", "selectors"), get_in(body, "spec", "selectors"), MAX_SELECTORS)
    yield from _too_many(("spec", "config"), get_in(body, "spec", "config"), MAX_CONFIG)


def dra_cel_selector(body: Mapping[str, Any]) -> Iterator[Problem]:
    """CEL selectors are at most 10 KiB, compile, use no variable but `device`, and type check against
    the DRA CEL environment (`device.driver` string, `device.attributes[domain].name` typed values,
    `device.capacity[domain].name` quantities) to a bool, as the API server compiles them.

    Passes: device.driver == 'gpu.nvidia.com'.
    Fails: device.driver == ; devices.driver == 'x'; device.atributes['gpu.nvidia.com'].x; device.driver == 1.
    """
    for path, selectors in _selectors(body):
        for i, sel in mapping_items(selectors):
            expr = get_in(sel, "cel", "expression")
            if isinstance(expr, str):
                err = cel_selector_error(expr)
                if err:
                    yield Problem((*path, i, "cel", "expression"), f"Invalid value: {err}")


def dra_request_reference(body: Mapping[str, Any]) -> Iterator[Problem]:
    """constraints[].requests and config[].requests name requests of the claim (or `<request>/<subrequest>`).

    Passes: requests: [gpu] with a request gpu.
    Fails: requests: [gpus].
    """
    valid: set[str] = set()
    for _, req in _requests(body):
        if isinstance(req.get("name"), str):
            valid.add(req["name"])
            valid.update(
                f"{req['name']}/{sub.get('name')}" for _, sub in mapping_items(req.get("firstAvailable"))
            )
    root, spec = _claim_spec(body)
    for field in ("constraints", "config"):
        for i, entry in mapping_items(get_in(spec, "devices", field)):
            for j, ref in string_items(entry.get("requests")):
                if ref not in valid:
                    yield Problem(
                        (*root, "devices", field, i, "requests", j),
                        invalid(
                            ref,
                            "must be the name of a request in the claim or the name of a request "
                            "and a subrequest separated by '/'",
                        ),
                    )


def dra_constraint_attribute(body: Mapping[str, Any]) -> Iterator[Problem]:
    """A constraint sets one of matchAttribute / distinctAttribute, a fully qualified `<domain>/<name>`.

    Passes: matchAttribute: resource.kubernetes.io/pcieRoot.
    Fails: matchAttribute: pcieRoot.
    """
    root, spec = _claim_spec(body)
    for i, con in mapping_items(get_in(spec, "devices", "constraints")):
        path = (*root, "devices", "constraints", i)
        set_fields = [f for f in ("matchAttribute", "distinctAttribute") if con.get(f) is not None]
        if len(set_fields) != 1:
            yield Problem(path, "exactly one of `matchAttribute` or `distinctAttribute` is required")
        for field in set_fields:
            value = con[field]
            domain, _, name = str(value).partition("/")
            errs = [] if name else ["must include a domain: <domain>/<name>"]
            errs += [f"domain {m}" for m in dns1123_subdomain_errors(domain)] if name else []
            if name and (len(name) > DEVICE_MAX_ID_LENGTH or c_identifier_errors(name)):
                errs.append("name must be a C identifier of at most 32 characters")
            for msg in errs:
                yield Problem((*path, field), invalid(value, msg))


def dra_opaque_config(body: Mapping[str, Any]) -> Iterator[Problem]:
    """Opaque config: driver is a lower-case DNS subdomain of at most 63 characters; parameters <= 10 KiB.

    Passes: {driver: gpu.nvidia.com, parameters: {kind: GpuConfig}}.
    Fails: {driver: GPU.NVIDIA.COM}.
    """
    root: FieldPath = ("spec", "config")
    configs = get_in(body, "spec", "config")
    if body.get("kind") != "DeviceClass":
        claim, spec = _claim_spec(body)
        root, configs = (*claim, "devices", "config"), get_in(spec, "devices", "config")
    for i, entry in mapping_items(configs):
        opaque = entry.get("opaque")
        driver = get_in(opaque, "driver")
        path = (*root, i, "opaque")
        if isinstance(driver, str):
            errs = dns1123_subdomain_errors(driver)
            errs += ["must be no more than 63 characters"] if len(driver) > 63 else []
            for msg in errs:
                yield Problem((*path, "driver"), invalid(driver, msg))
        params = get_in(opaque, "parameters")
        size = len(json.dumps(params, separators=(",", ":")).encode()) if params is not None else 0
        if size > MAX_OPAQUE_BYTES:
            yield Problem(
                (*path, "parameters"), f"Too long: {size} bytes: must have at most {MAX_OPAQUE_BYTES} bytes"
            )


def dra_extended_resource_name(body: Mapping[str, Any]) -> Iterator[Problem]:
    """DeviceClass extendedResourceName is an extended resource name: `<domain>/<name>`, not kubernetes.io.

    Passes: extendedResourceName: nvidia.com/gpu.
    Fails: extendedResourceName: gpu; kubernetes.io/gpu.
    """
    name = get_in(body, "spec", "extendedResourceName")
    if not isinstance(name, str):
        return
    domain = name.partition("/")[0] if "/" in name else ""
    errs = [] if domain else ["must be a fully qualified name: <domain>/<name>"]
    if domain == "kubernetes.io" or domain.endswith(".kubernetes.io"):
        errs.append("must not be in the kubernetes.io namespace")
    errs += qualified_name_errors(f"requests.{name}")
    for msg in errs:
        yield Problem(("spec", "extendedResourceName"), invalid(name, msg))


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
