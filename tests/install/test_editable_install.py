"""The README's install leaves the package visible to type checkers and IDEs.

setuptools' default editable mode for a flat layout is an import-hook finder that mypy, pyright and
IDEs cannot follow; setup.cfg maps the root explicitly (``package_dir = =.``) so the editable
install is a plain path entry in a ``.pth`` file instead. This test does what a new user does: a
fresh venv, the README's ``python3 -m pip install -e .``, then ``mypy --strict`` on their own file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README_INSTALL = "python3 -m pip install -e ."

USER_FILE = '''\
from hermes_sdk import ChatCompletion, HermesClient
from hermes_sdk.testing import HermesEmulator


def summary(client: HermesClient) -> str:
    reply: ChatCompletion = client.chat(prompt="Summarize the incident notes.")
    reveal_type(reply.text)
    return reply.text or ""


def with_emulator(emulator: HermesEmulator) -> str:
    client = emulator.client(timeout=5)
    reveal_type(client)
    return summary(client)
'''


@pytest.fixture(scope="module")
def readme_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the README's editable install of a copy of this checkout: its python."""
    pytest.importorskip("mypy", reason="runs in the tox env 'install', which has mypy")
    assert README_INSTALL in (ROOT / "README.md").read_text(), "the README's install command changed"
    tmp_path = tmp_path_factory.mktemp("readme-install")
    # A copy of the checkout, as a fresh clone would be: the install writes nothing into this one.
    checkout = tmp_path / "hermes-sdk"
    shutil.copytree(ROOT, checkout, ignore=shutil.ignore_patterns(
        ".git", ".tox", ".venv*", "build", "dist", "*.egg-info", "__pycache__", ".live", "_build", ".mypy_cache"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_EDITABLE", "SETUPTOOLS_ENABLE"))}
    # The README's command, run with the fresh venv's python as `python3`.
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "-e", "."],
                   cwd=checkout, env=env, check=True, timeout=600)
    return python


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_readme_install_then_mypy_strict_sees_the_types(readme_venv: Path, tmp_path: Path) -> None:
    python = readme_venv
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    names = os.listdir(site)
    assert not [n for n in names if n.startswith("__editable__") and n.endswith("_finder.py")], names
    assert any(n.startswith("__editable__") and n.endswith(".pth") for n in names), names

    # The user's project: its own directory, so mypy can find hermes_sdk only through the venv.
    project = tmp_path / "app"
    project.mkdir()
    (project / "app.py").write_text(USER_FILE)
    out = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull,
                          "--python-executable", str(python), "app.py"],
                         cwd=project, capture_output=True, text=True, timeout=300)
    text = out.stdout + out.stderr
    assert 'Revealed type is "str | None"' in text or 'Revealed type is "Union[builtins.str, None]"' in text, text
    assert 'Revealed type is "hermes_sdk._app.client.HermesClient"' in text, text  # the emulator's client is typed
    assert "import-not-found" not in text and "error:" not in text, text
    assert out.returncode == 0, text

    # A misspelt resource is an error under --strict (no dynamic attributes), the right one is typed, and a
    # third-party family (public modules only) is reached through the typed accessor.
    shutil.copy(ROOT / "tests" / "core" / "toy_family.py", project / "toy_family.py")
    (project / "typo.py").write_text(TYPO_FILE)
    out = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull,
                          "--python-executable", str(python), "typo.py", "toy_family.py"],
                         cwd=project, capture_output=True, text=True, timeout=300)
    text = out.stdout + out.stderr
    errors = [line for line in text.splitlines() if ": error:" in line]
    assert len(errors) == 1 and 'typo.py:7: error: "HermesClient" has no attribute "sesions"' in errors[0], text
    assert 'Revealed type is "toy_family.Toy"' in text, text
    assert 'Revealed type is "builtins.list[hermes_sdk.types.HermesSession]"' in text or \
        "HermesSession" in text, text


TYPO_FILE = """\
from hermes_sdk import HermesClient
from toy_family import Toys


def f(client: HermesClient) -> None:
    reveal_type(client.sessions.list().data)
    client.sesions.list()
    reveal_type(client.resource(Toys).get("t1"))
"""



PROVIDER_FILE = """\
from typing import Optional

from hermes_sdk import ApprovalDecision, ApprovalProvider, ApprovalRequest, HermesClient, hookimpl
from hermes_sdk.plugin import CallView, Plugin


def allowlisted(request: ApprovalRequest) -> Optional[ApprovalDecision]:
    return request.approve(approver="retention-job", policy_decision_id="RET-1")


class Desk:
    def request_approval(self, request: ApprovalRequest) -> Optional[ApprovalDecision]:
        return None


class Tracer:
    @hookimpl
    def hermes_call_result(self, call: CallView, result: dict[str, object]) -> None:
        pass


def by_text(request: str) -> Optional[ApprovalDecision]:
    return None


def says_yes(request: ApprovalRequest) -> bool:
    return True


def build(plugins: list[Plugin], provider: ApprovalProvider) -> HermesClient:
    client = HermesClient("http://127.0.0.1:1", "k", approval_provider=allowlisted, plugins=[Tracer()])
    client.run("x", idempotency_key="k", approval_provider=Desk())
    client.runs.start("x", idempotency_key="k", approval_provider=lambda request: request.deny(approver="p"))
    client.chat_stream(prompt="x", approval_provider=provider)
    HermesClient(approval_provider=by_text)
    HermesClient(approval_provider=says_yes)
    return HermesClient(plugins=plugins)
"""


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_mypy_strict_takes_approval_providers_and_plugins_and_flags_a_wrong_provider(readme_venv: Path,
                                                                                    tmp_path: Path) -> None:
    """A user's provider function, provider object and plugin object type-check under ``mypy --strict``;
    a provider of another shape (taking a string, or answering a bool) is an error at the call."""
    (tmp_path / "approvals.py").write_text(PROVIDER_FILE)
    # The user's project sees hermes_sdk only through the README-installed venv (as the test above).
    out = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull,
                          "--python-executable", str(readme_venv), "approvals.py"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=500)
    text = out.stdout + out.stderr
    errors = [line for line in text.splitlines() if ": error:" in line]
    lines = PROVIDER_FILE.splitlines()
    wrong = {lines.index("    HermesClient(approval_provider=by_text)") + 1,
             lines.index("    HermesClient(approval_provider=says_yes)") + 1}
    assert {int(line.split(":")[1]) for line in errors} == wrong, text
    assert all('"approval_provider"' in line for line in errors), text
