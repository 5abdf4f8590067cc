"""The emulator mirrors the SDK's families: one module per family under ``hermes_sdk/testing/families``,
each with its own routes and reset, no family importing another, and a server that names no route.

Imports are read with ``ast`` as ``test_architecture`` reads them (function-level imports count, and
here ``if TYPE_CHECKING`` blocks count too).
"""

from __future__ import annotations

import ast
import importlib.util
import textwrap
from pathlib import Path
from types import ModuleType

import pytest
import requests
from test_architecture import PACKAGE, imports, modules

from hermes_sdk.testing import HermesEmulator, families

TESTING = "hermes_sdk.testing"
FAMILY = f"{TESTING}.families."


def _graph(type_checking: bool) -> dict[str, set[str]]:
    known = modules()
    emulator = {m for m in known if m == TESTING or m.startswith(TESTING + ".")}
    return {m: imports(m, known[m], known, type_checking=type_checking) & emulator for m in emulator}


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_every_family_is_a_module_of_the_family_list() -> None:
    names = {m.__name__ for m in families.FAMILY_MODULES}
    on_disk = {f"{FAMILY}{p.stem}" for p in (PACKAGE / "testing" / "families").glob("*.py") if p.stem != "__init__"}
    assert names == on_disk
    assert {"chat", "responses", "runs", "sessions", "jobs", "discovery"} <= {n.rsplit(".", 1)[1] for n in names}


@pytest.mark.parametrize("type_checking", [False, True], ids=["runtime", "type_checking"])
def test_family_modules_never_import_each_other(type_checking: bool) -> None:
    graph = _graph(type_checking)
    crossing = {m: sorted(n for n in targets if n.startswith(FAMILY))
                for m, targets in graph.items() if m.startswith(FAMILY)}
    assert len(crossing) >= 6
    assert {m: t for m, t in crossing.items() if t} == {}


@pytest.mark.parametrize("type_checking", [False, True], ids=["runtime", "type_checking"])
def test_no_emulator_import_cycle_holds_a_family(type_checking: bool) -> None:
    """Before the split, chat, responses, runs, server, sessions and state were one cycle (8 modules
    with discovery and jobs counting ``TYPE_CHECKING``); a cycle with a family in it is a family that
    cannot be understood, or removed, alone."""
    with_family = [sorted(c) for c in _cycles(_graph(type_checking)) if any(m.startswith(FAMILY) for m in c)]
    assert with_family == []


def test_the_server_names_no_family_route() -> None:
    tree = ast.parse((PACKAGE / "testing" / "server.py").read_text())
    paths = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
             and n.value.startswith(("/v1", "/api", "/health"))]
    assert paths == []


MEMORY_FAMILY = '''
"""A throwaway family: GET /api/memory lists notes, POST /api/memory adds one."""

from __future__ import annotations

import json

from hermes_sdk.testing.routes import Route


def _notes(state):
    return state.slot("memory", list)


def _list(ex):
    ex.send_json(200, {"object": "list", "data": list(_notes(ex.state))})


def _add(ex):
    _notes(ex.state).append(json.loads(ex.raw_body)["note"])
    ex.send_json(201, {"stored": True})


def reset(state):
    _notes(state).clear()


ROUTES = (Route(("GET",), "/api/memory", _list), Route(("POST",), "/api/memory", _add))
'''


def _load(tmp_path: Path) -> ModuleType:
    source = tmp_path / "memory_family.py"
    source.write_text(textwrap.dedent(MEMORY_FAMILY))
    spec = importlib.util.spec_from_file_location("memory_family", source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_new_family_is_one_module_and_one_line_in_the_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No edit to the server, the state or the emulator: the module and its line in FAMILY_MODULES."""
    server_before = (PACKAGE / "testing" / "server.py").read_bytes()
    with HermesEmulator() as emu, requests.Session() as http:
        assert http.get(emu.base_url + "/api/memory", headers={"Authorization": "Bearer test-key"},
                        timeout=30).text == "404: Not Found"  # not a family yet
    monkeypatch.setattr(families, "FAMILY_MODULES", list(families.FAMILY_MODULES))  # restored after the test
    families.FAMILY_MODULES.append(_load(tmp_path))
    with HermesEmulator() as emu, requests.Session() as http:
        http.headers["Authorization"] = f"Bearer {emu.api_key}"
        url = emu.base_url + "/api/memory"
        assert http.post(url, json={"note": "tea at four"}, timeout=30).status_code == 201
        assert http.get(url, timeout=30).json() == {"object": "list", "data": ["tea at four"]}
        assert http.put(url, timeout=30).headers["Allow"] == "GET,POST"  # the router's 405, as aiohttp
        assert http.get(url, headers={"Authorization": "Bearer wrong"}, timeout=30).status_code == 401
        assert http.get(emu.base_url + "/v1/models", timeout=30).json()["data"][0]["id"] == "hermes-agent"
        emu.reset()  # the family's reset(state) runs with the others
        assert http.get(url, timeout=30).json()["data"] == []
    assert (PACKAGE / "testing" / "server.py").read_bytes() == server_before


def test_each_family_has_its_control_and_the_flat_members_reach_it() -> None:
    """``emulator.runs`` / ``.sessions`` / ``.jobs`` / ``.responses`` / ``.discovery`` hold each family's
    controls; the documented flat members (``run_status``, ``approval_timeout``, ``add_skill``, ...) are
    the same controls, and ``reset()`` restores what the constructor set."""
    with HermesEmulator(approval_timeout=7.0, jobs_tick_seconds=0, server_version="0.20.1") as emu:
        assert emu.control("runs") is emu.runs and emu.runs.approval_timeout == emu.approval_timeout == 7.0
        emu.runs.stop_latency = 0.5
        assert emu.stop_latency == 0.5
        emu.run_stream_ttl = 12
        assert emu.runs.stream_ttl == 12.0
        with requests.Session() as http:
            http.headers["Authorization"] = f"Bearer {emu.api_key}"
            run_id = http.post(emu.base_url + "/v1/runs", json={"input": "hello"}, timeout=30).json()["run_id"]
            assert emu.runs.wait(run_id, 30) == emu.run_status(run_id)
            assert emu.runs.ids() == emu.run_ids() == [run_id]
            assert [e["event"] for e in emu.runs.events(run_id)][-1] == "run.completed"
            session_id = http.post(emu.base_url + "/api/sessions", json={}, timeout=30).json()["session"]["id"]
            http.post(f"{emu.base_url}/api/sessions/{session_id}/chat", json={"message": "hi"}, timeout=30)
            assert session_id in emu.sessions.ids() and emu.sessions.ids() == emu.session_ids()
            assert emu.sessions.rows(session_id) == emu.session_rows(session_id) != []
            emu.discovery.add_skill("notes", "keeps notes")
            assert [s["name"] for s in http.get(emu.base_url + "/v1/skills", timeout=30).json()["data"]] == ["notes"]
        assert emu.skills == emu.discovery.skills
        assert emu.responses.store is emu.store and emu.jobs.tick() == emu.tick_jobs() == []
        emu.jobs.tick_seconds = 5
        assert emu.jobs_tick_seconds == 5.0
        emu.reset()
        assert (emu.runs.stop_latency, emu.runs.stream_ttl, emu.jobs.tick_seconds) == (0.2, 300.0, 0.0)
        assert emu.runs.ids() == [] and emu.sessions.ids() == [] and emu.discovery.skills == []
    with pytest.raises(LookupError):
        emu.control("memory")
