"""What MultiKueue can do per Kueue minor (upstream `config/components/crd/bases`, `pkg/features` and
`apis/config/v1beta2` at each tag; facts in the shared MultiKueue digest, section 0)."""

from __future__ import annotations

import dataclasses

from gputenancy.versions import kueue as kueue_versions


@dataclasses.dataclass(frozen=True)
class MultiKueueSupport:
    config_order: bool  # MultiKueueConfig.spec.clusters is a preference order (else a set)
    incremental_step_size: bool  # multiKueue.incrementalDispatcherConfig exists


_SUPPORT = {
    "v0.18": MultiKueueSupport(config_order=False, incremental_step_size=False),
    "v0.19": MultiKueueSupport(config_order=True, incremental_step_size=True),
}
_LATEST = _SUPPORT["v0.19"]


def support(version: str) -> MultiKueueSupport:
    """The support of Kueue `version` (a newer supported minor than the table knows: the latest's)."""
    try:
        minor = kueue_versions.minor_of(version)
    except kueue_versions.UnsupportedVersion:
        return _LATEST
    return _SUPPORT.get(minor, _LATEST)
