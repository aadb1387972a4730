"""The Kueue manager as it runs: the Configuration in its ConfigMap against the one Git delivers, and the
restart marker against the ConfigMap.

Kueue reads its Configuration once, at start-up. An `install: manifests` cluster carries on the
Deployment's pod template the annotation `gputenancy.io/kueue-config-checksum`, sha256 of the
Configuration text (render/kueueapp.py: the Application's second patch), so a new Configuration rolls the
pods. The manager therefore runs the Configuration whose checksum the pod template holds; when the
ConfigMap's text hashes to another value, the ConfigMap was changed after the manager started and the
manager has not loaded it. A helm install carries no marker: what the manager loaded cannot be told.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from gputenancy.cluster.compare import compare
from gputenancy.cluster.dump import CONFIG_KEY, CONFIG_MAP, Dump
from gputenancy.common.findings import Origin
from gputenancy.live import owners
from gputenancy.live.drift import FieldChange
from gputenancy.live.git import GitConfig, checksum
from gputenancy.render import kueueconfig

DEPLOYMENT = kueueconfig.DEPLOYMENT_NAME


@dataclasses.dataclass(frozen=True)
class ManagerState:
    config_map: str  # kueue-system/kueue-manager-config
    changes: tuple[FieldChange, ...]  # the ConfigMap's Configuration, live -> Git
    live_checksum: str | None  # of the ConfigMap's text (None: no ConfigMap in the dump)
    marker: str | None  # the Deployment's pod-template annotation (None: absent)
    git_checksum: str | None
    restart: str  # one line when the manager does not run what the ConfigMap holds ("" otherwise)
    notes: tuple[str, ...] = ()

    @property
    def differs(self) -> bool:
        return bool(self.changes or self.restart)


def _short(value: str | None) -> str:
    return value[:12] + "…" if value else "(none)"


def state(
    cluster: str, git: GitConfig | None, dump: Dump, built: kueueconfig.KueueConfig | None, *, self_heal: bool
) -> ManagerState | None:
    """None when Git delivers no Configuration to the cluster."""
    if git is None:
        return None
    shown = "/".join(CONFIG_MAP)
    app = f"kueue-{cluster}"
    cm = dump.kueue_config_map()
    deployment = dump.get("Deployment", DEPLOYMENT, CONFIG_MAP[0])
    notes: list[str] = []
    if cm is None:
        notes.append(
            f"the dump holds no ConfigMap {shown}: the Configuration is not compared (the second "
            "command of `python pipeline.py status --help` reads it)"
        )
        return ManagerState(shown, (), None, None, git.checksum, "", tuple(notes))
    data = cm.body.get("data") or {}
    text = data.get(CONFIG_KEY) if isinstance(data, dict) else None
    live_text = text if isinstance(text, str) else ""
    live_body = dump.kueue_config() or {}
    git_body = git.body
    by = owners.owners_of(cm.body, f"data.{CONFIG_KEY}")
    changes = []
    for d in compare(live_body, git_body):
        keys = tuple(s[1] for s in owners.steps(d.path, git_body, live_body))
        origin = built.origin_of(keys) if built is not None else Origin(git.application, 1, 1)
        changes.append(FieldChange(d.path, d.live, d.rendered, by, origin))
    live_sum = checksum(live_text)
    marker = _marker(deployment.body if deployment is not None else None)
    if deployment is None:
        notes.append(
            f"the dump holds no Deployment {CONFIG_MAP[0]}/{DEPLOYMENT}: the restart marker is not read"
        )
    restart = ""
    heal = "Argo CD's selfHeal does it at its next sync" if self_heal else "Argo CD does it at the next sync"
    editors = ", ".join(m.name for m in by if m.name != owners.ARGOCD) or "a hand edit"
    if marker is not None and marker != live_sum:
        if marker == git.checksum:
            restart = (
                f"{shown} holds a Configuration the manager has not loaded (changed by {editors}; the "
                f"pods' {kueueconfig.CHECKSUM_ANNOTATION} {_short(marker)} is Git's, the ConfigMap's "
                f"{_short(live_sum)}): the manager still runs Git's; sync {app} to put Git's back ({heal}), "
                f"or put the change in the overlay's kueue.config so the checksum restarts the manager"
            )
        elif live_text == git.text:
            restart = (
                f"{shown} holds Git's Configuration but the manager started with another (pod-template "
                f"{kueueconfig.CHECKSUM_ANNOTATION} {_short(marker)}, Git's {_short(git.checksum)}): restart "
                f"it: sync {app} (its patch sets the checksum and rolls the pods), or `kubectl -n "
                f"{CONFIG_MAP[0]} rollout restart deployment/{DEPLOYMENT}`"
            )
        else:
            restart = (
                f"{shown} holds neither Git's Configuration nor the one the manager started with "
                f"(checksums: ConfigMap {_short(live_sum)}, pod template {_short(marker)}, Git "
                f"{_short(git.checksum)}): sync {app}; its checksum then restarts the manager"
            )
    elif marker is not None and git.marker is not None and marker != git.marker:
        restart = (
            f"the manager runs a Configuration Git no longer holds (pod-template checksum {_short(marker)}, "
            f"Git's {_short(git.marker)}): sync {app}; the new checksum restarts it"
        )
    elif marker is None and changes:
        restart = (
            f"{shown} differs from Git and the install carries no restart marker ({git.install}), so "
            f"whether the manager loaded it cannot be told: sync {app}, then `kubectl -n {CONFIG_MAP[0]} "
            f"rollout restart deployment/{DEPLOYMENT}`"
        )
    if marker is None and git.install == "helm" and not changes:
        notes.append(
            f"Kueue is installed by helm ({app}): its Deployment carries no restart marker; the "
            "Configuration in the ConfigMap is Git's"
        )
    return ManagerState(shown, tuple(changes), live_sum, marker, git.checksum, restart, tuple(notes))


def _marker(body: Any) -> str | None:
    if not isinstance(body, dict):
        return None
    template = ((body.get("spec") or {}).get("template") or {}).get("metadata") or {}
    value = (template.get("annotations") or {}).get(kueueconfig.CHECKSUM_ANNOTATION)
    return str(value) if value is not None else None
