"""The first call of a fresh process: import, client, one chat, each client in its own new interpreter.

What a CLI, a cron script or a freshly forked worker pays on every start. Each sample is one new
``python`` process timing itself from before its first import to after the chat's reply is parsed
(interpreter start-up, the same for every client, is left out); the figure is the median over
several processes, clients alternated so a busy spell of the machine hits them alike.

Every client runs from cached bytecode, as pip leaves an installed package: the processes share a
private ``PYTHONPYCACHEPREFIX`` that the warm-up run fills (``PYTHONDONTWRITEBYTECODE`` is lifted
for them). Without it a checkout on ``PYTHONPATH`` under ``PYTHONDONTWRITEBYTECODE=1`` (as CI sets)
compiles every SDK module from source in every sample while requests and openai load their
installed ``.pyc`` files: about 100 ms of the SDK's figure was the compiler.

Each sample also records CPU time, so that a busy machine (other processes taking the cores in
the middle of a sample) cannot decide a comparison: ``cpu_ms`` is the child's own CPU time (user +
system, every thread) over the same span as ``ms``, and ``process_cpu_ms`` is what
``resource.getrusage(RUSAGE_CHILDREN)`` charged the whole child, interpreter start-up included.
"""

from __future__ import annotations

import ast
import json
import os
import statistics
import subprocess
import sys
import tempfile
from typing import Any, Mapping

try:
    import resource
except ImportError:  # pragma: no cover - Windows: the child's own CPU figure only
    resource = None  # type: ignore[assignment]

_TIMER = "import time as _t; _t0 = _t.perf_counter(); _c0 = _t.process_time()\n"
_REPORT = "\nprint(repr(((_t.perf_counter() - _t0) * 1e3, (_t.process_time() - _c0) * 1e3)))\n"

SNIPPETS = {
    "requests": (
        "import requests\n"
        "s = requests.Session()\n"
        "r = s.post(BASE + '/v1/chat/completions', json={'model': 'hermes-agent', 'messages': "
        "[{'role': 'user', 'content': 'Hello'}]}, headers={'Authorization': 'Bearer ' + KEY}).json()\n"
        "assert r['choices']"),
    "openai": (
        "import openai\n"
        "c = openai.OpenAI(base_url=BASE + '/v1', api_key=KEY, max_retries=0)\n"
        "r = c.chat.completions.create(model='hermes-agent', messages=[{'role': 'user', 'content': 'Hello'}])\n"
        "assert r.choices"),
    "hermes_sdk.openai": (
        "from hermes_sdk.openai import OpenAI\n"
        "c = OpenAI(base_url=BASE + '/v1', api_key=KEY, max_retries=0)\n"
        "r = c.chat.completions.create(model='hermes-agent', messages=[{'role': 'user', 'content': 'Hello'}])\n"
        "assert r.choices"),
    # The same without loading the installed entry-point plugins: what the facade itself costs
    # (each installed plugin adds its own import to every client that loads entry points).
    "hermes_sdk.openai (load_entrypoints=False)": (
        "from hermes_sdk.openai import OpenAI\n"
        "c = OpenAI(base_url=BASE + '/v1', api_key=KEY, max_retries=0, load_entrypoints=False)\n"
        "r = c.chat.completions.create(model='hermes-agent', messages=[{'role': 'user', 'content': 'Hello'}])\n"
        "assert r.choices"),
    "hermes-sdk": (
        "from hermes_sdk import HermesClient\n"
        "c = HermesClient(BASE, KEY)\n"
        "r = c.chat(prompt='Hello')\n"
        "assert r.text is not None"),
}


def available(name: str, sdk_root: str = "") -> bool:
    if "openai" not in name:
        return True
    facade_missing = sdk_root and not os.path.isdir(os.path.join(sdk_root, "hermes_sdk", "openai"))
    if name.startswith("hermes_sdk.openai") and facade_missing:
        return False  # a checkout from before the facade (the baseline half of a run)
    try:
        import openai  # noqa: F401
    except ImportError:  # pragma: no cover
        return False
    return True


def environment(sdk_root: str, pycache: str) -> dict[str, str]:
    """The samples' environment: the SDK checkout first on the path, bytecode cached under ``pycache``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (sdk_root, os.environ.get("PYTHONPATH", "")) if p)
    env["PYTHONPYCACHEPREFIX"] = pycache
    return env


def _children_cpu_ms() -> float:
    if resource is None:  # pragma: no cover
        return float("nan")
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (used.ru_utime + used.ru_stime) * 1e3


def one(name: str, base: str, key: str, sdk_root: str, env: Mapping[str, str]) -> tuple[float, float, float]:
    """Wall and CPU milliseconds from the first import to the reply in a new interpreter, and the
    CPU milliseconds of that whole process (start-up included)."""
    code = f"BASE = {base!r}; KEY = {key!r}\n" + _TIMER + SNIPPETS[name] + _REPORT
    # cwd outside the repository: `python -c` puts the working directory first on sys.path.
    before = _children_cpu_ms()
    done = subprocess.run([sys.executable, "-c", code], env=dict(env), cwd=sdk_root, capture_output=True, text=True,
                          timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"first call ({name}) failed: {done.stderr[-1500:]}")
    process_cpu = _children_cpu_ms() - before
    wall, cpu = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    return float(wall), float(cpu), process_cpu


def bench_first_call(base: str, key: str, sdk_root: str, processes: int) -> dict[str, Any]:
    names = [n for n in SNIPPETS if available(n, sdk_root)]
    with tempfile.TemporaryDirectory(prefix="hermes-first-call-pyc-") as pycache:
        env = environment(sdk_root, pycache)
        for name in names:  # warm the OS file cache and write each module's bytecode once
            one(name, base, key, sdk_root, env)
        samples: dict[str, list[tuple[float, float, float]]] = {n: [] for n in names}
        for _ in range(processes):
            for name in names:
                samples[name].append(one(name, base, key, sdk_root, env))
    return {n: {"ms": statistics.median(w for w, _, _ in s), "cpu_ms": statistics.median(c for _, c, _ in s),
                "process_cpu_ms": statistics.median(p for _, _, p in s),
                "samples": [w for w, _, _ in s], "cpu_samples": [c for _, c, _ in s]} for n, s in samples.items()}


if __name__ == "__main__":  # pragma: no cover - a quick look: python -m benchmarks.first_call URL
    print(json.dumps(bench_first_call(sys.argv[1], "bench-key-0123456789",
                                      os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 5), indent=1))
