"""What a new built-in family costs (issue 31): one new package written against the public family API,
one registration line in ``hermes_sdk._app.builtin.FAMILIES``, and on the emulator's side one module
and one line in ``FAMILY_MODULES``. Nothing in the client, the kernel or the emulator's server changes.

The package is written to a temporary directory (a test must not write into the source tree) and
registered by the same one-line change the real edit would be.
"""

from __future__ import annotations

import hashlib
import importlib
import sys
import textwrap
from pathlib import Path

import pytest
from test_architecture import PACKAGE
from test_emulator_layout import _load as load_emulator_family

from hermes_sdk._app import builtin
from hermes_sdk.testing import HermesEmulator, families

PACKAGE_FILES = {
    "__init__.py": '''
        """A throwaway built-in family: notes kept by the server (GET and POST /api/memory)."""
        from hermes_sdk.plugin import Family

        from .operations import SPECS
        from .resource import Memory

        FAMILY: Family[Memory] = Family("memory", SPECS, Memory)
    ''',
    "types.py": '''
        import attrs

        @attrs.frozen
        class Notes:
            notes: tuple[str, ...]
    ''',
    "operations.py": '''
        import json

        import attrs
        from hermes_sdk.plugin import Contract, OperationSpec, RequestParts, invalid_input

        from .types import Notes

        def _contract(operation, method, read_only):
            return Contract(operation=operation, method=method, path="/api/memory", risk="low",
                            stability="experimental", requires_approval=False, key_requirement="optional",
                            key_ttl_ms=None, retry_safe=read_only, streaming=False,
                            side_effects=("read",) if read_only else ("write",),
                            data={"classification": "internal"}, expected_latency_ms=100, timeout_ms=10_000)

        def build_list(operation, data):
            return RequestParts({})

        def build_add(operation, data):
            note = data.get("note")
            if not isinstance(note, str) or not note:
                raise invalid_input("note", "'note' must be a non-empty string")
            return RequestParts({"Content-Type": "application/json"}, json.dumps({"note": note}).encode())

        def decode(data, ctx):
            return Notes(tuple(data.get("data", ()))) if "data" in data else Notes(())

        LIST = OperationSpec(_contract("memory_list", "GET", True), build_list, decode=decode)
        ADD = OperationSpec(_contract("memory_add", "POST", False), build_add, decode=decode)
        SPECS = (LIST, ADD)
    ''',
    "resource.py": '''
        from hermes_sdk.plugin import CallOptions, FamilyExecutor

        from .operations import ADD, LIST

        class Memory:
            def __init__(self, executor: FamilyExecutor) -> None:
                self._executor = executor

            def add(self, note, *, idempotency_key=None):
                return self._executor.request(ADD, {"note": note}, CallOptions(idempotency_key=idempotency_key))

            def list(self):
                return self._executor.request(LIST, {}, CallOptions())
    ''',
}


def _digest(paths: list[Path]) -> str:
    return hashlib.sha256(b"".join(p.read_bytes() for p in sorted(paths))).hexdigest()


def test_a_new_family_is_one_package_and_one_registration_line(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    untouched = [PACKAGE / "_app" / "client.py", PACKAGE / "testing" / "server.py",
                 *(PACKAGE / "_core").rglob("*.py")]
    before = _digest(untouched)
    package = tmp_path / "memory_family_pkg"
    package.mkdir()
    for name, text in PACKAGE_FILES.items():
        (package / name).write_text("from __future__ import annotations\n" + textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(tmp_path))
    memory = importlib.import_module("memory_family_pkg")
    try:
        # the one registration line, and the emulator's one line
        monkeypatch.setattr(builtin, "FAMILIES", (*builtin.FAMILIES, memory.FAMILY))
        monkeypatch.setattr(families, "FAMILY_MODULES", [*families.FAMILY_MODULES,
                                                         load_emulator_family(tmp_path)])
        with HermesEmulator() as emu, emu.client(load_entrypoints=False) as client:
            notes = client.resource(memory.Memory)
            assert notes is client.resource(memory.Memory)  # one per client, from the registry
            assert notes.add("tea at four", idempotency_key="note-1").notes == ()
            assert notes.list().notes == ("tea at four",)
            operations = [d["operation"] for d in client.capabilities()]
            assert operations[-2:] == ["memory_list", "memory_add"] and operations[:2] == ["chat", "chat_stream"]
            listed = client.invoke("cap:hermes_agent:default:memory_list", {})
            assert listed.status == "completed" and listed.output is not None, listed
    finally:
        for name in [m for m in sys.modules if m.startswith("memory_family_pkg")]:
            del sys.modules[name]
    assert _digest(untouched) == before  # neither the client, the kernel nor the emulator's server changed
