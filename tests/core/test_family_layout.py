"""The families' layout (issue 31): each built-in family is one package under ``hermes_sdk/_families``,
written against the public family API, and the kernel (``hermes_sdk/_core``) imports no family.

Imports are read with ``ast`` from the source, ``if TYPE_CHECKING`` blocks and function-level imports
included, plus any string naming a ``hermes_sdk._core`` module in a family (an ``import_module`` by name).
The two allowlists below are known exceptions with their reason: they may only shrink (an entry
no longer used fails too, so it is removed when its import goes).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Callable

import attrs
import pytest
from test_architecture import imports, modules

from hermes_sdk._app import builtin
from hermes_sdk._core.families import Registry
from hermes_sdk._core.operations.spec import OperationSpec
from hermes_sdk.errors import PluginError
from hermes_sdk.testing import HermesEmulator

FAMILIES = "hermes_sdk._families"
#: What a family module may import besides its own package (and the family it uses, FAMILY_USES).
PUBLIC_FAMILY_API = {"hermes_sdk.plugin", "hermes_sdk.errors", "hermes_sdk.hookspecs", "hermes_sdk.types",
                     f"{FAMILIES}._shared"}

#: Family module -> the private kernel modules it may import, and why. Empty since issue 40: a family
#: imports only the public family API (built-in families as a third party writes one); kept, and held
#: empty, so a new private import fails here with its name, not silently.
FAMILY_IMPORTS_OF_CORE: dict[str, dict[str, str]] = {}

#: Families that may import another family's package (besides the public API, _shared and their own).
FAMILY_USES = {f"{FAMILIES}.operator": {f"{FAMILIES}.runs": "the operator is a governed run: it starts, follows and "
                                                              "answers runs with the runs family's specs and Run"}}

#: The application layer (``hermes_sdk/_app``: the client, the CLI, the registration of the built-ins, the
#: deprecated paths) may name any family; the kernel (``hermes_sdk/_core``) none.
APP = "hermes_sdk._app"


def _family_of(module: str) -> str:
    return ".".join(module.split(".")[:3])


def _all_imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    found = imports(name, path, known, type_checking=True)
    for node in ast.walk(ast.parse(path.read_text())):  # an import by name is an import too
        if (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in known
                and node.value.startswith("hermes_sdk._")):  # a module path, not the logger's name
            found.add(node.value)
    return found - {name}


def test_the_import_walk_counts_type_checking_and_function_level_imports(tmp_path: Path) -> None:
    source = tmp_path / "probe.py"
    source.write_text(textwrap.dedent("""
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from hermes_sdk._core.executor import Executor
        def late():
            from hermes_sdk._core.transport import Transport
        NAMED = "hermes_sdk._core.redaction"
    """))
    known = modules()
    seen = _all_imports(f"{FAMILIES}.probe.probe", source, known)
    assert {"hermes_sdk._core.executor", "hermes_sdk._core.transport", "hermes_sdk._core.redaction"} <= seen


def test_a_family_imports_only_the_public_family_api_and_its_own_package() -> None:
    known = modules()
    family_modules = [m for m in known if m.startswith(FAMILIES + ".")]  # _shared too: it is held to the same rule
    assert f"{FAMILIES}.discovery" in family_modules
    unexpected, stale = [], [f"{m} is no module: remove it from the list" for m in FAMILY_IMPORTS_OF_CORE
                             if m not in known]
    for name in sorted(family_modules):
        allowed = FAMILY_IMPORTS_OF_CORE.get(name, {})
        found = _all_imports(name, known[name], known)
        for target in sorted(found):
            own = target == _family_of(name) or target.startswith(_family_of(name) + ".")
            used = _family_of(target) in FAMILY_USES.get(_family_of(name), {})
            if not own and not used and target not in PUBLIC_FAMILY_API and target not in allowed:
                unexpected.append(f"{name} imports {target}")
        stale += [f"{name} no longer imports {t}: remove it from the list" for t in allowed if t not in found]
    assert not unexpected, "\n".join(unexpected)
    assert not stale, "\n".join(stale)


def test_no_family_module_imports_the_kernel_privately() -> None:
    """Issue 40: the allowlist is empty, and a walk of every family module (module level, inside
    functions, under TYPE_CHECKING, by name) finds no ``hermes_sdk._core`` or ``hermes_sdk._app`` import."""
    assert FAMILY_IMPORTS_OF_CORE == {}
    known = modules()
    found = [f"{name} imports {target}" for name in sorted(m for m in known if m.startswith(FAMILIES + "."))
             for target in sorted(_all_imports(name, known[name], known))
             if target.startswith(("hermes_sdk._core", APP)) or target == "hermes_sdk"]
    assert not found, "\n".join(found)


def test_the_kernel_imports_no_family_and_nothing_of_the_application_layer() -> None:
    """Not even by name or for type checkers: the built-ins are loaded by name from ``hermes_sdk._app``
    (``config.BUILTIN_PLUGIN``), the way llm loads its default plugins."""
    known = modules()
    found = []
    for name in sorted(m for m in known if m.startswith("hermes_sdk._core")):
        found += [f"{name} imports {t}" for t in sorted(_all_imports(name, known[name], known))
                  if t.startswith((FAMILIES, APP))]
        text = known[name].read_text()
        found += [f"{name} names {m.group(0)}" for m in re.finditer(r"hermes_sdk\._families[\w.]*", text)]
    assert not found, "\n".join(found)


def test_the_discovery_operations_are_registered_from_the_discovery_package() -> None:
    import hermes_sdk._families.discovery as discovery

    registered = builtin.BUILTIN_SPECS
    names = ("health", "models", "server_capabilities", "toolsets", "health_detailed", "skills", "model_options")
    own: dict[str, OperationSpec[object]] = {s.name: s for s in discovery.FAMILY.specs + discovery.SERVER_FAMILY.specs}
    assert sorted(own) == sorted(names)
    for name in names:
        assert registered[name] is own[name], name
        assert own[name].build.__module__ == f"{FAMILIES}.discovery.operations", name
    assert builtin.DISCOVERY is discovery.FAMILY and builtin.SERVER is discovery.SERVER_FAMILY
    # capabilities() keeps the order published since 0.1: discovery after runs, the server facts after jobs
    order = [family.name for family in builtin.FAMILIES]
    assert order == ["chat", "responses", "runs", "discovery", "sessions", "jobs", "server", "operator"]


def test_the_jobs_operations_and_resource_come_from_the_jobs_package() -> None:
    import hermes_sdk._families.jobs as jobs
    from hermes_sdk import HermesClient

    registered = builtin.BUILTIN_SPECS
    own: dict[str, OperationSpec[object]] = {s.name: s for s in jobs.FAMILY.specs}
    assert sorted(own) == sorted(["jobs_list", "job_create", "job_get", "job_update", "job_delete", "job_pause",
                                  "job_resume", "job_run"])
    for name, spec in own.items():
        assert registered[name] is spec, name
        assert spec.build.__module__ == f"{FAMILIES}.jobs.operations", name
    assert builtin.JOBS.specs == jobs.FAMILY.specs and builtin.JOBS.resource is jobs.Jobs
    assert builtin.JOBS.commands == "hermes_sdk._app._cli_families:add_jobs_commands"
    with HermesClient("http://127.0.0.1:9", "k", load_entrypoints=False) as client:
        assert isinstance(client.jobs, jobs.Jobs)
        assert client.resource(jobs.Jobs) is client.jobs is client.jobs  # one resource, from the registry
        assert client.with_options(timeout=3).jobs is not client.jobs  # a copy has its own


def test_the_sessions_operations_and_resource_come_from_the_sessions_package() -> None:
    import hermes_sdk._families.sessions as sessions
    from hermes_sdk import HermesClient

    registered = builtin.BUILTIN_SPECS
    assert {s.name for s in sessions.FAMILY.specs} == {n for n in registered if n.startswith("session")}
    for spec in sessions.FAMILY.specs:
        assert registered[spec.name] is spec, spec.name
        assert spec.build.__module__ == f"{FAMILIES}.sessions.operations", spec.name
    assert builtin.SESSIONS.specs == sessions.FAMILY.specs and builtin.SESSIONS.resource is sessions.Sessions
    assert builtin.SESSIONS.commands == "hermes_sdk._app._cli_families:add_sessions_commands"
    with HermesClient("http://127.0.0.1:9", "k", load_entrypoints=False) as client:
        assert isinstance(client.sessions, sessions.Sessions)
        assert client.resource(sessions.Sessions) is client.sessions is client.sessions


def test_the_chat_and_responses_operations_and_resources_come_from_their_packages() -> None:
    import hermes_sdk._families.chat as chat
    import hermes_sdk._families.responses as responses
    from hermes_sdk import HermesClient

    registered = builtin.BUILTIN_SPECS
    for family, names in ((chat, ("chat", "chat_stream")),
                          (responses, ("responses", "responses_stream", "response_get", "response_delete"))):
        own = {s.name: s for s in family.FAMILY.specs}
        assert tuple(own) == names
        for name, spec in own.items():
            assert registered[name] is spec, name
            assert spec.build.__module__ == f"{family.__name__}.operations", name
    assert builtin.CHAT is chat.FAMILY and builtin.RESPONSES is responses.FAMILY
    # the seed page's six come first in capabilities(), in its order, as published since 0.1
    six = ["chat", "chat_stream", "responses", "responses_stream", "response_get", "response_delete"]
    assert list(registered)[:6] == six
    with HermesClient("http://127.0.0.1:9", "k", load_entrypoints=False) as client:
        assert [d["operation"] for d in client.capabilities()][:6] == six
        assert isinstance(client.resource(chat.Chat), chat.Chat)
        assert client.resource(chat.Chat) is client.resource(chat.Chat)  # one resource, from the registry
        assert client.with_options(timeout=3).resource(responses.Responses) is not client.resource(responses.Responses)


def test_the_flat_methods_delegate_to_the_resources(hermes_emulator: HermesEmulator,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes_sdk._families.chat import Chat
    from hermes_sdk._families.responses import Responses

    calls: list[str] = []

    def spied(cls: type, name: str) -> Callable[..., object]:
        real = getattr(cls, name)

        def method(self: object, *args: object, **kwargs: object) -> object:
            calls.append(f"{cls.__name__}.{name}")
            return real(self, *args, **kwargs)
        return method

    for cls, names in ((Chat, ("create", "stream")), (Responses, ("create", "stream", "get", "delete"))):
        for name in names:
            monkeypatch.setattr(cls, name, spied(cls, name))
    with hermes_emulator.client(load_entrypoints=False) as client:
        assert client.chat(prompt="hi").text
        assert client.chat_stream(prompt="hi").result().status == "completed"
        created = client.responses(input="keep")
        assert client.responses_stream(input="hi").result().status == "completed"
        assert client.response_get(created.id).id == created.id
        request = client.approval_request("response_delete", {"response_id": created.id}, reason="cleanup")
        decision = request.approve(approver="test", policy_decision_id="p")
        assert client.response_delete(created.id, idempotency_key="k-del", approval=decision, reason="cleanup").deleted
    assert calls == ["Chat.create", "Chat.stream", "Responses.create", "Responses.stream", "Responses.get",
                     "Responses.delete"]


#: Application-layer modules of ``hermes_sdk/_core`` (the client, the CLI, the registration of the built-ins,
#: the deprecated paths): they may name a family; the kernel may not.
#: Kernel modules that still name a family's route or state, and why.
KERNEL_NAMES_OF_FAMILIES = {
    "hermes_sdk._core.redaction": "the generic redaction rule scrubs ids after any registered route; its docstring "
                                  "shows one (/api/sessions/{session_id}/chat) as the example",
    "hermes_sdk._core.server_features": "ServerFeatures (public at the top) reads /v1/capabilities, whose flags "
                                        "run_steer and runs_idempotency describe /v1/runs routes",
}
#: A module with one of these names is a family's, wherever it sits (before the moves, ``_core.runs``).
FAMILY_MODULE_NAMES = {"runs", "run_answers", "stream_approvals", "operator", "sessions", "jobs", "discovery"}
FAMILY_NAMES = re.compile(r"stopped_runs|followed_runs|/v1/runs|/api/sessions")


def _sccs(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def _graph() -> dict[str, set[str]]:
    known = modules()
    names = {m for m in known if not m.startswith("hermes_sdk.testing")}
    return {m: imports(m, known[m], known, type_checking=True) & names for m in names}


def test_the_cycle_finder_finds_a_cycle_through_type_checking_imports() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _sccs(graph) == [{"a", "b", "c"}]


def test_no_import_cycle_holds_both_a_kernel_and_a_family_module() -> None:
    """Counting TYPE_CHECKING and function-level imports: the kernel may have its own type-level cycle, a
    family its own, but none joins the two (before the runs move, one of 21 modules held the runs family)."""
    mixed = []
    for component in _sccs(_graph()):
        kernel = sorted(m for m in component if m.startswith("hermes_sdk._core"))
        family = sorted(m for m in component if m.startswith(FAMILIES) or m.split(".")[-1] in FAMILY_MODULE_NAMES)
        if kernel and family:
            mixed.append(f"{len(component)} modules: kernel {kernel}, families {family}")
    assert not mixed, "\n".join(mixed)


def test_the_kernel_names_no_family_route_or_state() -> None:
    known = modules()
    found, stale = [], []
    for name in sorted(m for m in known if m.startswith("hermes_sdk._core")):
        hits = FAMILY_NAMES.findall(known[name].read_text())
        if hits and name not in KERNEL_NAMES_OF_FAMILIES:
            found.append(f"{name}: {sorted(set(hits))}")
        if not hits and name in KERNEL_NAMES_OF_FAMILIES:
            stale.append(f"{name} names no family any more: remove it from the list")
    assert not found, "\n".join(found)
    assert not stale, "\n".join(stale)


def test_the_runs_and_operator_families_are_packages_with_the_run_state() -> None:
    import hermes_sdk._families.operator as operator
    import hermes_sdk._families.runs as runs
    from hermes_sdk import HermesClient
    from hermes_sdk._core.runtime import Runtime

    assert builtin.RUNS is runs.FAMILY and builtin.OPERATOR is operator.FAMILY
    assert runs.FAMILY.state is runs.RunsState
    assert {spec.build.__module__ for spec in runs.FAMILY.specs} == {f"{FAMILIES}.runs.operations"}
    assert {spec.build.__module__ for spec in operator.FAMILY.specs} == {f"{FAMILIES}.operator.operations"}
    assert not {"stopped_runs", "followed_runs"} & {field.name for field in attrs.fields(Runtime)}
    with HermesClient("http://127.0.0.1:9", "k", load_entrypoints=False) as client:
        assert isinstance(client.runs, runs.Runs)
        assert client.resource(runs.Runs) is client.runs is client.runs  # one resource, from the registry
        state = client._executor.state(runs.RunsState)
        client.runs.mark_stopped("run_x")
        assert "run_x" in state.stopped and client.with_options(timeout=3).runs.stopped("run_x")


def test_each_builtin_family_declares_what_it_registers_and_loads_on_first_use() -> None:
    """The declared operations, paths and resource of each lazily registered family are what it
    registers (load() refuses a difference); a client's registry lists them before importing any."""
    from hermes_sdk.plugin import LazyFamily

    for lazy in builtin.FAMILIES:
        family = lazy.load()
        assert tuple(s.name for s in family.specs) == lazy.operations
        assert sorted({s.contract.path for s in family.specs}) == sorted(lazy.paths), lazy.name
    registry = Registry(builtin.FAMILIES)
    assert list(registry.operations) == list(builtin.BUILTIN_SPECS)
    assert registry._loaded == {}  # listed, routed, nothing imported
    wrong = LazyFamily("chat", "hermes_sdk._families.chat:FAMILY", ("chat",), ("/v1/chat/completions",))
    with pytest.raises(PluginError, match="not the declared"):
        Registry([wrong]).spec("chat")


FIRST_CHAT = """
import sys
from hermes_sdk import HermesClient
with HermesClient(sys.argv[1], sys.argv[2], load_entrypoints=False) as client:
    before = {m for m in sys.modules if m.startswith("hermes_sdk._families.")}
    client.chat(prompt="hi")
    converter = "cattrs" in sys.modules or "hermes_sdk._core.cattrs_converter" in sys.modules
    client.health()
    after = sorted(m for m in sys.modules if m.startswith("hermes_sdk._families.") and m not in before)
print(sorted(before)); print(after); print(converter)
"""


def test_a_first_chat_imports_the_chat_family_and_no_other(hermes_emulator: HermesEmulator) -> None:
    """What a CLI, a cron script or a forked worker pays on its first call (issue 34): the client
    is built without importing a family's operations, a chat loads only the chat family's, and its
    reply is read without cattrs (imported, with the converter, by the first call that needs it)."""

    out = subprocess.run([sys.executable, "-c", FIRST_CHAT, hermes_emulator.base_url, hermes_emulator.api_key],
                         capture_output=True, text=True, timeout=120, check=True)
    before, after, converter = (ast.literal_eval(line) for line in out.stdout.splitlines()[-3:])
    assert converter is False
    loaded = {m.split(".")[2] for m in before if m.count(".") >= 2}
    assert not any(m.endswith(".operations") for m in before), before
    assert not {"runs", "sessions", "jobs", "responses"} & loaded, before
    touched = {m.split(".")[2] for m in after}
    assert touched <= {"chat", "discovery"}, after
    assert f"{FAMILIES}.chat.operations" in after and f"{FAMILIES}.discovery.operations" in after


def test_threads_that_first_use_a_family_at_once_load_it_once() -> None:
    """A client shared by threads: the first calls race to load a family; each sees one family,
    one spec object and one state, and nobody sees a half-registered family."""
    from hermes_sdk._families.runs.resource import Runs
    from hermes_sdk._families.runs.state import RunsState

    for _ in range(5):
        _race_first_use(Registry(builtin.FAMILIES), Runs, RunsState)


def _race_first_use(registry: Registry, runs: type, state: type) -> None:
    import threading

    seen: list[tuple[object, object, object, object]] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(12)

    def use() -> None:
        try:
            barrier.wait(10)
            seen.append((registry.spec("run_start"), registry.state_of("run_get"), registry.family_of(runs),
                         registry.state(state)))
        except BaseException as exc:  # noqa: BLE001  (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=use) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors
    assert len(seen) == 12 and len({id(s[0]) for s in seen}) == 1
    assert all(s[1] is seen[0][1] is s[3] for s in seen) and isinstance(seen[0][1], state)
    assert len({id(s[2]) for s in seen}) == 1
