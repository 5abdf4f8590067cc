"""The SDK installs beside what a legacy application already pins, on Python 3.9.

pip resolves the project with ``constraints-lowest.txt`` (urllib3 1.26.20, requests 2.28.2,
attrs 21.4.0, cattrs 22.2.0) and the newest botocore (which holds urllib3 < 1.27 on Python < 3.10),
and picks exactly those pins and a current botocore, not one from years ago; then the installed SDK
talks to the emulator in that venv (chat, a stream, a stored response, a run).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONSTRAINTS = Path(__file__).with_name("constraints-lowest.txt")

SMOKE = '''
import json, sys
import botocore, requests, urllib3
from hermes_sdk import HermesClient
from hermes_sdk.testing import HermesEmulator

with HermesEmulator() as emu, HermesClient(base_url=emu.base_url, api_key=emu.api_key) as client:
    chat = client.chat(prompt="hello")
    streamed = client.chat_stream(prompt="stream").result()
    stored = client.responses({"input": "keep"}, idempotency_key="legacy-1")
    got = client.response_get(stored.id)
    run = client.run("count", idempotency_key="legacy-run").wait(timeout=60)
    print(json.dumps({"chat": chat.text, "stream": streamed.status, "stored": got.id == stored.id,
                      "run": run.status, "urllib3": urllib3.__version__, "requests": requests.__version__,
                      "botocore": botocore.__version__}))
'''


def _python39() -> Optional[str]:
    pyenv = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.9*/bin/python3.9")))
    candidates = [shutil.which("python3.9")] + pyenv
    for candidate in candidates:
        if candidate and subprocess.run([candidate, "-c", "import sys; assert sys.version_info[:2] == (3, 9)"],
                                        capture_output=True).returncode == 0:
            return candidate
    return None


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_pip_resolves_the_legacy_pins_and_the_newest_botocore_on_python_39(tmp_path: Path,
                                                                           pytestconfig: pytest.Config) -> None:
    # Two minutes of downloads: run where asked for (tox -e install runs `-m slow`), not in every
    # interpreter's full suite.
    if "slow" not in (pytestconfig.getoption("markexpr") or ""):
        pytest.skip("downloads from the package registry: runs with -m slow (tox -e install)")
    python39 = _python39()
    if python39 is None:
        pytest.skip("no Python 3.9 interpreter on this machine")
    venv = tmp_path / "venv"
    subprocess.run([python39, "-m", "venv", str(venv)], check=True, timeout=300)
    python = str(venv / "bin" / "python")
    out = subprocess.run([python, "-m", "pip", "install", "--disable-pip-version-check", "-c", str(CONSTRAINTS),
                          str(ROOT), "botocore"], capture_output=True, text=True, timeout=800)
    log = out.stdout + out.stderr
    assert out.returncode == 0, log[-4000:]
    assert "backtracking" not in log and "looking at multiple versions" not in log, log[-4000:]

    smoke = subprocess.run([python, "-c", SMOKE], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert smoke.returncode == 0, smoke.stderr[-4000:]
    seen = json.loads(smoke.stdout.strip().splitlines()[-1])
    pins = dict(line.split("==") for line in CONSTRAINTS.read_text().split() if "==" in line)
    assert seen["urllib3"] == pins["urllib3"] and seen["requests"] == pins["requests"], seen
    versions = {name: subprocess.run([python, "-c", f"import importlib.metadata as m; print(m.version({name!r}))"],
                                     capture_output=True, text=True, check=True).stdout.strip()
                for name in ("attrs", "cattrs")}
    assert versions == {"attrs": pins["attrs"], "cattrs": pins["cattrs"]}, versions
    # A botocore from 2024 on: pip did not walk back to a years-old one whose urllib3 range was wider.
    major, minor = (int(part) for part in seen["botocore"].split(".")[:2])
    assert (major, minor) >= (1, 34), seen
    assert seen["chat"] == "ECHO: hello" and seen["stream"] == "completed" and seen["stored"], seen
    assert seen["run"] == "completed", seen
    sys.stdout.write(f"resolved on Python 3.9: {seen}\n")
