"""The same benchmark run on an earlier revision of ``hermes_sdk``, in this run, for a before/after table.

``python -m benchmarks --baseline REV`` extracts ``hermes_sdk/`` at REV (``git archive``) and runs this
harness in a subprocess with that copy first on ``sys.path``; both runs measure their own baselines
(raw ``requests``, ``http.client``), so each ratio is against a baseline measured beside it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import tempfile
from typing import Any, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: The revision before the call path was rebuilt as stages (issue 8).
DEFAULT_BASELINE = "56edb7a"


def run_at(rev: str, quick: bool) -> Optional[dict[str, Any]]:
    """Run the benchmark against ``hermes_sdk`` as of ``rev``; None if the revision is not available."""
    tmp = tempfile.mkdtemp(prefix="hermes-bench-base-")
    archive = os.path.join(tmp, "sdk.tar")
    try:
        subprocess.run(["git", "archive", "-o", archive, rev, "hermes_sdk"], cwd=ROOT, check=True,
                       capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    with tarfile.open(archive) as tar:
        tar.extractall(tmp)  # noqa: S202 - our own repository's archive
    out = os.path.join(tmp, "result.json")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([tmp, ROOT, os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-m", "benchmarks", "--json", out, "--no-baseline"] + (["--quick"] if quick else [])
    # Run from the extracted copy: `python -m` puts the working directory first on sys.path, and
    # from the repository root that is today's hermes_sdk, whatever PYTHONPATH says.
    # Output to files, not pipes: a crashed run's benchmark server (its grandchild) would hold a pipe
    # open and this process would wait on it forever. A bound on the whole run, for the same reason.
    log_path = os.path.join(tmp, "run.log")
    with open(log_path, "w") as log:
        try:
            done = subprocess.run(cmd, cwd=tmp, env=env, stdout=log, stderr=subprocess.STDOUT,
                                  timeout=1800 if not quick else 300)
        except subprocess.TimeoutExpired:
            sys.stderr.write(f"baseline run at {rev} did not finish\n")
            return None
    if done.returncode != 0 or not os.path.exists(out):
        with open(log_path) as log:
            sys.stderr.write(f"baseline run at {rev} failed:\n{log.read()[-2000:]}\n")
        return None
    with open(out) as fh:
        result: dict[str, Any] = json.load(fh)
    measured = os.path.realpath(str(result.get("hermes_sdk_path", "")))
    if not measured.startswith(os.path.realpath(tmp) + os.sep):
        sys.stderr.write(f"baseline run at {rev} measured {measured or 'an unknown hermes_sdk'}, not the "
                         f"extracted copy: no before/after table\n")
        return None
    return result


def _ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return None if a is None or b is None or not b else a / b


def key_ratios(res: dict[str, Any]) -> dict[str, Optional[float]]:
    """The ratios the call-path work is judged by, each against a baseline of the same run."""
    out: dict[str, Optional[float]] = {}
    for op in ("chat", "responses"):
        calls = res["calls"][op]
        sdk = calls["hermes-sdk"]["us_per_call"]
        out[f"{op}: sdk / requests (trust_env=False)"] = _ratio(
            sdk, calls.get("requests (trust_env=False)", {}).get("us_per_call"))
        out[f"{op}: sdk / requests (default session)"] = _ratio(sdk, calls["requests"]["us_per_call"])
        out[f"{op}: keyed sqlite / plain sdk"] = _ratio(
            calls.get("hermes-sdk + idempotency key (sqlite)", {}).get("us_per_call"), sdk)
    st = res["stream"]
    out["stream: sdk / http.client floor per event"] = _ratio(
        st["hermes-sdk"]["us_per_event"], st["http.client"]["us_per_event"])
    out.update(issue34_ratios(res))
    out.update(facade_ratios(res))
    th = res["threads"]["hermes-sdk"]
    out["threads: 4-thread / 1-thread calls/s"] = _ratio(th["4_thread_calls_per_s"], th["1_thread_calls_per_s"])
    return out


def issue34_ratios(res: dict[str, Any]) -> dict[str, Optional[float]]:
    """Where users call it (issue 34): a keyed chat, a plain chat against httpx, the default stream, the first call."""
    calls = res["calls"]["chat"]

    def us(name: str) -> Optional[float]:
        return calls.get(name, {}).get("us_per_call")
    first = res.get("first_call") or {}
    return {
        "keyed chat (memory) / requests (trust_env=False)": _ratio(us("hermes-sdk + idempotency key (memory)"),
                                                                    us("requests (trust_env=False)")),
        "keyed chat (sqlite) / requests (trust_env=False)": _ratio(us("hermes-sdk + idempotency key (sqlite)"),
                                                                    us("requests (trust_env=False)")),
        "chat: sdk / httpx": _ratio(us("hermes-sdk"), us("httpx")),
        "first call: sdk / requests": _ratio(first.get("hermes-sdk", {}).get("ms"),
                                             first.get("requests", {}).get("ms")),
    }


def facade_ratios(res: dict[str, Any]) -> dict[str, Optional[float]]:
    """The openai facade against plain openai (issue 39), wall and CPU; absent before the facade."""
    facade, out = "hermes_sdk.openai (facade)", {}
    for op in ("chat", "responses"):
        calls = res["calls"][op]
        if facade in calls and "openai" in calls:
            out[f"{op}: facade / openai"] = _ratio(calls[facade]["us_per_call"], calls["openai"]["us_per_call"])
            out[f"{op}, CPU: facade / openai"] = _ratio(calls[facade].get("cpu_us_per_call"),
                                                       calls["openai"].get("cpu_us_per_call"))
    first = res.get("first_call") or {}
    for name, label in (("hermes_sdk.openai", "first call: facade / openai"),
                        ("hermes_sdk.openai (load_entrypoints=False)", "first call, no entry points: facade / openai")):
        if name in first and "openai" in first:
            out[label] = _ratio(first[name]["ms"], first["openai"]["ms"])
            out[label.replace(":", ", CPU:", 1)] = _ratio(first[name].get("cpu_ms"), first["openai"].get("cpu_ms"))
    return out


def table(old: dict[str, Any], new: dict[str, Any], rev: str) -> str:
    """Old and new ratios side by side."""
    a, b = key_ratios(old), key_ratios(new)
    lines = [f"\nBefore ({rev}) and after, each ratio against baselines measured in its own half of this run",
             f"  {'ratio':<48}{'before':>9}{'after':>9}"]
    for name in b:
        x, y = a.get(name), b.get(name)
        lines.append(f"  {name:<48}{'n/a' if x is None else f'{x:.2f}x':>9}{'n/a' if y is None else f'{y:.2f}x':>9}")
    return "\n".join(lines)
