"""Checks of a Kueue manager Configuration's sections beyond feature gates and deviceClassMappings:
`waitForPodsReady` (`kueue-config-wait-for-pods-ready`), and integrations, resources,
managedJobsNamespaceSelector and the smaller value checks of the other sections (`kueue-config-invalid`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gputenancy.check.config.configcontext import (
    DEFAULT_NAMESPACE,
    DISABLE_WAIT_GATE,
    NAMESPACE_LABEL,
    NEGATIVE,
    QUOTA_CHECK_GATE,
    RULE_INVALID,
    RULE_WAIT_FOR_PODS_READY,
    Context,
    check_format,
    check_negative_durations,
)
from gputenancy.check.config.configfields import (
    API_V1BETA2,
    FieldPath,
    as_list,
    as_mapping,
    duration_of,
    is_number,
    suggest,
)
from gputenancy.common.findings import Severity
from gputenancy.common.names import (
    Requirement,
    dns1035_label_errors,
    dns1123_subdomain_errors,
    label_value_errors,
    qualified_name_errors,
    selector_matches,
    selector_operator_error,
)
from gputenancy.versions import kueue as kueue_versions


def check_wait_for_pods_ready(ctx: Context, config: Mapping[str, Any]) -> None:
    base: FieldPath = ("waitForPodsReady",)
    section = as_mapping(config.get("waitForPodsReady"))
    if section is None:
        return
    v1beta2 = ctx.api_version == API_V1BETA2
    if v1beta2:
        if "enable" in section:
            hint = "configure it with the other fields of the section"
            if DISABLE_WAIT_GATE in ctx.gates:
                hint = (
                    f"WaitForPodsReady is on by default in Kueue {ctx.minor}; to turn it off set the "
                    f"{DISABLE_WAIT_GATE} feature gate"
                )
            ctx.emit(
                RULE_WAIT_FOR_PODS_READY,
                (*base, "enable"),
                f'unknown field "enable": {API_V1BETA2} has no waitForPodsReady.enable and Kueue decodes the '
                f"Configuration strictly; {hint}",
            )
        enabled = not ctx.gate_on(DISABLE_WAIT_GATE)
    else:
        enabled = section.get("enable") is True
    if not enabled:
        return

    timeout_path = (*base, "timeout")
    timeout = duration_of(section.get("timeout"))
    if timeout is not None and timeout < 0:
        ctx.emit(RULE_WAIT_FOR_PODS_READY, timeout_path, f"Invalid value {section['timeout']!r}: {NEGATIVE}")
    elif timeout == 0:
        if v1beta2:
            ctx.emit(
                RULE_WAIT_FOR_PODS_READY,
                timeout_path,
                "a zero timeout is replaced by the default; set the intended timeout explicitly",
                Severity.WARNING,
            )
        else:
            ctx.emit(
                RULE_WAIT_FOR_PODS_READY, timeout_path, "Required value: must be specified (greater than 0)"
            )
    check_negative_durations(ctx, section, base, ("recoveryTimeout",), RULE_WAIT_FOR_PODS_READY)
    strategy = as_mapping(section.get("requeuingStrategy"))
    if strategy is None:
        return
    strategy_path = (*base, "requeuingStrategy")
    timestamp = strategy.get("timestamp")
    if isinstance(timestamp, str) and timestamp not in ("Creation", "Eviction"):
        ctx.emit(
            RULE_WAIT_FOR_PODS_READY,
            (*strategy_path, "timestamp"),
            f'Unsupported value: {timestamp!r}: supported values: "Creation", "Eviction"',
        )
    for field in ("backoffLimitCount", "backoffBaseSeconds", "backoffMaxSeconds"):
        value = strategy.get(field)
        if isinstance(value, int) and not isinstance(value, bool) and value < 0:
            ctx.emit(RULE_WAIT_FOR_PODS_READY, (*strategy_path, field), f"Invalid value {value}: {NEGATIVE}")


# --- other sections (kueue-config-invalid) ---------------------------------------------------------------


def check_integrations(ctx: Context, config: Mapping[str, Any]) -> None:
    integrations = as_mapping(config.get("integrations"))
    if integrations is None:
        return
    base: FieldPath = ("integrations",)
    seen: set[str] = set()
    frameworks = kueue_versions.for_version(ctx.minor).frameworks
    known = sorted(frameworks)
    for index, framework in enumerate(as_list(integrations.get("frameworks"))):
        if not isinstance(framework, str):
            continue
        path = (*base, "frameworks", index)
        if framework not in frameworks:
            suggestion = suggest(framework, known)
            hint = f' (did you mean "{suggestion}"?)' if suggestion else ""
            ctx.emit(
                RULE_INVALID,
                path,
                f"Unsupported value: {framework!r}{hint}; supported values: {', '.join(known)}",
            )
        elif framework in seen:
            ctx.emit(RULE_INVALID, path, f"Duplicate value: {framework!r}")
        seen.add(framework)
    seen_external: set[str] = set()
    for index, framework in enumerate(as_list(integrations.get("externalFrameworks"))):
        if not isinstance(framework, str):
            continue
        path = (*base, "externalFrameworks", index)
        if framework.count(".") < 2:
            ctx.emit(
                RULE_INVALID, path, f"Invalid value {framework!r}: must be format, 'Kind.version.group.com'"
            )
        elif framework in seen_external:
            ctx.emit(RULE_INVALID, path, f"Duplicate value: {framework!r}")
        seen_external.add(framework)


def check_resources(ctx: Context, config: Mapping[str, Any]) -> None:
    resources = as_mapping(config.get("resources"))
    if resources is None:
        return
    base: FieldPath = ("resources",)
    seen: set[str] = set()
    for index, raw in enumerate(as_list(resources.get("transformations"))):
        transformation = as_mapping(raw)
        if transformation is None:
            continue
        path = (*base, "transformations", index)
        strategy = transformation.get("strategy", "Retain")
        if strategy is not None and strategy not in ("Retain", "Replace"):
            ctx.emit(
                RULE_INVALID,
                (*path, "strategy"),
                f'Unsupported value: {strategy!r}: supported values: "Retain", "Replace"',
            )
        source = transformation.get("input")
        if isinstance(source, str):
            if source in seen:
                ctx.emit(RULE_INVALID, (*path, "input"), f"Duplicate value: {source!r}")
            seen.add(source)
    strategy = resources.get("quotaCheckStrategy")
    if not isinstance(strategy, str) or ctx.api_version != API_V1BETA2:
        return
    path = (*base, "quotaCheckStrategy")
    if QUOTA_CHECK_GATE in ctx.gates and not ctx.gate_on(QUOTA_CHECK_GATE):
        ctx.emit(
            RULE_INVALID,
            path,
            f"ignored: the {QUOTA_CHECK_GATE} feature gate is off in Kueue {ctx.minor}, so Kueue behaves as "
            "BlockUndeclared",
            Severity.WARNING,
        )
        return
    if strategy not in ("BlockUndeclared", "IgnoreUndeclared"):
        ctx.emit(
            RULE_INVALID,
            path,
            f'Unsupported value: {strategy!r}: supported values: "IgnoreUndeclared", "BlockUndeclared"',
        )
    elif strategy == "IgnoreUndeclared" and as_list(resources.get("excludeResourcePrefixes")):
        ctx.emit(
            RULE_INVALID,
            path,
            f"Invalid value {strategy!r}: excludeResourcePrefixes is not allowed when quotaCheckStrategy is "
            "IgnoreUndeclared",
        )


def _selector_requirements(
    ctx: Context, selector: Mapping[str, Any], path: FieldPath
) -> list[Requirement] | None:
    """The selector as (key, operator, values) requirements, or None (after reporting) when it is invalid."""
    requirements: list[Requirement] = []
    valid = True
    for key, value in (as_mapping(selector.get("matchLabels")) or {}).items():
        if not isinstance(key, str) or not isinstance(value, str):
            return None
        key_errs = qualified_name_errors(key)
        value_errs = label_value_errors(value)
        if key_errs or value_errs:
            ctx.emit(
                RULE_INVALID,
                (*path, "matchLabels", key),
                f"Invalid value: {'; '.join(key_errs + value_errs)}",
            )
            valid = False
        requirements.append((key, "In", frozenset({value})))
    for index, raw in enumerate(as_list(selector.get("matchExpressions"))):
        expression = as_mapping(raw)
        if expression is None:
            return None
        expr_path = (*path, "matchExpressions", index)
        expr_key, operator = expression.get("key"), expression.get("operator")
        values = as_list(expression.get("values"))
        if (
            not isinstance(expr_key, str)
            or not isinstance(operator, str)
            or not all(isinstance(v, str) for v in values)
        ):
            return None
        if errs := qualified_name_errors(expr_key):
            ctx.emit(RULE_INVALID, (*expr_path, "key"), f"Invalid value {expr_key!r}: {'; '.join(errs)}")
            valid = False
        if error := selector_operator_error(operator, bool(values), quote=repr):
            field, message = error
            ctx.emit(RULE_INVALID, (*expr_path, field), message)
            valid = False
        requirements.append((expr_key, operator, frozenset(values)))
    return requirements if valid else None


def check_namespace_selector(ctx: Context, config: Mapping[str, Any]) -> None:
    path: FieldPath = ("managedJobsNamespaceSelector",)
    selector = as_mapping(config.get("managedJobsNamespaceSelector"))
    if selector is None:
        return
    requirements = _selector_requirements(ctx, selector, path)
    if requirements is None:
        return
    namespace = config.get("namespace")
    prohibited = ["kube-system"]
    prohibited.append(namespace if isinstance(namespace, str) and namespace else DEFAULT_NAMESPACE)
    for name in prohibited:
        if selector_matches(requirements, {NAMESPACE_LABEL: name}):
            ctx.emit(RULE_INVALID, path, f'Invalid value: should not match the "{name}" namespace')


_FAIR_SHARING_STRATEGIES = (
    ("LessThanOrEqualToFinalShare",),
    ("LessThanInitialShare",),
    ("LessThanOrEqualToFinalShare", "LessThanInitialShare"),
)


def check_other_sections(ctx: Context, config: Mapping[str, Any]) -> None:
    fair_sharing = as_mapping(config.get("fairSharing"))
    if fair_sharing is not None:
        strategies = as_list(fair_sharing.get("preemptionStrategies"))
        if strategies and tuple(strategies) not in _FAIR_SHARING_STRATEGIES:
            allowed = ", ".join('"' + ",".join(s) + '"' for s in _FAIR_SHARING_STRATEGIES)
            ctx.emit(
                RULE_INVALID,
                ("fairSharing", "preemptionStrategies"),
                f"Unsupported value: {strategies!r}: supported values: {allowed}",
            )
    afs = as_mapping(config.get("admissionFairSharing"))
    if afs is not None:
        check_negative_durations(
            ctx, afs, ("admissionFairSharing",), ("usageHalfLifeTime", "usageSamplingInterval")
        )
        for resource, weight in (as_mapping(afs.get("resourceWeights")) or {}).items():
            if is_number(weight) and weight < 0:
                ctx.emit(
                    RULE_INVALID,
                    ("admissionFairSharing", "resourceWeights", str(resource)),
                    f"Invalid value: {NEGATIVE}",
                )
    icm = as_mapping(config.get("internalCertManagement"))
    if icm is not None and icm.get("enable") is not False:
        check_format(ctx, icm, ("internalCertManagement",), "webhookServiceName", dns1035_label_errors)
        check_format(ctx, icm, ("internalCertManagement",), "webhookSecretName", dns1123_subdomain_errors)
    multikueue = as_mapping(config.get("multiKueue"))
    if multikueue is not None:
        check_negative_durations(ctx, multikueue, ("multiKueue",), ("gcInterval", "workerLostTimeout"))
        check_format(ctx, multikueue, ("multiKueue",), "origin", label_value_errors)
    retention = as_mapping((as_mapping(config.get("objectRetentionPolicies")) or {}).get("workloads"))
    if retention is not None:
        check_negative_durations(
            ctx,
            retention,
            ("objectRetentionPolicies", "workloads"),
            ("afterFinished", "afterDeactivatedByKueue"),
        )
