"""The MLflow seam stays one seam: nothing outside :mod:`mlops.tracking` reaches MLflow's client, the store's two
halves answer for it, and both of its clients satisfy the protocol the registry writes through.

The source check reads every Python file (and notebook code cell) of the project outside ``mlops/tracking/``,
``tests/`` and the virtual environment, so a caller that imports ``MlflowClient`` or ``mlflow.tracking``, or reads
``.client``/``._client`` off a store, fails here with its file and line. The served-store test runs a real
``mlflow server`` on a SQLite store (as :mod:`tests.mlops.test_served_tracking` does) and proves a rollout's
registry writes take the REST path a served store's own ``tag_version``/``move_alias`` take.
"""

from __future__ import annotations

import ast
import inspect
import json
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from delivery.rollout.registry_writes import RolloutRegistry
from mlops.tracking.model_registry_store import ModelRegistryStore
from mlops.tracking.registry_writer import RegistryWriter
from mlops.tracking.rest_client import MlflowRestClient
from mlops.tracking.run_tracker import RunTracker
from mlops.tracking.served import SERVED_AT_ENV, ServedStore, serve_store
from mlops.tracking.store import TrackingStore
from mlops.vocabulary import (
    CHALLENGER,
    ROLLED_BACK_AT_TAG,
    ROLLOUT_GATE,
    ROLLOUT_STAGE_TAG,
    gate_tag,
)

ROOT = Path(__file__).resolve().parents[2]
SEAM = "mlops/tracking/"
EXCLUDED = (SEAM, "tests/", ".venv/")
CLIENT_ATTRIBUTES = {"client", "_client"}
FORBIDDEN_MODULES = ("mlflow.tracking", "mlflow.client")


def _project_sources() -> list[Path]:
    """Every Python file and notebook git knows of (tracked or not ignored), outside the seam and the tests."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py", "*.ipynb"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [
        ROOT / name
        for name in sorted(set(listed))
        if not name.startswith(EXCLUDED) and (ROOT / name).exists()
    ]


def _code_of(path: Path) -> str:
    if path.suffix != ".ipynb":
        return path.read_text(encoding="utf-8")
    cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
    lines: list[str] = []
    for cell in cells:
        if cell.get("cell_type") == "code":
            source = cell.get("source", [])
            text = "".join(source) if isinstance(source, list) else str(source)
            # IPython's magics and shell lines are not Python: blanked, so line numbers stay the cell's.
            lines += ["" if line.lstrip().startswith(("%", "!")) else line for line in text.splitlines()]
    return "\n".join(lines)


def _store_like(node: ast.expr) -> bool:
    """Whether ``node`` names a tracking store: a name or attribute spelled ``*store*``, or a store built inline."""
    if isinstance(node, ast.Name):
        return "store" in node.id.lower()
    if isinstance(node, ast.Attribute):
        return "store" in node.attr.lower()
    if isinstance(node, ast.Call):
        built = node.func
        while isinstance(built, ast.Attribute):
            built = built.value
        return isinstance(built, ast.Name) and built.id == "TrackingStore"
    return False


def _embedded_code(node: ast.AST) -> str | None:
    """A string literal of several lines that is Python (``python -c`` code a benchmark or a test runs), with an
    f-string's fields as plain names; None for anything else (prose, one-liners)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value
    elif isinstance(node, ast.JoinedStr):
        text = "".join(part.value if isinstance(part, ast.Constant) else "field" for part in node.values)
    else:
        return None
    if "\n" not in text.strip():
        return None
    try:
        ast.parse(textwrap.dedent(text))
    except SyntaxError:
        return None
    return textwrap.dedent(text)


def seam_breaches(code: str, name: str) -> list[str]:
    """``name:line what`` for each import of MLflow's client or its tracking package, and each ``.client`` or
    ``._client`` read off a store."""
    found: list[str] = []
    for node in ast.walk(ast.parse(code, filename=name)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(FORBIDDEN_MODULES):
                    found.append(f"{name}:{node.lineno} imports {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.startswith(FORBIDDEN_MODULES):
                found.append(f"{name}:{node.lineno} imports from {node.module}")
            elif node.module.split(".")[0] == "mlflow" and any(a.name == "MlflowClient" for a in node.names):
                found.append(f"{name}:{node.lineno} imports MlflowClient from {node.module}")
        elif (embedded := _embedded_code(node)) is not None:
            found += [
                f"{name}:{node.lineno} runs code that {hit.split(' ', 1)[1]}"
                for hit in seam_breaches(embedded, name)
            ]
        elif isinstance(node, ast.Attribute):
            if node.attr == "MlflowClient":
                found.append(f"{name}:{node.lineno} names {ast.unparse(node)}")
            elif node.attr in CLIENT_ATTRIBUTES and _store_like(node.value):
                found.append(f"{name}:{node.lineno} reads {ast.unparse(node)} off a tracking store")
    return found


def test_nothing_outside_the_seam_reaches_mlflows_client() -> None:
    sources = _project_sources()
    assert any(path.name == "registry_writes.py" for path in sources), "the scan found no project sources"
    assert all(not str(path.relative_to(ROOT)).startswith(SEAM) for path in sources)
    breaches = [hit for path in sources for hit in seam_breaches(_code_of(path), str(path.relative_to(ROOT)))]
    assert breaches == [], "use TrackingStore's methods instead:\n" + "\n".join(breaches)


@pytest.mark.parametrize(
    ("code", "line", "what"),
    [
        ("from mlflow import MlflowClient\n", 1, "imports MlflowClient from mlflow"),
        ("from mlflow.tracking import MlflowClient\n", 1, "imports from mlflow.tracking"),
        (
            "import mlflow.tracking._tracking_service.utils\n",
            1,
            "imports mlflow.tracking._tracking_service.utils",
        ),
        ("import mlflow\nc = mlflow.MlflowClient()\n", 2, "names mlflow.MlflowClient"),
        ("c = store.client\n", 1, "reads store.client off a tracking store"),
        ("x = 1\nc = self.store._client.get_run('1')\n", 2, "reads self.store._client off a tracking store"),
        (
            "c = TrackingStore.from_uri(uri).client\n",
            1,
            "reads TrackingStore.from_uri(uri).client off a tracking store",
        ),
        (
            'run(["python", "-c", f"""\nc = TrackingStore.from_uri({uri!r}).client\nc.get_run(1)\n"""])\n',
            1,
            "runs code that reads TrackingStore.from_uri(field).client off a tracking store",
        ),
    ],
)
def test_the_check_names_each_kind_of_breach(code: str, line: int, what: str) -> None:
    assert seam_breaches(code, "x.py") == [f"x.py:{line} {what}"]


@pytest.mark.parametrize(
    "code",
    [
        "import mlflow\nmlflow.log_metric('a', 1)\n",
        "from mlflow.exceptions import MlflowException\n",
        "s3 = boto3.client('s3')\nx = s3.client\n",
        "from kubernetes.client import ApiException\nimport http.client\n",
        "from mlops.tracking.rest_client import MlflowRestClient\n",
    ],
)
def test_the_check_leaves_other_clients_and_mlflows_fluent_api_alone(code: str) -> None:
    assert seam_breaches(code, "x.py") == []


def test_a_store_has_no_public_client_and_composes_its_two_halves(tmp_path: Path) -> None:
    store = TrackingStore(f"sqlite:///{tmp_path}/mlflow.db")
    assert not hasattr(store, "client")
    assert isinstance(store._runs, RunTracker) and store._runs is store._runs
    assert isinstance(store._registry, ModelRegistryStore) and store._registry is store._registry
    assert store._runs.store is store and store._registry.store is store
    assert "_client" not in store.__dict__  # building the halves opens nothing


def test_each_store_method_is_one_of_its_halves(tmp_path: Path) -> None:
    """The store adds no behaviour of its own beyond construction: every public method it delegates exists on
    exactly one half, with the same parameters, so the halves are where the work is."""
    own = {"for_task", "from_uri", "settings"}
    for name, method in inspect.getmembers(TrackingStore, inspect.isfunction):
        if name.startswith("_") or name in own:
            continue
        halves = [half for half in (RunTracker, ModelRegistryStore) if hasattr(half, name)]
        assert len(halves) == 1, (name, halves)
        wanted = list(inspect.signature(getattr(halves[0], name)).parameters)
        assert list(inspect.signature(method).parameters) == wanted, name


def test_both_clients_satisfy_the_registry_writer_protocol(tmp_path: Path) -> None:
    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    clients: list[Any] = [
        MlflowRestClient("http://127.0.0.1:1"),
        MlflowClient(tracking_uri=uri, registry_uri=uri),
    ]
    protocol = {
        name: inspect.signature(member)
        for name, member in vars(RegistryWriter).items()
        if inspect.isfunction(member) and not name.startswith("_")
    }
    assert set(protocol) == {
        "set_model_version_tag",
        "set_registered_model_tag",
        "set_registered_model_alias",
        "delete_registered_model_alias",
    }
    for client in clients:
        assert isinstance(client, RegistryWriter), type(client)
        for name, signature in protocol.items():
            arguments = {p: "x" for p in signature.parameters if p != "self"}
            inspect.signature(getattr(client, name)).bind(**arguments)  # MLflow's argument names, by keyword


def test_a_client_missing_a_write_is_not_a_registry_writer() -> None:
    class TagsOnly:
        def set_model_version_tag(self, name: str, version: str, key: str, value: str) -> None:
            pass

    assert not isinstance(TagsOnly(), RegistryWriter)


class _Recorder:
    """A REST client that records the registry writes a served store sends it (no server needed)."""

    def __init__(self, aliases: dict[str, str]) -> None:
        self.aliases = aliases
        self.calls: list[tuple[str, ...]] = []

    def alias_version(self, name: str, alias: str) -> str | None:
        return self.aliases.get(alias)

    def set_model_version_tag(self, name: str, version: str, key: str, value: str) -> None:
        self.calls.append(("version-tag", name, version, key))

    def set_registered_model_tag(self, name: str, key: str, value: str) -> None:
        self.calls.append(("model-tag", name, key))

    def set_registered_model_alias(self, name: str, alias: str, version: str) -> None:
        self.calls.append(("alias", name, alias, version))

    def delete_registered_model_alias(self, name: str, alias: str) -> None:
        self.calls.append(("delete-alias", name, alias))


def _served_with(recorder: _Recorder, tmp_path: Path) -> TrackingStore:
    store = TrackingStore(f"sqlite:///{tmp_path}/mlflow.db", served_url="http://127.0.0.1:1")
    store.__dict__["rest"] = recorder  # what the cached property would build, minus the server
    return store


@pytest.mark.parametrize("ending", ["promoted", "rolled_back"])
def test_a_rollouts_registry_writes_take_the_served_stores_rest_client(ending: str, tmp_path: Path) -> None:
    recorder = _Recorder({CHALLENGER: "2"})
    store = _served_with(recorder, tmp_path)

    getattr(RolloutRegistry(store, "m"), ending)("2", "why")

    tags = [call[3] for call in recorder.calls if call[0] == "version-tag"]
    expected = [ROLLOUT_STAGE_TAG, gate_tag(ROLLOUT_GATE, "decision"), gate_tag(ROLLOUT_GATE, "reason")]
    assert tags == expected + ([ROLLED_BACK_AT_TAG] if ending == "rolled_back" else [])
    assert recorder.calls[-1] == ("delete-alias", "m", CHALLENGER)
    assert "_client" not in store.__dict__  # MLflow's client was never built


def test_a_rollout_leaves_a_challenger_alias_that_moved_on(tmp_path: Path) -> None:
    recorder = _Recorder({CHALLENGER: "3"})  # a newer version took the alias meanwhile
    RolloutRegistry(_served_with(recorder, tmp_path), "m").promoted("2", "why")
    assert not [call for call in recorder.calls if call[0] == "delete-alias"]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TrackingStore, ServedStore]]:
    """A workspace-like store with versions 1 and 2 of ``rollout-model``, served for the module; its direct store."""
    tmp = tmp_path_factory.mktemp("served-seam")
    direct = TrackingStore(
        f"sqlite:///{tmp}/mlflow.db", "training", "direct-run", (tmp / "artifacts").as_uri()
    )
    direct.ensure_experiment()
    for _ in range(2):
        direct.create_version("rollout-model", "file:///dev/null", None, {})
    with serve_store(direct.tracking_uri, direct.artifact_root, tmp / "server.log", environ={}) as server:
        server.wait_until_healthy()
        yield direct, server


def test_a_rollout_on_a_served_store_writes_over_rest_and_reads_back_directly(
    served: tuple[TrackingStore, ServedStore],
) -> None:
    direct, server = served
    environ = {SERVED_AT_ENV: json.dumps({direct.tracking_uri: {"url": server.url, "log": str(server.log)}})}
    light = TrackingStore.for_task(direct.settings(), "served-run", environ=environ)
    assert light.rest is not None
    light.point_alias("rollout-model", CHALLENGER, "2")

    RolloutRegistry(light, "rollout-model").rolled_back("2", "error rate 0.2 over 0.05")

    assert "_client" not in light.__dict__  # every write went over REST
    version = direct.model_version("rollout-model", "2")
    assert version.tags[ROLLOUT_STAGE_TAG] == "rolled_back"
    assert version.tags[gate_tag(ROLLOUT_GATE, "decision")] == "reject"
    assert version.tags[gate_tag(ROLLOUT_GATE, "reason")] == "error rate 0.2 over 0.05"
    assert ROLLED_BACK_AT_TAG in version.tags
    assert CHALLENGER not in direct.registered_model("rollout-model").aliases


def test_the_run_summary_reads_a_version_through_the_runs_server_as_the_store_holds_it(
    served: tuple[TrackingStore, ServedStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    from cli.summaries.training import version_facts

    direct, server = served
    direct.tag_version("rollout-model", "1", {"mlops.summary_check": "yes: ü"})
    direct.point_alias("rollout-model", "summary-check", "1")
    stored = direct.model_version("rollout-model", "1")
    monkeypatch.setenv(SERVED_AT_ENV, json.dumps({direct.tracking_uri: {"url": server.url, "log": ""}}))

    def no_store(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the summary asked MLflow's client although the run's server answers")

    with monkeypatch.context() as patched:
        patched.setattr(ModelRegistryStore, "model_version", no_store)
        aliases, tags = version_facts(direct.tracking_uri, "rollout-model", "1")
    assert sorted(aliases) == sorted(stored.aliases) and "summary-check" in aliases
    assert tags == dict(stored.tags) and tags["mlops.summary_check"] == "yes: ü"
    monkeypatch.delenv(SERVED_AT_ENV)
    assert version_facts(direct.tracking_uri, "rollout-model", "1") == (
        list(stored.aliases),
        dict(stored.tags),
    )
