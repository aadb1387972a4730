"""Offline validation of a Kueue manager Configuration (controller_manager_config.yaml).

Kueue reads its Configuration once at startup, decodes it strictly and validates it; any error makes the
manager exit, so the Deployment crash-loops and every queue change in the cluster is blocked. The checks
here mirror that startup path for the supported Kueue versions (see `kueuegates.supported_versions`):

- apiVersion/kind (`kueue-config-version`);
- strict decoding: unknown fields and values of the wrong JSON type (`kueue-config-unknown-field`, and the
  section's rule for type errors), against the field tables of `gputenancy.check.config.configfields`;
- `resources.deviceClassMappings` (`kueue-config-device-class-mappings`; the per-mapping checks are in
  `gputenancy.check.config.dramappings`);
- feature gates (`kueue-feature-gate-unknown`, `-locked`, `-conflict`; `-dependency` from the per-version
  start-up rules of `gputenancy.versions.startup`);
- `waitForPodsReady` (`kueue-config-wait-for-pods-ready`);
- integrations, resource transformations, quotaCheckStrategy, managedJobsNamespaceSelector and the smaller
  value checks of the other sections (`kueue-config-invalid`).

Every finding is placed with `origin_of(field_path)`, where `field_path` is the path of the offending field
inside the Configuration (it may name a field that is absent, e.g. a required one).

Feature gates and deviceClassMappings are checked here, waitForPodsReady and the other sections in
`gputenancy.check.config.configsections`; what they share (rule ids, `Context`) is `gputenancy.check.config.configcontext`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gputenancy.check.config import configloader, dramappings, startuprules
from gputenancy.check.config.configcontext import (
    CONSUMABLE_GATE,
    DRA_GATE,
    KIND,
    MAX_DEVICE_CLASS_MAPPINGS,
    PARTITIONABLE_GATE,
    RULE_DEVICE_CLASS_MAPPINGS,
    RULE_GATE_CONFLICT,
    RULE_GATE_DEPENDENCY,
    RULE_GATE_LOCKED,
    RULE_GATE_UNKNOWN,
    RULE_INVALID,
    RULE_UNKNOWN_FIELD,
    RULE_VERSION,
    Context,
    dotted,
    section_rule,
)
from gputenancy.check.config.configfields import (
    API_V1BETA2,
    API_VERSIONS,
    FieldPath,
    as_list,
    as_mapping,
    decode_errors,
    kind_of,
    suggest,
)
from gputenancy.check.config.configfields import KNOWN_FRAMEWORKS as KNOWN_FRAMEWORKS
from gputenancy.check.config.configsections import (
    check_integrations,
    check_namespace_selector,
    check_other_sections,
    check_resources,
    check_wait_for_pods_ready,
)
from gputenancy.common.findings import Finding, Origin
from gputenancy.versions import gates as kueuegates
from gputenancy.versions import kueue as kueue_versions

# --- feature gates ---------------------------------------------------------------------------------------


def _gate_hint(name: str, ctx: Context) -> str:
    renamed = kueuegates.RENAMED_GATES.get(name)
    if renamed is not None and renamed in ctx.gates:
        return f"; it was renamed to {renamed}"
    elsewhere = [v for v in kueuegates.supported_versions() if name in kueuegates.gates_for(v)]
    if elsewhere:
        return f"; it exists only in Kueue {', '.join(elsewhere)}"
    suggestion = suggest(name, sorted(ctx.gates))
    return f' (did you mean "{suggestion}"?)' if suggestion else ""


def _valid_gate_overrides(config: Mapping[str, Any], gates: Mapping[str, kueuegates.Gate]) -> dict[str, bool]:
    """featureGates entries Kueue would accept: known names, bool values, locked gates at their default."""
    overrides: dict[str, bool] = {}
    for name, value in (as_mapping(config.get("featureGates")) or {}).items():
        gate = gates.get(name) if isinstance(name, str) else None
        if gate is None or not isinstance(value, bool) or (gate.locked and value != gate.default):
            continue
        overrides[name] = value
    return overrides


def _check_feature_gates(ctx: Context, config: Mapping[str, Any], feature_gates_flag: bool) -> None:
    path: FieldPath = ("featureGates",)
    if feature_gates_flag and "featureGates" in config and config["featureGates"] is not None:
        ctx.emit(
            RULE_GATE_CONFLICT,
            path,
            "feature gates for CLI and configuration cannot both specified: the manager Deployment passes "
            "--feature-gates, so the Configuration must not contain featureGates (not even an empty map)",
        )
    declared = as_mapping(config.get("featureGates")) or {}
    for name, value in declared.items():
        if not isinstance(name, str):
            continue
        gate = ctx.gates.get(name)
        if gate is None:
            ctx.emit(
                RULE_GATE_UNKNOWN,
                (*path, name),
                f"unrecognized feature gate: {name} (Kueue {ctx.minor}){_gate_hint(name, ctx)}",
            )
        elif isinstance(value, bool) and gate.locked and value != gate.default:
            renamed = kueuegates.RENAMED_GATES.get(name)
            hint = f"; use {renamed} instead" if renamed in ctx.gates else ""
            ctx.emit(
                RULE_GATE_LOCKED,
                (*path, name),
                f"cannot set feature gate {name} to {str(value).lower()}, feature is locked to "
                f"{str(gate.default).lower()} ({gate.stage} in Kueue {ctx.minor}){hint}",
            )
    for where, message in startuprules.gate_dependency_problems(
        ctx.minor, ctx.effective, declared, lambda g: g in ctx.gates and ctx.gates[g].default
    ):
        ctx.emit(RULE_GATE_DEPENDENCY, where, message)


# --- deviceClassMappings ---------------------------------------------------------------------------------


def _gate_state(ctx: Context, gate: str) -> str:
    spec = ctx.gates.get(gate)
    if spec is None:
        return f" (Kueue {ctx.minor} has no such gate, so it does not support this source type)"
    if ctx.effective.get(gate) is False and spec.default is False:
        return f" ({spec.stage} and off by default in Kueue {ctx.minor}; set featureGates.{gate}: true)"
    return f" (disabled in featureGates for Kueue {ctx.minor})"


def _check_device_class_mappings(ctx: Context, config: Mapping[str, Any]) -> None:
    resources = as_mapping(config.get("resources"))
    mappings = as_list(resources.get("deviceClassMappings")) if resources is not None else []
    if not mappings:
        return
    base: FieldPath = ("resources", "deviceClassMappings")
    if len(mappings) > MAX_DEVICE_CLASS_MAPPINGS:
        ctx.emit(
            RULE_DEVICE_CLASS_MAPPINGS,
            base,
            f"Too many: {len(mappings)}: must have at most {MAX_DEVICE_CLASS_MAPPINGS} items",
        )
    dead = startuprules.mappings_gate_problem(ctx.minor, ctx.effective)
    if dead is not None:  # the cause is the gate: the finding goes where it is turned off
        ctx.emit(RULE_DEVICE_CLASS_MAPPINGS, ("featureGates", DRA_GATE), dead)
    disabled_sources = {
        kind: f"{kind} sources require {gate} to be enabled{_gate_state(ctx, gate)}"
        for kind, gate in (("counter", PARTITIONABLE_GATE), ("capacity", CONSUMABLE_GATE))
        if not ctx.gate_on(gate)
    }
    for problem in dramappings.device_class_mapping_problems(mappings, base, disabled_sources):
        ctx.emit(RULE_DEVICE_CLASS_MAPPINGS, problem.path, problem.message, problem.severity)
    reserved = kueue_versions.for_version(ctx.minor).reserved_resource_names
    for index, mapping in enumerate(mappings):
        name = mapping.get("name") if isinstance(mapping, Mapping) else None
        if isinstance(name, str) and name in reserved:
            ctx.emit(
                RULE_DEVICE_CLASS_MAPPINGS,
                (*base, index, "name"),
                f"Invalid value: {name!r}: a resource name Kueue {ctx.minor} reserves; the manager would not start",
            )


# --- entry points ----------------------------------------------------------------------------------------


def check_configuration(
    config: Mapping[str, Any],
    kueue_version: str,
    *,
    origin_of: Callable[[tuple[str | int, ...]], Origin],
    feature_gates_flag: bool = False,
) -> list[Finding]:
    """Findings that would make Kueue `kueue_version` refuse to start with this manager Configuration.

    `config` is the parsed controller_manager_config.yaml. `feature_gates_flag` says whether the manager
    container is started with --feature-gates (see `deployment_has_feature_gates_flag`). Warnings mark
    settings Kueue accepts but ignores or replaces. Raises ValueError for an unsupported `kueue_version`.
    """
    minor = kueuegates.minor_of(kueue_version)
    gates = kueuegates.gates_for(minor)
    findings: list[Finding] = []

    def emit(rule: str, path: FieldPath, message: str) -> None:
        findings.append(origin_of(path).finding(rule, f"{dotted(path)}: {message}"))

    if not isinstance(config, Mapping):
        emit(RULE_VERSION, (), f"the Configuration must be an object, not a {kind_of(config)}")
        return findings
    api_version, kind = config.get("apiVersion"), config.get("kind")
    if kind != KIND:
        emit(RULE_VERSION, ("kind",), f'must be "{KIND}", not {kind!r}')
    accepted = kueue_versions.for_version(minor).config_api_versions
    if api_version not in API_VERSIONS or api_version not in accepted:
        emit(
            RULE_VERSION,
            ("apiVersion",),
            "must be " + " or ".join(f'"{v}"' for v in accepted) + f", not {api_version!r}",
        )
        return findings
    assert isinstance(api_version, str)

    effective = kueuegates.effective_gates(minor, _valid_gate_overrides(config, gates))
    ctx = Context(origin_of, api_version, minor, gates, effective, findings)
    # v1beta2 has no waitForPodsReady.enable; check_wait_for_pods_ready explains it.
    skip = frozenset({("waitForPodsReady", "enable")}) if api_version == API_V1BETA2 else frozenset()
    for error in decode_errors(config, api_version, skip):
        rule = RULE_UNKNOWN_FIELD if error.unknown_field else section_rule(error.path)
        ctx.emit(rule, error.path, error.message)
    _check_feature_gates(ctx, config, feature_gates_flag)
    _check_device_class_mappings(ctx, config)
    check_wait_for_pods_ready(ctx, config)
    check_integrations(ctx, config)
    check_resources(ctx, config)
    check_namespace_selector(ctx, config)
    check_other_sections(ctx, config)
    for path, message in configloader.problems(config, minor):
        ctx.emit(RULE_INVALID, path, message)
    return findings


_FLAG_NAMES = ("--feature-gates", "-feature-gates")


def _has_flag(args: Sequence[object]) -> bool:
    for index, arg in enumerate(args):
        if not isinstance(arg, str):
            continue
        name, equals, value = arg.partition("=")
        if name not in _FLAG_NAMES:
            continue
        if equals:
            if value:
                return True
            continue
        following = args[index + 1] if index + 1 < len(args) else None
        if isinstance(following, str) and following and not following.startswith("-"):
            return True
    return False


def deployment_has_feature_gates_flag(deployment: Mapping[str, Any]) -> bool:
    """Whether any container of the Deployment passes a non-empty --feature-gates flag to its command.

    Accepts "--feature-gates=A=true" and "--feature-gates A=true" (and the single-dash spellings Go's flag
    package also accepts) in `command` or `args`. An empty value sets nothing, so it does not count.
    """
    spec = as_mapping(deployment.get("spec")) or {}
    pod = as_mapping((as_mapping(spec.get("template")) or {}).get("spec")) or {}
    for raw in as_list(pod.get("containers")):
        container = as_mapping(raw)
        if container is not None and _has_flag(
            [*as_list(container.get("command")), *as_list(container.get("args"))]
        ):
            return True
    return False
