"""The "Run it" commands of each framework guide (docs/frameworks/*.md), run as written.

Each guide's first ``console`` block after ``## Run it`` is a shell session: the lines are run one
by one from the repository root, in one environment (``export`` lines add to it). A line ending in
``&`` starts a server in the background, and the next line runs once its port accepts connections.
Two things differ from a reader's shell, and only these: the fixed ports of the guide (8642 for the
emulator, 5000, 8000, 8001 for the apps) are replaced by free ones, so the test can run beside
anything else on the machine (and the Celery try-out's folder, ``/tmp/hermes-celery``, by one of
the test's own); and the ``pip install`` line is not run (the environment already has
it), but what it names is checked: the extra exists and holds the frameworks the guide uses.

The same block also runs as a reader pastes it: one ``bash`` script from the repository root (with the
same two differences), whose last line stops the servers it started; the test bounds it and then
kills whatever is left of its process group.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from examples_support import require

ROOT = Path(__file__).resolve().parents[2]
GUIDE_PORTS = (8642, 5000, 8000, 8001)
FRAMEWORKS = {"flask": ["flask"], "django": ["django"], "celery": ["celery"], "wsgi": ["gunicorn"]}


def commands(guide: str) -> list[str]:
    text = (ROOT / "docs" / "frameworks" / f"{guide}.md").read_text(encoding="utf-8")
    section = text.split("\n## Run it\n", 1)[1]
    block = re.search(r"^```console\n(.*?)^```", section, re.M | re.S)
    assert block, f"{guide}.md: no console block under '## Run it'"
    return [line[2:] for line in block.group(1).splitlines() if line.startswith("$ ")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        assert proc.poll() is None, f"the server exited with {proc.returncode}:\n{log.read_text()[-3000:]}"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"nothing listens on {port} after {timeout} s:\n{log.read_text()[-3000:]}")


def _check_install(line: str) -> None:
    """``python -m pip install -e . -r requirements/examples.txt``: the file exists and names each framework."""
    files = re.findall(r"-r\s+(\S+\.txt)", line)
    assert files, line
    named = " ".join((ROOT / f).read_text() for f in files)
    for framework in ("flask", "django", "celery", "gunicorn"):
        assert re.search(rf"^\s*{framework}\b", named, re.M | re.I), f"{files} lack {framework}"


STOP = "kill $(jobs -p)"  # a block's last line: the servers it started in the background


def _localized(line: str, ports: dict[int, int], tmp_path: Path) -> str:
    """The line with the guide's fixed ports and try-out folder replaced by the test's own."""
    for port, free in ports.items():
        line = re.sub(rf"(?<![\d.]){port}\b", str(free), line)
    return line.replace("/tmp/hermes-celery", str(tmp_path / "celery"))


def _environment(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "CELERY_", "FLASK_"))}
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    env.update(HERMES_SDK_PLUGINS="", XDG_STATE_HOME=str(tmp_path / "state"), PYTHONDONTWRITEBYTECODE="1")
    return env


def run_guide(guide: str, tmp_path: Path) -> list[str]:
    """Run the guide's commands; returns each foreground command's stdout."""
    ports = {port: _free_port() for port in GUIDE_PORTS}
    env = _environment(tmp_path)
    background: list[subprocess.Popen[bytes]] = []
    outputs: list[str] = []
    try:
        for n, line in enumerate(commands(guide)):
            if "pip install" in line:
                _check_install(line)
                continue
            if line.startswith(STOP):
                continue  # the servers this runner started are stopped below
            line = _localized(line, ports, tmp_path)
            if line.startswith("export "):
                for word in shlex.split(line[len("export "):].split(" #", 1)[0]):
                    name, _, value = word.partition("=")
                    env[name] = os.path.expandvars(value)
                continue
            started = re.match(r"^(?P<command>.*?)\s*&\s*(#.*)?$", line)  # `server ... &  # comment`
            if started:
                log = tmp_path / f"server-{n}.log"
                with open(log, "wb") as out:
                    proc = subprocess.Popen(["bash", "-c", "exec " + started.group("command")], cwd=ROOT, env=env,
                                            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True)
                background.append(proc)
                listening = [free for free in ports.values() if re.search(rf"\b{free}\b", line)]
                if listening:
                    _wait_for_port(listening[0], proc, log)
                continue
            done = subprocess.run(["bash", "-c", line], cwd=ROOT, env=env, capture_output=True, text=True,
                                  timeout=120, stdin=subprocess.DEVNULL)
            assert done.returncode == 0, f"$ {line}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
            outputs.append(done.stdout)
    finally:
        for proc in reversed(background):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGINT)
                try:
                    proc.wait(15)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(15)
    return outputs


@pytest.mark.skipif(sys.platform == "win32", reason="the guides' commands are POSIX shell")
@pytest.mark.parametrize("guide", sorted(FRAMEWORKS))
def test_the_guide_runs_as_written(guide: str, tmp_path: Path) -> None:
    for module in FRAMEWORKS[guide]:
        require(module)
    outputs = run_guide(guide, tmp_path)
    text = "\n".join(outputs)
    assert "ECHO: " in text, text[-3000:]  # the emulator answered through the app
    if guide != "celery":
        assert "event: done" in text  # the streamed answer ended cleanly


def run_block(guide: str, tmp_path: Path, bound: float = 300.0) -> str:
    """Run the guide's block as one pasted script from the repository root; returns its output."""
    ports = {port: _free_port() for port in GUIDE_PORTS}
    lines = commands(guide)
    assert lines[-1].startswith(STOP), f"{guide}.md: the block does not end by stopping its servers"
    script = ["set -e"]
    for line in lines:
        if "pip install" in line:
            _check_install(line)  # installed already: the env is the one it would make
            continue
        script.append(_localized(line, ports, tmp_path))
    (tmp_path / "block.sh").write_text("\n".join(script) + "\n")
    log = tmp_path / "block.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(["bash", str(tmp_path / "block.sh")], cwd=ROOT, env=_environment(tmp_path),
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    try:
        code = proc.wait(bound)
    except subprocess.TimeoutExpired:
        code = None
    finally:
        try:  # whatever the block left running: its process group is the script's pid
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(15)
    text = log.read_text(errors="replace")
    assert code == 0, f"{guide}: the pasted block ended with {code} (None: running after {bound} s)\n{text[-4000:]}"
    return text


@pytest.mark.skipif(sys.platform == "win32", reason="the guides' commands are POSIX shell")
@pytest.mark.parametrize("guide", sorted(FRAMEWORKS))
def test_the_guide_runs_pasted_as_one_block(guide: str, tmp_path: Path) -> None:
    for module in FRAMEWORKS[guide]:
        require(module)
    text = run_block(guide, tmp_path)
    assert "ECHO: " in text, text[-3000:]
    if guide != "celery":
        assert "event: done" in text
