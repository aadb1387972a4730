"""Dynamic Resource Allocation (DRA) rules of resource.k8s.io objects.

The API server's validation of resource.k8s.io ResourceClaimTemplate / ResourceClaim / DeviceClass
(pkg/apis/resource/validation/validation.go) as admission rules, which `gputenancy.check.webhook.webhooks.RULES` lists,
and the check of CEL device selectors. Kueue's checks of the deviceClassMappings of its manager
Configuration are in `gputenancy.check.config.dramappings`.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from gputenancy.check.kubernetes import celtypes
from gputenancy.check.kubernetes.celext import cel
from gputenancy.check.webhook.admission import (
    MAPPING,
    Problem,
    get_in,
    label_problems,
    mapping_items,
    string_items,
)
from gputenancy.common.names import (
    DEVICE_MAX_ID_LENGTH,
    c_identifier_errors,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    invalid,
    qualified_name_errors,
)
from gputenancy.common.objects import FieldPath

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
            if isinstance(req, MAPPING):
                yield (*root, "devices", "requests", i), req


def _device_requests(body: Mapping[str, Any]) -> Iterator[tuple[FieldPath, Mapping[str, Any]]]:
    """Every `exactly` request and every firstAvailable subrequest: both carry class, selectors, count."""
    for path, req in _requests(body):
        exactly = req.get("exactly")
        if isinstance(exactly, MAPPING):
            yield (*path, "exactly"), exactly
        subrequests = req.get("firstAvailable")
        if isinstance(subrequests, list):
            for k, sub in enumerate(subrequests):
                if isinstance(sub, MAPPING):
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
    (`gputenancy.check.kubernetes.celtypes`)."""
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
