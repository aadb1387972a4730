"""Every rule id a finding can carry, with what it checks and a failing and a passing example:
`python pipeline.py rules` lists them, `python pipeline.py rules ID` explains one.

Four sources: the model rules (`policy.rules.RULES`, each documented by its docstring), the admission
rules of Kueue's webhooks and of DRA (`check.webhooks.RULES`), the rules on the built objects
(`check.postbuild.RULES`, and across a MultiKueue fleet's clusters `check.fleet.RULES`), the
trust-boundary rules documented beside their code (`DOCS` of `inputs.confine`, `inputs.kustomizations`,
`inputs.amounts`, `build.swap`), and the table of `cli.ruletable` for the rules that live in the reader, the
schemas, the Kueue Configuration checks, the build, the object validation, plan and publish. A rule
registered in any of those registries appears here without more work.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from gputenancy.check.chain import fleet, postbuild
from gputenancy.check.webhook import webhooks
from gputenancy.cli.ruletable import TABLE
from gputenancy.policy import rules


@dataclasses.dataclass(frozen=True)
class RuleDoc:
    id: str
    stage: str
    summary: str
    fails: str
    passes: str


def _model_doc(rule_id: str, doc: str) -> RuleDoc:
    text = " ".join(doc.split())
    passes = re.search(r"Passes:\s*(.*?)(?=\s*Fails:|$)", text)
    fails = re.search(r"Fails:\s*(.*?)(?=\s*Passes:|$)", text)
    summary = re.split(r"\s*Passes:|\s*Fails:", text)[0]
    return RuleDoc(
        rule_id, "model", summary, fails.group(1) if fails else "", passes.group(1) if passes else ""
    )


def _boundary() -> list[RuleDoc]:
    """The trust-boundary rules documented beside their code (reads, kustomizations, amounts, the swap)."""
    from gputenancy.assemble import swap
    from gputenancy.inputs import amounts, confine, kustomizations
    from gputenancy.versions import releasedata

    docs = {**confine.DOCS, **kustomizations.DOCS, **amounts.DOCS, **swap.DOCS, **releasedata.DOCS}
    out = []
    for rule_id, doc in docs.items():
        stage = (
            "read"
            if rule_id.startswith("source-")
            else "build"
            if rule_id.startswith("kustomize-") or rule_id == "cluster-kustomization"
            else "write"
            if rule_id.startswith("generated-")
            else "schemas"
            if rule_id.startswith("schemas-")
            else "model"
        )
        out.append(dataclasses.replace(_model_doc(rule_id, doc), stage=stage))
    return out


def all_rules() -> list[RuleDoc]:
    """Every rule id, in stage order: read, schema, model, configuration, build, objects, admission,
    built, write, plan, publish."""
    out = _boundary()  # rules documented beside their code, or in a registry, have no row in the table
    out += [RuleDoc(*row) for row in TABLE]
    out += [_model_doc(rule_id, fn.__doc__ or "") for rule_id, fn in rules.RULES.items()]
    out += [dataclasses.replace(_model_doc(r.id, r.doc), stage="admission") for r in webhooks.RULES]
    out += [
        dataclasses.replace(_model_doc(i, fn.__doc__ or ""), stage="built")
        for i, fn in [*postbuild.RULES.items(), *fleet.RULES.items()]
    ]
    order = (
        "read",
        "schema",
        "model",
        "configuration",
        "build",
        "objects",
        "admission",
        "built",
        "write",
        "plan",
        "publish",
        "schemas",
        "status",
        "import",
    )
    seen: dict[str, RuleDoc] = {}
    for doc in sorted(out, key=lambda d: order.index(d.stage) if d.stage in order else len(order)):
        seen.setdefault(doc.id, dataclasses.replace(doc, summary=styled(doc.summary)))
    return list(seen.values())


def styled(summary: str) -> str:
    """One style for every rule's description, whichever registry wrote it: a sentence starting with a
    capital (an identifier such as `lendingLimit` or `flavors[j]` keeps its spelling), and the severity
    of a rule that is not an error as a `(warning)` or `(note)` prefix."""
    level = re.match(r"\((warning|note)\)\s*|(warning|note):\s*", summary)
    if level:
        summary = summary[level.end() :]
    if re.match(r"[a-z]+\b(?![./\[(_-])", summary):
        summary = summary[0].upper() + summary[1:]
    return f"({level.group(1) or level.group(2)}) {summary}" if level else summary


def ids() -> list[str]:
    return [d.id for d in all_rules()]


def find(rule_id: str) -> RuleDoc | None:
    return next((d for d in all_rules() if d.id == rule_id), None)


def listing(docs: Iterable[RuleDoc]) -> str:
    docs = list(docs)
    width = min(max((len(d.id) for d in docs), default=0), 34)
    lines: list[str] = []
    stage = None
    for d in docs:
        if d.stage != stage:
            stage = d.stage
            lines += ["", f"{stage}:"] if lines else [f"{stage}:"]
        first = re.split(r"(?<=[a-z)])\. ", d.summary, maxsplit=1)[0].rstrip(".")
        lines.append(f"  {d.id:<{width}}  {first}")
    lines += ["", "python pipeline.py rules ID explains one, with a failing and a passing example."]
    return "\n".join(lines) + "\n"


def explain(d: RuleDoc) -> str:
    return f"{d.id} ({d.stage})\n\n{d.summary}\n\nFails:  {d.fails}\nPasses: {d.passes}\n"
