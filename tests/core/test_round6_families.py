"""Issue 38 (round 6), families that load on first use: concurrent first calls, forks mid-load,
broken plugin families, what a plugin family's resource holds, per-client routes, blame by
identity, and the built-in families plugin is no outsider.

The first-call and fork tests run in fresh processes (``sys.executable``, the installed SDK): a
family already imported by this pytest process would load nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_sdk.testing import HermesEmulator

ROUNDS = 20
THREADS = 32

# --------------------------------------------------------------------------- item 5: concurrent first calls

FIRST_CALLS = r'''
import json, os, sys, threading
import hermes_sdk
from hermes_sdk import HermesClient

base, key, mode = sys.argv[1], sys.argv[2], sys.argv[3]
CAP = "cap:hermes_agent:default:"
shared = HermesClient(base, key, load_entrypoints=False) if mode == "one" else None


def first_calls(c):
    tag = f"{os.getpid()}-{threading.get_ident()}"
    return [
        lambda: c.chat(prompt="hi"),
        lambda: c.runs.get("run_0000000000"),
        lambda: c.sessions.list(),
        lambda: c.jobs.list(),
        lambda: c.health(),
        lambda: c.responses({"input": "hi"}),
        lambda: c.health_detailed(),
        lambda: c.operate("say hi", idempotency_key="o" + tag),
        lambda: c.run("hi", idempotency_key="r" + tag),
        lambda: c.chat_stream(prompt="hi").result(),
        lambda: c.responses_stream({"input": "hi"}).result(),
        lambda: c.invoke(CAP + "operator", {"objective": "x"}),
        lambda: c.invoke(CAP + "run_get", {"run_id": "run_0000000000"}),
        lambda: c.invoke(CAP + "session_get", {"session_id": "s1"}),
        lambda: c.invoke(CAP + "jobs_list", {}),
        lambda: c.capabilities(),
    ]


barrier = threading.Barrier(int(sys.argv[4]))
errors = []


def work(i):
    c = shared or HermesClient(base, key, load_entrypoints=False)
    calls = first_calls(c)
    call = calls[i % len(calls)]
    barrier.wait()
    try:
        call()
    except hermes_sdk.HermesError:
        pass  # a typed answer (a 404 for the made-up run, an approval the operator needs): not lost
    except BaseException as exc:
        errors.append(f"{type(exc).__module__}.{type(exc).__name__}: {exc}")


threads = [threading.Thread(target=work, args=(i,)) for i in range(int(sys.argv[4]))]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps(errors))
'''


@pytest.mark.parametrize("mode", ["one", "per-thread"])
def test_32_first_calls_on_different_families_in_a_fresh_process_raise_nothing_untyped(
        hermes_emulator: HermesEmulator, mode: str) -> None:
    errors: list[str] = []
    for _ in range(ROUNDS):
        done = subprocess.run([sys.executable, "-c", FIRST_CALLS, hermes_emulator.base_url, hermes_emulator.api_key,
                               mode, str(THREADS)], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        errors += json.loads(done.stdout.strip().splitlines()[-1])
    assert errors == [], errors[:5]


# --------------------------------------------------------------------------- item 6: a fork mid-load

#: A plugin family whose import, in the process that first loads it, says so and then waits for
#: the test's word: a parent thread is held mid-load for as long as the test needs.
GATE = '''
import threading
PARENT = None
loading = threading.Event()
go = threading.Event()
'''

SLOW_FAMILY = '''
import os

import {gate}
from hermes_sdk.plugin import CallOptions, Contract, Family, OperationSpec, RequestParts

if os.getpid() == {gate}.PARENT:  # only the process whose thread is to be caught mid-load waits
    {gate}.loading.set()
    {gate}.go.wait()

SLOW = OperationSpec(
    Contract(operation="{op}", method="GET", path="/health", risk="low", stability="experimental",
             requires_approval=False, key_requirement="optional", key_ttl_ms=None, retry_safe=True,
             streaming=False, side_effects=("read",), data={{"classification": "internal"}},
             expected_latency_ms=100, timeout_ms=5_000),
    lambda operation, data: RequestParts({{}}), decode=lambda data, ctx: str(data["status"]))


class Slow:
    def __init__(self, executor):
        self._executor = executor

    def status(self, timeout=None):
        return self._executor.request(SLOW, {{}}, CallOptions(timeout=timeout))


FAMILY = Family("{op}", (SLOW,), Slow)
'''


def write_slow_family(where: Path, name: str) -> None:
    (where / f"{name}_gate.py").write_text(GATE)
    (where / f"{name}.py").write_text(SLOW_FAMILY.format(gate=f"{name}_gate", op=name))


PLUGIN = '''
from hermes_sdk.plugin import LazyFamily, hookimpl


class SlowPlugin:
    name = "slow-plugin"

    def __init__(self, module):
        self.module = module

    @hookimpl
    def hermes_families(self, client):
        return (LazyFamily(self.module, self.module + ":FAMILY", (self.module,), ("/health",),
                           resource=self.module + ":Slow"),)
'''

FORK_MID_LOAD = PLUGIN + r'''
import json, os, signal, sys, threading, time
sys.path.insert(0, sys.argv[3])
import slowfam_gate as gate
from hermes_sdk import HermesClient

CHILDREN = int(sys.argv[4])
gate.PARENT = os.getpid()
client = HermesClient(sys.argv[1], sys.argv[2], load_entrypoints=False, plugins=[SlowPlugin("slowfam")])
CAP = "cap:hermes_agent:default:slowfam"
loader = threading.Thread(target=lambda: client.invoke(CAP, {}))
loader.start()
assert gate.loading.wait(60), "the loader never started importing"

pids = []
for _ in range(CHILDREN):
    pid = os.fork()
    if pid == 0:  # the child: its first call of the family its parent was loading, within timeout=2
        code = 1
        try:
            result = client.invoke(CAP, {}, timeout=2)
            code = 0 if result.status == "completed" and result.output["status"] == "ok" else 2
        finally:
            os._exit(code)
    pids.append(pid)
gate.go.set()
loader.join()

codes, until = {}, time.monotonic() + 120  # a hang guard only: the verdict is each child's exit status
while len(codes) < len(pids) and time.monotonic() < until:
    for pid in pids:
        if pid not in codes:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                codes[pid] = os.waitstatus_to_exitcode(status)
    time.sleep(0.01)
for pid in pids:
    if pid not in codes:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        codes[pid] = "hung"
print(json.dumps(sorted(codes.values(), key=str)))
'''


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_children_forked_while_a_parent_thread_loads_a_family_make_their_first_call(
        hermes_emulator: HermesEmulator, tmp_path: Path) -> None:
    write_slow_family(tmp_path, "slowfam")
    done = subprocess.run([sys.executable, "-W", "ignore::DeprecationWarning", "-c", FORK_MID_LOAD,
                           hermes_emulator.base_url, hermes_emulator.api_key, str(tmp_path), str(ROUNDS)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [0] * ROUNDS, done.stderr[-2000:]


def test_a_call_waiting_for_another_threads_load_ends_at_its_deadline(
        hermes_emulator: HermesEmulator, tmp_path: Path) -> None:
    import importlib
    import threading

    from hermes_sdk import DeadlineExceededError

    name = "slowfam_wait"
    write_slow_family(tmp_path, name)
    sys.path.insert(0, str(tmp_path))
    try:
        gate = importlib.import_module(f"{name}_gate")
        gate.PARENT = os.getpid()
        namespace: dict[str, object] = {}
        exec(PLUGIN, namespace)
        plugin = namespace["SlowPlugin"](name)  # type: ignore[operator]
        with hermes_emulator.client(load_entrypoints=False, plugins=[plugin]) as client:
            cap = f"cap:hermes_agent:default:{name}"
            loader = threading.Thread(target=lambda: client.invoke(cap, {}))
            loader.start()
            assert gate.loading.wait(60)
            try:  # the loader is held mid-import until go is set: this call can only end at its deadline
                waited = client.invoke(cap, {}, timeout=0.2)
            finally:
                gate.go.set()
                loader.join(60)
            assert waited.status == "failed"
            assert isinstance(waited.error, DeadlineExceededError)
            assert waited.error.details["sent"] is False
            assert client.invoke(cap, {}).status == "completed"  # loaded by the other thread meanwhile
    finally:
        sys.path.remove(str(tmp_path))
        for module in (name, f"{name}_gate"):
            sys.modules.pop(module, None)
