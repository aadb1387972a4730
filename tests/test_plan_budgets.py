"""What a change does to budgets, for everyone it touches: capacity before and after, grants before ->
after with the changed cells, tenants affected through their cohort, drained queues, an added tenant's
namespaces, HAMi units, and the Mermaid pies of the PR comment. The base of the change is a real git
commit of a repository built under tmp_path."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import hamitree
import pytest
import trees

from gputenancy.cli.app import main
from gputenancy.deliver import baseline, planview

SPEECH_2 = "gpu.nvidia.com: {nominal: 2, borrowingLimit: 2}"
SPEECH_4 = "gpu.nvidia.com: {nominal: 4, borrowingLimit: 2}"
VISION_8 = "gpu.nvidia.com: {nominal: 8, borrowingLimit: 4, lendingLimit: 4}"
VISION_6 = "gpu.nvidia.com: {nominal: 6, borrowingLimit: 4, lendingLimit: 4}"


def plan(root: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["--root", str(root), "plan", *args])
    return code, capsys.readouterr().out


def speech_up_vision_down(root: Path) -> None:
    """speech asks for two more H100s on prod, vision gives two back."""
    trees.replace(root, "tenants/speech.yaml", SPEECH_2, SPEECH_4)
    trees.replace(root, "tenants/vision.yaml", VISION_8, VISION_6)


def example(tmp_path: Path) -> Path:
    root = trees.example(tmp_path)
    trees.committed(root).close()
    return root


def test_a_capacity_change_alone_is_a_change_with_headroom_before_and_after(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = example(tmp_path)
    trees.replace(root, "overlays/prod/cluster.yaml", "gpu.nvidia.com: 16 ", "gpu.nvidia.com: 160 ")
    code, out = plan(root, capsys)
    assert code == 2, out  # not "no changes": capacity guards every later budget
    assert "prod: 0 changed, 0 added, 0 removed, capacity changed" in out
    assert "    h100 nvidia.com/gpu: 16 of 16 → 160, headroom 0 → 144" in out
    assert "    h100 cpu: 224 of 224, headroom 0  " in out  # unchanged rows keep one value
    assert "capacity changed on prod" in out.splitlines()[-1]
    code, md = plan(root, capsys, "--format", "markdown")
    assert "| h100 | nvidia.com/gpu | 16 | **16 → 160** | 0 → 144 |" in md
    code, doc = plan(root, capsys, "--format", "json")
    (prod,) = [c for c in json.loads(doc)["clusters"] if c["name"] == "prod"]
    (row,) = [r for r in prod["capacity"] if (r["flavor"], r["resource"]) == ("h100", "nvidia.com/gpu")]
    assert (row["capacityBefore"], row["capacity"]) == ("16", "160")


def test_grants_before_after_and_the_tenants_affected_through_the_cohort(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = example(tmp_path)
    speech_up_vision_down(root)
    code, out = plan(root, capsys, "--against", "HEAD")
    assert code == 2
    assert (
        "    speech h100 nvidia.com/gpu: nominal 2 → 4, borrowing 2, lending all (2) → all (4); reaches 4 → 6 "
        "(changed: nominal, lending, reach)"
    ) in out
    assert "    vision h100 nvidia.com/gpu: nominal 8 → 6, borrowing 4, lending 4; reaches 12 → 10" in out
    # nlp is not in the change, but vision lends 4 either way and speech now lends 4: nlp reaches 14
    affected = out.split(
        "  affected on prod (tenants the change does not touch; reach through the cohort):\n"
    )[1]
    assert affected.startswith(
        "    nlp h100 nvidia.com/gpu: nominal 6, borrowing 8, lending 2; reaches 12 → 14"
    )
    assert "nlp h100 cpu" not in out  # unaffected rows of untouched tenants stay out
    code, md = plan(root, capsys, "--against", "HEAD", "--format", "markdown")
    assert "| speech | h100 | nvidia.com/gpu | **2 → 4** | 2 | **all (2) → all (4)** | **4 → 6** |" in md
    assert "| speech | h100 | cpu |" not in md  # an unchanged row of a touched tenant is counted only
    assert re.search(r"unchanged: \d+ more row\(s\) of speech; \d+ more row\(s\) of vision", md), md
    assert "### Affected on prod: reach changes through the cohort" in md
    assert "| nlp | h100 | nvidia.com/gpu | 6 | 8 | 2 | **12 → 14** |" in md
    code, doc = plan(root, capsys, "--against", "HEAD", "--format", "json")
    (prod,) = [c for c in json.loads(doc)["clusters"] if c["name"] == "prod"]
    (nlp,) = [g for g in prod["grantChanges"] if g["tenant"] == "nlp"]
    assert nlp["affected"] and nlp["changed"] == ["reach"]
    assert (nlp["before"]["reach"], nlp["after"]["reach"]) == ("12", "14")


def test_an_added_tenant_in_a_cohort_moves_the_members_and_needs_its_namespaces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = example(tmp_path)
    trees.replace(root, "tenants/vision.yaml", VISION_8, VISION_6)  # room for the newcomer
    trees.write(
        root,
        "tenants/robotics.yaml",
        trees.tenant(
            "robotics",
            cohort="research",
            namespaces=["robotics-sim", "robotics-train"],
            budgets={"default": [{"flavor": "h100", "devices": {"gpu.nvidia.com": 2}}]},
        ),
    )
    code, out = plan(root, capsys, "--against", "HEAD")
    assert code == 2, out
    assert (
        "    robotics h100 nvidia.com/gpu (added): nominal - → 2, borrowing - → unlimited (cohort research)"
        in out
    )
    # robotics lends its 2: nlp (borrowing 8) reaches 2 more; speech is capped by its borrowingLimit 2
    assert "    nlp h100 nvidia.com/gpu: nominal 6, borrowing 8, lending 2; reaches 12 → 14" in out
    assert "speech h100 nvidia.com/gpu" not in out
    assert (
        "  before Argo CD syncs prod: tenant 'robotics' is new on prod: create its namespace(s) "
        "robotics-sim, robotics-train there before Argo CD syncs (its Applications sync with "
        "CreateNamespace=false"
    ) in out
    code, md = plan(root, capsys, "--against", "HEAD", "--format", "markdown")
    assert "### Before Argo CD syncs prod" in md and "robotics-sim, robotics-train" in md
    assert "| robotics (added) | h100 | nvidia.com/gpu | - → 2 |" in md


def test_a_draining_tenant_admits_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = example(tmp_path)
    trees.replace(root, "tenants/speech.yaml", "cohort: research", "state: draining\ncohort: research")
    code, out = plan(root, capsys, "--against", "HEAD")
    assert code == 2
    assert (
        "    speech h100 cpu: nominal 32, borrowing unlimited (cohort research), lending all (32); "
        "admits 224 → nothing (draining: stopPolicy HoldAndDrain) (changed: reach)"
    ) in out
    assert "reaches 224" not in out.split("speech h100 cpu")[1].splitlines()[0]
    code = main(["--root", str(root), "budgets", "--cluster", "prod"])
    text = capsys.readouterr().out
    assert (
        "    speech: nominal 32, borrowing unlimited (cohort research), lending all (32); admits nothing"
        in text
    )


def test_plan_without_against_after_a_local_render_compares_with_the_last_commit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = example(tmp_path)
    (root / "tenants/speech.yaml").unlink()
    assert main(["--root", str(root), "render"]) == 0
    capsys.readouterr()
    assert main(["--root", str(root), "plan"]) == 1  # the refusal, not "no changes"
    seen = capsys.readouterr()
    assert seen.out.startswith("plan against HEAD:generated (")
    assert "compares with the last commit (HEAD): generated/ holds uncommitted output" in seen.out
    assert "tenant 'speech': ClusterQueue speech would be deleted" in seen.err


def test_hami_memory_in_gib_and_compute_in_percent_in_budgets_and_grants(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = hamitree.build(tmp_path)
    trees.committed(root).close()
    assert main(["--root", str(root), "budgets"]) == 0
    text = capsys.readouterr().out
    grants = [line for line in text.splitlines() if line.startswith("    ")]
    assert grants and not any(re.search(r"nominal \d{4,}\b", line) for line in grants), text
    assert any(re.search(r"nominal [\d.]+Gi, .*reaches [\d.]+Gi", line) for line in grants), text
    assert any(re.search(r"nominal [\d.]+% \([\d.]+ GPUs?\), .*reaches [\d.]+%", line) for line in grants), (
        text
    )
    assert main(["--root", str(root), "budgets", "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "Gi |" in md and "% (" in md


def mermaid_blocks(md: str) -> list[str]:
    return re.findall(r"```mermaid\n(.*?)```", md, re.S)


def test_the_pr_comment_draws_each_changed_gpu_pool_before_and_after(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = example(tmp_path)
    speech_up_vision_down(root)
    trees.replace(root, "overlays/prod/cluster.yaml", "gpu.nvidia.com: 16 ", "gpu.nvidia.com: 20 ")
    code, md = plan(root, capsys, "--against", "HEAD", "--format", "markdown")
    assert code == 2
    before, after = mermaid_blocks(md)  # h100 GPUs only: cpu, memory and unchanged pools are not drawn
    assert before.splitlines() == [
        "pie showData title prod h100 nvidia.com/gpu before: 16 of 16",
        '    "nlp" : 6',
        '    "speech" : 2',
        '    "vision" : 8',
    ]
    assert after.splitlines() == [
        "pie showData title prod h100 nvidia.com/gpu after: 16 of 20",
        '    "nlp" : 6',
        '    "speech" : 4',
        '    "vision" : 6',
        '    "free" : 4',
    ]
    assert md.index("### Pools: who holds what") < md.index("### Changes")


def test_a_capacity_change_alone_is_drawn_in_the_pr_comment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No budget changes, only prod's H100 count: that pool is drawn before and after (its free slice
    grows), and no other pool is."""
    root = example(tmp_path)
    trees.replace(root, "overlays/prod/cluster.yaml", "gpu.nvidia.com: 16 ", "gpu.nvidia.com: 20 ")
    code, md = plan(root, capsys, "--against", "HEAD", "--format", "markdown")
    assert code == 2, md
    before, after = mermaid_blocks(md)
    assert before.splitlines()[0] == "pie showData title prod h100 nvidia.com/gpu before: 16 of 16"
    assert after.splitlines() == [
        "pie showData title prod h100 nvidia.com/gpu after: 16 of 20",
        '    "nlp" : 6',
        '    "speech" : 2',
        '    "vision" : 8',
        '    "free" : 4',
    ]
    trees.replace(root, "overlays/prod/cluster.yaml", "gpu.nvidia.com: 20 ", "gpu.nvidia.com: 16 ")
    code, md = plan(root, capsys, "--against", "HEAD", "--format", "markdown")
    assert mermaid_blocks(md) == []  # back as committed: nothing to draw


def test_hami_grants_in_the_plan_read_in_gib_and_percent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = hamitree.build(tmp_path)
    assert main(["--root", str(root), "render"]) == 0
    trees.committed(root).close()
    trees.edit(
        root, "tenants/serving.yaml", lambda d: d["budgets"]["default"][0]["hami"].update(memory="10Gi")
    )
    code, out = plan(root, capsys)
    assert code == 2, out
    grants = out.split("  what it grants on site (before → after):\n")[1]
    assert "    serving t4-hami nvidia.com/total-gpumem: nominal 12Gi → 10Gi, " in grants
    assert "    serving t4-hami nvidia.com/total-gpucores: nominal 50% (0.5 GPUs), " in grants
    assert not re.search(r"nominal 1\d{4}\b|reaches \d{4,}\b", grants), grants  # no raw MiB
    code, md = plan(root, capsys, "--format", "markdown")
    pies = mermaid_blocks(md)
    assert pies and all("(GiB)" in p.splitlines()[0] for p in pies), pies  # memory drawn in GiB


def test_a_pool_over_capacity_has_no_free_slice_and_says_by_how_much() -> None:
    from gputenancy.deliver import budgetdiff, budgets, poolchart
    from gputenancy.inputs.quantity import parse

    def pool(capacity: int, **held: int) -> budgets.Pool:
        grants = tuple(
            budgets.Grant("prod", t, "h100", "nvidia.com/gpu", parse(n), None, None, None, parse(n))
            for t, n in held.items()
        )
        return budgets.Pool(
            "prod", "h100", "nvidia.com/gpu", parse(capacity), parse(sum(held.values())), grants
        )

    before, after = pool(16, a=8, b=8), pool(16, a=8, b=8, c=2)
    pies = poolchart.pies([budgetdiff.PoolDiff("prod", "h100", "nvidia.com/gpu", before, after)])
    assert [p.title for p in pies] == [
        "prod h100 nvidia.com/gpu before: 16 of 16",
        "prod h100 nvidia.com/gpu after: 18 of 16, over capacity by 2",
    ]
    assert [label for label, _ in pies[1].slices] == ["a", "b", "c"]  # no "free"
    same = budgetdiff.PoolDiff("prod", "h100", "nvidia.com/gpu", before, before)
    cpu = budgetdiff.PoolDiff("prod", "h100", "cpu", before, after)
    assert poolchart.pies([same, cpu]) == []  # unchanged pools and cpu are not drawn


def test_pies_leave_out_empty_shares_and_stop_at_the_chart_limit() -> None:
    """A tenant holding nothing of a pool gets no slice; exactly MAX_CHARTS changed pools are all drawn
    with no note, one more is left to the tables and said so."""
    from gputenancy.deliver import budgetdiff, budgets, poolchart
    from gputenancy.inputs.quantity import parse

    def diff(flavor: str) -> budgetdiff.PoolDiff:
        def pool(capacity: int) -> budgets.Pool:
            grants = tuple(
                budgets.Grant("prod", t, flavor, "nvidia.com/gpu", parse(n), None, None, None, parse(n))
                for t, n in (("a", 4), ("idle", 0))
            )
            return budgets.Pool("prod", flavor, "nvidia.com/gpu", parse(capacity), parse(4), grants)

        return budgetdiff.PoolDiff("prod", flavor, "nvidia.com/gpu", pool(8), pool(6))

    limit = poolchart.MAX_CHARTS
    full = [diff(f"f{i:02}") for i in range(limit)]
    assert [label for label, _ in poolchart.pies(full)[0].slices] == ["a", "free"]  # no "idle"
    md = "\n".join(poolchart.markdown(full))
    assert md.count("```mermaid") == 2 * limit and "more changed pools" not in md
    md = "\n".join(poolchart.markdown([*full, diff("f99")]))
    assert md.count("```mermaid") == 2 * limit and "prod f99" not in md
    assert "_1 more changed pools are in the tables above._" in md


def test_the_inputs_before_are_read_again_only_when_the_change_touches_them(tmp_path: Path) -> None:
    """With no input file changed since the base, the work tree's model is the model before; a changed
    tenant file is read at the base: its old budget, not the new one."""
    from gputenancy.deliver import baseline
    from gputenancy.inputs.spec import load_model

    root = example(tmp_path)
    current = load_model(root)[0]
    assert baseline.model_before(root, "HEAD", current=current, cache=None) is current
    (root / "generated" / "note.txt").write_text("output only\n")  # outside the inputs
    assert baseline.model_before(root, "HEAD", current=current, cache=None) is current
    speech_up_vision_down(root)
    changed = load_model(root)[0]
    before = baseline.model_before(root, "HEAD", current=changed, cache=None)
    assert before is not None and before is not changed
    assert before.tenants == current.tenants != changed.tenants


def test_what_the_plan_makes_only_where_it_is_shown_is_what_a_full_computation_gives(tmp_path: Path) -> None:
    """The capacity table is made for the clusters that change (every cluster for the JSON view),
    the grants of the changed tenants from their clusters alone, and a grant row the change leaves
    exactly as it was is not worded to find out it did not change: each is what computing
    everything for every cluster gives."""
    from gputenancy.deliver import budgetdiff, budgets
    from gputenancy.deliver import plan as planner

    root = example(tmp_path)
    speech_up_vision_down(root)  # prod changes, lab does not
    _, shown = planner.make(root, cluster=None, against="HEAD", schemas=None, allow_delete=False)
    result, full = planner.make(
        root, cluster=None, against="HEAD", schemas=None, allow_delete=False, all_capacity=True
    )
    assert shown is not None and full is not None
    assert [(c.name, c.changed) for c in shown.clusters] == [("lab", False), ("prod", True)]
    assert [(c.name, c.changed) for c in full.clusters] == [("lab", False), ("prod", True)]
    assert shown.clusters[1] == full.clusters[1] and full.clusters[1].capacity
    assert shown.clusters[0].capacity == () and full.clusters[0].capacity  # lab's table, JSON only
    assert shown == dataclasses.replace(full, clusters=(shown.clusters[0], full.clusters[1]))
    touched = {c.name: c.tenants for c in full.clusters}
    every = budgets.pools(result.model)
    assert full.grants == tuple(
        sorted(
            (g for p in every for g in p.grants if g.tenant in touched[g.cluster]),
            key=lambda g: (g.cluster, g.tenant, g.flavor, g.resource),
        )
    )
    before = baseline.model_at(root, "HEAD")
    assert before is not None
    old = {
        (g.cluster, g.tenant, g.flavor, g.resource): g
        for p in budgets.pools(before, ["prod"])
        for g in p.grants
    }
    new = {
        (g.cluster, g.tenant, g.flavor, g.resource): g for p in every if p.cluster == "prod" for g in p.grants
    }
    diffs = [
        budgetdiff.GrantDiff(*k, old.get(k), new.get(k), k[1] not in touched["prod"])
        for k in sorted(old.keys() | new.keys())
    ]
    expected = tuple(d for d in diffs if not d.affected or d.changed)
    assert full.grant_diffs == expected and any(d.affected for d in expected)
    assert len(expected) < len(diffs)  # rows the change leaves alone stay out
    planview_doc = planview.to_json(full)
    assert all(c["capacity"] for c in planview_doc["clusters"])


def _copy_tenant(root: Path, old: str, new: str, *, keep: bool = True) -> None:
    text = (root / "tenants" / f"{old}.yaml").read_text()
    if not keep:
        (root / "tenants" / f"{old}.yaml").unlink()
    (root / "tenants" / f"{new}.yaml").write_text(text.replace(f"name: {old}\n", f"name: {new}\n", 1))


CHANGES = {
    "edited": speech_up_vision_down,
    "added": lambda root: _copy_tenant(root, "sandbox", "a-first"),  # sorts before every other file
    "removed": lambda root: (root / "tenants" / "nlp.yaml").unlink(),
    "renamed": lambda root: _copy_tenant(root, "speech", "voice", keep=False),
    "overlay": lambda root: (
        trees.replace(root, "overlays/prod/cluster.yaml", "gpu.nvidia.com: 16 ", "gpu.nvidia.com: 160 "),
        speech_up_vision_down(root),
    ),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_the_model_before_reads_only_the_changed_files_and_is_what_a_full_read_gives(
    tmp_path: Path, change: str
) -> None:
    """With input files changed since the base, only those are read at the base; every other tenant
    record is the work tree's own. The model is exactly the one reading everything at the base gives
    (an edited, an added, a removed and a renamed tenant file; a changed overlay and tenants)."""
    from gputenancy.inputs.spec import load_model

    root = example(tmp_path)
    CHANGES[change](root)
    current = load_model(root)[0]
    before = baseline.model_before(root, "HEAD", current=current, cache=None)
    full = baseline.model_at(root, "HEAD")
    assert before is not None and full is not None and before is not current
    assert dataclasses.replace(before, root=full.root) == full
    assert (before.tenants, before.clusters) != (current.tenants, current.clusters)
    reused = [t for t in before.tenants if any(t is c for c in current.tenants)]
    changed = {"edited": 2, "added": 0, "removed": 1, "renamed": 1, "overlay": 2}[change]
    assert len(reused) == len(full.tenants) - changed  # read again: only what the change touches


def test_reading_the_changed_files_at_the_base_leaves_the_work_trees_input_cache_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next plan parses no work-tree input file again (the run's input-file cache is not left
    holding the base's few files); of the tenant files, only the changed ones are parsed at the base
    (with base/ and overlays/ there, a few files), every time."""
    from gputenancy.deliver import plan as planner
    from gputenancy.inputs import source

    root = example(tmp_path)
    speech_up_vision_down(root)
    parsed: list[str] = []
    real = source._load_bytes

    def counting(data: bytes, shown: str, max_bytes: int) -> source.Document:
        parsed.append(shown)
        return real(data, shown, max_bytes)

    planner.make(root, cluster=None, against=None, schemas=None, allow_delete=False)
    monkeypatch.setattr(source, "_load_bytes", counting)
    for _ in range(2):
        parsed.clear()
        _, made = planner.make(root, cluster=None, against=None, schemas=None, allow_delete=False)
        assert made is not None and made.known_before and made.grant_diffs
        tenants = [p for p in parsed if not p.startswith(("base/", "overlays/"))]
        assert tenants == ["tenants/speech.yaml", "tenants/vision.yaml"], parsed  # as they are at HEAD


def test_the_files_touched_under_the_inputs_are_those_of_all_touched_files_there(tmp_path: Path) -> None:
    """git looks only under base/, overlays/ and tenants/ for the model before, and finds there what
    it finds looking everywhere: edited, removed, untracked (not ignored) and staged files."""
    import git

    from gputenancy.deliver import authorview

    root = example(tmp_path)
    speech_up_vision_down(root)
    (root / "tenants" / "nlp.yaml").unlink()
    _copy_tenant(root, "sandbox", "new one")  # untracked, with a space in its name
    (root / ".gitignore").write_text("tenants/ignored.yaml\n")
    (root / "tenants" / "ignored.yaml").write_text("ignored\n")
    (root / "generated" / "note.txt").write_text("outside the inputs\n")
    trees.replace(root, "overlays/prod/cluster.yaml", "gpu.nvidia.com: 16 ", "gpu.nvidia.com: 160 ")
    with git.Repo(root) as repo:
        repo.git.add("overlays/prod/cluster.yaml")
    everything = authorview.touched_files(root, "HEAD")
    inputs = authorview.touched_files(root, "HEAD", baseline.INPUTS)
    assert everything is not None and inputs is not None
    assert inputs == {p for p in everything if p.split("/", 1)[0] in baseline.INPUTS}
    assert inputs == {
        "overlays/prod/cluster.yaml",
        "tenants/new one.yaml",
        "tenants/nlp.yaml",
        "tenants/speech.yaml",
        "tenants/vision.yaml",
    }
    assert {".gitignore", "generated/note.txt"} <= everything


def _section(text: str, title: str) -> str:
    return text.split(f"### {title}", 1)[1].split("\n### ", 1)[0]


def test_the_pr_comment_validation_names_no_runner_path_and_no_character_reference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], shared: Path
) -> None:
    """The Validation section says which Kueue version's CRDs checked each cluster, without the
    runner's paths (the schemas directory is the runner's, under /tmp or the workspace) and as plain
    text, no `&#39;` for a quote."""
    root = example(tmp_path)
    speech_up_vision_down(root)
    code, out = plan(root, capsys, "--schemas", str(shared), "--format", "markdown")
    assert code == 2, out
    validation = _section(out, "Validation")
    assert "prod: Kueue CRD schema and CEL validation ran (Kueue v0.19.2" in validation, validation
    assert str(shared) not in validation and str(tmp_path) not in validation, validation
    assert "&#" not in validation, validation
    assert "kueue/v0.19.2/crds" in validation, validation
    from gputenancy.deliver import plan as plans

    made = plans.make(root, cluster=None, against=None, schemas=None, allow_delete=False)[1]
    assert made is not None
    runner = "/home/runner/work/gpu/gpu/.gputenancy-schemas/kueue/v0.19.2/crds"
    notes = (
        "gpu-fleet: nlp's quota there is the sum of its workers' quotas",
        f"prod: ran (Kueue v0.19.2, {runner})",
    )
    validation = _section(planview.format_markdown(dataclasses.replace(made, notes=notes)), "Validation")
    assert "nlp's quota" in validation and "&#" not in validation and "/home/runner" not in validation, (
        validation
    )


def test_the_pr_comment_lists_only_the_changed_grant_rows_of_a_touched_tenant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """vision gives two H100s back: its other grant rows (MIG, cpu, memory) are unchanged and only
    counted; the text plan still lists every row of the tenant."""
    root = example(tmp_path)
    trees.replace(root, "tenants/vision.yaml", VISION_8, VISION_6)
    code, out = plan(root, capsys, "--format", "markdown")
    assert code == 2, out
    section = _section(out, "What it grants on prod (before → after)")
    rows = [line for line in section.splitlines() if line.startswith("| vision")]
    assert len(rows) == 1 and "nvidia.com/gpu" in rows[0], section
    unchanged = re.search(r"unchanged: (\d+) more row\(s\) of vision", section)
    assert unchanged and int(unchanged.group(1)) > 0, section
    code, text = plan(root, capsys)
    assert len([x for x in text.splitlines() if x.strip().startswith("vision ")]) > 1
