"""Argo CD health checks for Kueue objects (argocd/resource_customizations/kueue.x-k8s.io).

Each health.lua runs in a real Lua 5.1 runtime (lupa) the way Argo CD's gopher-lua VM runs a script
from argocd-cm: a chunk that reads the global ``obj`` and returns a table with ``status`` and
``message``, with only the base and table libraries loaded. The cases come from each kind's
``health_test.yaml`` (Argo CD's format), so that file is the single source of truth.
"""

from __future__ import annotations

import copy
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from lupa import lua51

REPO = Path(__file__).resolve().parent.parent
ARGOCD = REPO / "argocd"
GROUP = "kueue.x-k8s.io"
GROUP_DIR = ARGOCD / "resource_customizations" / GROUP
KINDS = ("ClusterQueue", "LocalQueue", "Cohort", "ResourceFlavor", "AdmissionCheck", "MultiKueueCluster")
APP_DIR = ARGOCD / "resource_customizations" / "argoproj.io" / "Application"
# gitops-engine's health.HealthStatusCode values; anything else becomes Unknown in Argo CD.
VALID_STATUSES = {"Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown"}
INVALID_STATUS_MESSAGE = "Lua returned an invalid health status"

# Loads a health script as a chunk whose globals are what Argo CD opens for argocd-cm scripts
# (util/lua/lua.go: package, base, table and a reduced os), plus `obj`.
_RUN_CHUNK = """
function(script, chunkname, object)
  local chunk, err = loadstring(script, "=" .. chunkname)
  if chunk == nil then
    error(err, 0)
  end
  local env = {
    obj = object,
    table = table,
    os = {time = os.time, date = os.date, clock = os.clock},
  }
  for _, name in ipairs({
    "assert", "error", "getmetatable", "ipairs", "next", "pairs", "pcall", "print", "rawequal",
    "rawget", "rawset", "select", "setmetatable", "tonumber", "tostring", "type", "unpack",
    "xpcall", "_VERSION",
  }) do
    env[name] = _G[name]
  end
  env._G = env
  setfenv(chunk, env)
  return chunk()
end
"""


def load_yaml(path: Path) -> Any:
    with path.open(encoding="utf-8") as stream:
        return yaml.safe_load(stream)


def to_lua(runtime: Any, value: Any) -> Any:
    """A JSON-like Python value as Lua values: mappings become tables, lists 1-based arrays, None nil."""
    if isinstance(value, dict):
        table = runtime.table()
        for key, item in value.items():
            if item is not None:
                table[str(key)] = to_lua(runtime, item)
        return table
    if isinstance(value, list):
        # gopher-lua's LTable.Append skips nil, so a null list item shifts the rest down.
        items = [to_lua(runtime, item) for item in value if item is not None]
        table = runtime.table()
        for index, item in enumerate(items, start=1):
            table[index] = item
        return table
    if isinstance(value, bool | int | float | str):
        return value
    raise TypeError(f"{type(value).__name__} is not JSON data (quote timestamps as the API server does)")


def run_health(script: str, chunkname: str, obj: dict[str, Any]) -> tuple[str, str]:
    """(status, message) as Argo CD's ExecuteHealthLua computes them; Lua errors propagate."""
    runtime = lua51.LuaRuntime(register_eval=False, register_builtins=False)
    # Without the string library, gopher-lua strings have no methods (s:sub(...) fails).
    runtime.execute('getmetatable("").__index = nil')
    result = runtime.eval(_RUN_CHUNK)(script, chunkname, to_lua(runtime, obj))
    if lua51.lua_type(result) != "table":
        raise AssertionError(f"expect table output from Lua script, not {lua51.lua_type(result) or 'nil'}")
    status, message = result["status"], result["message"]
    assert message is None or isinstance(message, str), f"message is {message!r}"
    if status not in VALID_STATUSES:
        return "Unknown", INVALID_STATUS_MESSAGE
    return status, message or ""


def health_script(kind: str) -> str:
    return (GROUP_DIR / kind / "health.lua").read_text(encoding="utf-8")


def health_cases() -> Iterator[Any]:
    for kind in KINDS:
        test_file = GROUP_DIR / kind / "health_test.yaml"
        for case in load_yaml(test_file)["tests"]:
            expected = case["healthStatus"]
            yield pytest.param(
                kind,
                case["inputPath"],
                expected["status"],
                expected.get("message", ""),
                id=f"{kind}/{case['inputPath']}",
            )


def sample_objects() -> Iterator[Any]:
    for kind in KINDS:
        for path in sorted((GROUP_DIR / kind / "testdata").glob("*.yaml")):
            yield pytest.param(kind, path, id=f"{kind}/testdata/{path.name}")


def subtrees(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path of every key and list item below value."""
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return
    for key, item in items:
        yield (*path, key)
        yield from subtrees(item, (*path, key))


def without(obj: dict[str, Any], path: tuple[Any, ...]) -> dict[str, Any]:
    pruned = copy.deepcopy(obj)
    parent: Any = pruned
    for key in path[:-1]:
        parent = parent[key]
    del parent[path[-1]]
    return pruned


def load_build_cm() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_cm", ARGOCD / "build_cm.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- Argo CD layout ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_layout_matches_argo_cd(kind: str) -> None:
    """health.lua + health_test.yaml + testdata/, every inputPath present and every testdata file used."""
    kind_dir = GROUP_DIR / kind
    assert (kind_dir / "health.lua").is_file()
    tests = load_yaml(kind_dir / "health_test.yaml")["tests"]
    assert tests, "health_test.yaml lists no case"
    used = set()
    for case in tests:
        assert set(case) == {"healthStatus", "inputPath"}, case
        assert set(case["healthStatus"]) <= {"status", "message"}, case
        assert case["healthStatus"]["status"] in VALID_STATUSES
        assert (kind_dir / case["inputPath"]).is_file(), case["inputPath"]
        used.add(case["inputPath"])
    on_disk = {f"testdata/{path.name}" for path in (kind_dir / "testdata").iterdir()}
    assert on_disk == used, f"unused testdata: {sorted(on_disk - used)}"


def test_every_kind_dir_is_known() -> None:
    assert sorted(path.name for path in GROUP_DIR.iterdir()) == sorted(KINDS)


@pytest.mark.parametrize(
    ("kind", "statuses"),
    [
        ("ClusterQueue", {"Healthy", "Progressing", "Degraded", "Suspended"}),
        ("LocalQueue", {"Healthy", "Progressing", "Degraded", "Suspended"}),
        ("Cohort", {"Healthy"}),
        ("ResourceFlavor", {"Healthy"}),
        ("AdmissionCheck", {"Healthy", "Progressing", "Degraded"}),
        ("MultiKueueCluster", {"Healthy", "Progressing", "Degraded"}),
    ],
)
def test_cases_cover_every_status(kind: str, statuses: set[str]) -> None:
    tests = load_yaml(GROUP_DIR / kind / "health_test.yaml")["tests"]
    assert {case["healthStatus"]["status"] for case in tests} == statuses


# --- the cases of health_test.yaml -----------------------------------------------------------------


@pytest.mark.parametrize(("kind", "input_path", "status", "message"), list(health_cases()))
def test_health_case(kind: str, input_path: str, status: str, message: str) -> None:
    obj = load_yaml(GROUP_DIR / kind / input_path)
    assert obj["kind"] == kind
    assert obj["apiVersion"].startswith(f"{GROUP}/")
    assert run_health(health_script(kind), f"{kind}/health.lua", obj) == (status, message)


# --- defensive against missing or odd fields -------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_minimal_object(kind: str) -> None:
    obj = {"apiVersion": f"{GROUP}/v1beta2", "kind": kind, "metadata": {"name": "minimal"}}
    status, message = run_health(health_script(kind), f"{kind}/health.lua", obj)
    if kind in ("ClusterQueue", "LocalQueue", "AdmissionCheck", "MultiKueueCluster"):
        assert (status, message) == ("Progressing", "Waiting for Kueue to report the Active condition")
    else:
        assert status == "Healthy"


@pytest.mark.parametrize(("kind", "path"), list(sample_objects()))
def test_any_field_may_be_missing(kind: str, path: Path) -> None:
    """Dropping any single key or list item from a sample object gives a valid status, never an error."""
    obj = load_yaml(path)
    script = health_script(kind)
    for subtree in subtrees(obj):
        status, _ = run_health(script, f"{kind}/health.lua", without(obj, subtree))
        assert status in VALID_STATUSES - {"Unknown"}, subtree


ODD_OBJECTS = [
    pytest.param({}, id="empty"),
    pytest.param({"metadata": "x", "spec": "x", "status": "x"}, id="scalars-for-maps"),
    pytest.param({"metadata": {"generation": "2"}, "status": {"conditions": "Active"}}, id="wrong-types"),
    pytest.param({"status": {"conditions": {"type": "Active", "status": "True"}}}, id="conditions-map"),
    pytest.param({"status": {"conditions": ["Active", 3, True, [], {"type": 1}]}}, id="odd-items"),
    pytest.param({"status": {"conditions": [None, {"type": "Active", "status": "True"}]}}, id="null-item"),
    pytest.param(
        {
            "metadata": {"generation": 2},
            "spec": {"stopPolicy": 7},
            "status": {"conditions": [{"type": "Active", "status": "False", "reason": 1, "message": []}]},
        },
        id="odd-condition-fields",
    ),
    pytest.param(
        {
            "metadata": {"generation": 2},
            "status": {"conditions": [{"type": "Active", "status": True, "observedGeneration": "2"}]},
        },
        id="bool-status",
    ),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("obj", ODD_OBJECTS)
def test_odd_objects(kind: str, obj: dict[str, Any]) -> None:
    status, message = run_health(health_script(kind), f"{kind}/health.lua", obj)
    assert status in VALID_STATUSES - {"Unknown"}
    assert message


def test_stale_generation_wins_over_a_stale_failure() -> None:
    """An Active=False condition from an older generation says nothing about the current spec."""
    obj = load_yaml(GROUP_DIR / "ClusterQueue" / "testdata" / "flavor-not-found.yaml")
    obj["metadata"]["generation"] = 2
    status, message = run_health(health_script("ClusterQueue"), "ClusterQueue/health.lua", obj)
    assert (status, message) == (
        "Progressing",
        "Waiting for Kueue to observe generation 2 (Active condition is from generation 1)",
    )


def test_stopped_without_stop_policy_is_degraded() -> None:
    """Suspended needs both the Stopped reason and a Hold/HoldAndDrain stopPolicy in the spec."""
    obj = load_yaml(GROUP_DIR / "LocalQueue" / "testdata" / "stopped-hold.yaml")
    obj["spec"]["stopPolicy"] = "None"
    status, message = run_health(health_script("LocalQueue"), "LocalQueue/health.lua", obj)
    assert (status, message) == ("Degraded", "Stopped: LocalQueue is stopped")


def test_harness_rejects_what_argo_cd_rejects() -> None:
    assert run_health('return {status = "Fine"}', "t.lua", {}) == ("Unknown", INVALID_STATUS_MESSAGE)
    with pytest.raises(AssertionError, match="expect table output"):
        run_health('return "Healthy"', "t.lua", {})
    with pytest.raises(lua51.LuaError):
        run_health('return {status = string.upper("healthy")}', "t.lua", {})
    with pytest.raises(lua51.LuaError):
        run_health('return {status = ("healthy"):upper()}', "t.lua", {})
    with pytest.raises(lua51.LuaError):
        run_health("return {status = obj.status.conditions}", "t.lua", {})


# --- the upstream CRDs agree with the scripts' assumptions ----------------------------------------


def crd_versions(shared: Path, plural: str) -> Iterator[tuple[str, dict[str, Any]]]:
    paths = sorted(shared.glob(f"kueue/v*/crds/kueue.x-k8s.io_{plural}.yaml"))
    assert paths, f"no {plural} CRD under {shared}/kueue"
    for path in paths:
        for version in load_yaml(path)["spec"]["versions"]:
            yield f"{path.parent.parent.name}/{version['name']}", version


@pytest.mark.parametrize("plural", ["clusterqueues", "localqueues"])
def test_queue_crds_have_conditions_and_stop_policy(shared: Path, plural: str) -> None:
    for label, version in crd_versions(shared, plural):
        schema = version["schema"]["openAPIV3Schema"]["properties"]
        assert "conditions" in schema["status"]["properties"], label
        stop_policies = set(schema["spec"]["properties"]["stopPolicy"]["enum"])
        assert stop_policies == {"None", "Hold", "HoldAndDrain"}, label


def test_cohort_crd_has_no_conditions(shared: Path) -> None:
    for label, version in crd_versions(shared, "cohorts"):
        status = version["schema"]["openAPIV3Schema"]["properties"].get("status", {})
        assert "conditions" not in status.get("properties", {}), label


def test_resourceflavor_crd_has_no_status(shared: Path) -> None:
    for label, version in crd_versions(shared, "resourceflavors"):
        assert "status" not in version["schema"]["openAPIV3Schema"]["properties"], label
        assert "status" not in version.get("subresources", {}), label


# --- the argocd-cm snippet --------------------------------------------------------------------------


def test_committed_snippet_equals_generator_output() -> None:
    build_cm = load_build_cm()
    expected = build_cm.render_configmap(build_cm.health_scripts())
    assert (ARGOCD / "argocd-cm-health.yaml").read_text(encoding="utf-8") == expected, (
        "argocd/argocd-cm-health.yaml is out of date: run python argocd/build_cm.py"
    )
    assert build_cm.main(["--check"]) == 0


def test_snippet_installs_each_script_verbatim() -> None:
    cm = load_yaml(ARGOCD / "argocd-cm-health.yaml")
    assert (cm["apiVersion"], cm["kind"], cm["metadata"]["name"]) == ("v1", "ConfigMap", "argocd-cm")
    assert "namespace" not in cm["metadata"]
    assert cm["data"] == {
        **{f"resource.customizations.health.{GROUP}_{kind}": health_script(kind) for kind in KINDS},
        "resource.customizations.health.argoproj.io_Application": (APP_DIR / "health.lua").read_text(),
    }


def test_helm_values_carry_the_same_keys(capsys: pytest.CaptureFixture[str]) -> None:
    build_cm = load_build_cm()
    assert build_cm.main(["--helm"]) == 0
    values = yaml.safe_load(capsys.readouterr().out)
    assert values == {"configs": {"cm": load_yaml(ARGOCD / "argocd-cm-health.yaml")["data"]}}


def test_check_reports_drift_and_write_fixes_it(tmp_path: Path) -> None:
    build_cm = load_build_cm()
    output = tmp_path / "argocd-cm-health.yaml"
    assert build_cm.main(["--check", "--output", str(output)]) == 1
    assert build_cm.main(["--output", str(output)]) == 0
    assert build_cm.main(["--check", "--output", str(output)]) == 0
    output.write_text(output.read_text(encoding="utf-8").replace("Healthy", "Fine", 1), encoding="utf-8")
    assert build_cm.main(["--check", "--output", str(output)]) == 1


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("return {}", "exactly one newline"),
        ("return {}\n\n", "exactly one newline"),
        ("local hs = {} \nreturn hs\n", "trailing whitespace"),
        ("if x then\n\treturn {}\nend\n", "tab character"),
    ],
)
def test_generator_rejects_scripts_it_cannot_inline(tmp_path: Path, text: str, problem: str) -> None:
    build_cm = load_build_cm()
    kind_dir = tmp_path / GROUP / "ClusterQueue"
    kind_dir.mkdir(parents=True)
    (kind_dir / "health.lua").write_text(text, encoding="utf-8")
    with pytest.raises(build_cm.BuildError, match=problem):
        build_cm.health_scripts(tmp_path)
    output = tmp_path / "out.yaml"
    assert build_cm.main(["--customizations", str(tmp_path), "--output", str(output)]) == 2
    assert not output.exists()


# --- the Application check: the app-of-apps waits for kueue-<cluster> ------------------------------


@pytest.mark.parametrize(
    "case", load_yaml(APP_DIR / "health_test.yaml")["tests"], ids=lambda c: c["inputPath"]
)
def test_application_health_case(case: dict[str, Any]) -> None:
    obj = load_yaml(APP_DIR / case["inputPath"])
    assert (obj["apiVersion"], obj["kind"]) == ("argoproj.io/v1alpha1", "Application")
    script = (APP_DIR / "health.lua").read_text()
    expected = case["healthStatus"]
    assert run_health(script, "Application/health.lua", obj) == (
        expected["status"],
        expected.get("message", ""),
    )


@pytest.mark.parametrize("obj", ODD_OBJECTS)
def test_application_health_survives_odd_objects(obj: dict[str, Any]) -> None:
    status, _ = run_health((APP_DIR / "health.lua").read_text(), "Application/health.lua", obj)
    assert status in VALID_STATUSES - {"Unknown"}


@pytest.mark.parametrize("plural", ["admissionchecks", "multikueueclusters"])
def test_admission_check_and_multikueue_cluster_crds_have_conditions(shared: Path, plural: str) -> None:
    for label, version in crd_versions(shared, plural):
        schema = version["schema"]["openAPIV3Schema"]["properties"]
        assert "conditions" in schema["status"]["properties"], label
