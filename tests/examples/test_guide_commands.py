"""Each framework guide (docs/frameworks/*.md), pasted into an empty folder as a reader does.

A guide builds its app block by block: every ```python block whose first line names a file
(``# app.py``, ``# views.py``) goes into that file, in the order of the page. The files are
written into an empty folder, and the guide's first ``console`` block after ``## Run it`` runs
there as a shell session, with only what is installed (the SDK and the framework; neither the
checkout nor its ``examples/`` is on ``sys.path``): the lines one by one, in one environment
(``export`` lines add to it). A line ending in ``&`` starts a server in the background, and the next
line runs once its port accepts connections. Two things differ from a reader's shell, and only
these: the fixed ports of the guide (8642 for the emulator, 5000, 8000, 8001 for the apps) are
replaced by free ones, so the test can run beside anything else on the machine (and the Celery
try-out's folder, ``/tmp/hermes-celery``, by one of the test's own); and the ``pip install`` line is
not run (the environment already has it), but what it names is checked: the SDK and the
frameworks the guide uses, from the index, not a checkout.

The same block also runs as a reader pastes it: one ``bash`` script (with the same two
differences), whose last line stops the servers it started; the test bounds it and then kills
whatever is left of its process group. The guide's test files (``# test_*.py``) then run with
pytest in the same folder.
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
#: What each guide's app must answer to the same order sent again with other notes.
CONFLICT = {"flask": " 409", "django": " 409", "wsgi": " 409", "celery": "FAILURE OrderChanged"}
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)
FILE_LINE = re.compile(r"# (?P<name>[\w/][\w./-]*\.py)\n")


def guide_files(guide: str) -> dict[str, str]:
    """The files a guide's blocks make: each block whose first line names a file, appended in order."""
    text = (ROOT / "docs" / "frameworks" / f"{guide}.md").read_text(encoding="utf-8")
    files: dict[str, str] = {}
    for block in PYTHON_BLOCK.findall(text):
        named = FILE_LINE.match(block)
        if named:
            name = named.group("name")
            files[name] = files.get(name, "") + ("\n\n" if name in files else "") + block
    return files


def write_guide(guide: str, folder: Path) -> Path:
    """The guide's files in an empty ``folder`` (made here), as a reader pastes them."""
    folder.mkdir()
    for name, code in guide_files(guide).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(code, encoding="utf-8")
    return folder


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


def _check_install(line: str, guide: str) -> None:
    """``python -m pip install hermes-sdk flask gunicorn``: from the index (no ``-e``, no file of a
    checkout), the SDK and each framework the guide uses."""
    words = shlex.split(line.split(" #", 1)[0])
    assert words[:4] == ["python", "-m", "pip", "install"], line
    assert not any(w.startswith("-") or "/" in w or w == "." for w in words[4:]), line
    assert "hermes-sdk" in words and set(FRAMEWORKS[guide]) <= set(words), line


STOP = "kill $(jobs -p)"  # a block's last line: the servers it started in the background


def _localized(line: str, ports: dict[int, int], tmp_path: Path) -> str:
    """The line with the guide's fixed ports and try-out folder replaced by the test's own."""
    for port, free in ports.items():
        line = re.sub(rf"(?<![\d.]){port}\b", str(free), line)
    return line.replace("/tmp/hermes-celery", str(tmp_path / "celery"))


def _environment(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("HERMES_", "CELERY_", "FLASK_", "DJANGO_")) and k != "PYTHONPATH"}
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    env.update(HERMES_SDK_PLUGINS="", XDG_STATE_HOME=str(tmp_path / "state"), PYTHONDONTWRITEBYTECODE="1")
    return env


def run_guide(guide: str, tmp_path: Path) -> list[str]:
    """Run the guide's commands in a folder of its files; returns each foreground command's stdout."""
    folder = write_guide(guide, tmp_path / "app")
    ports = {port: _free_port() for port in GUIDE_PORTS}
    env = _environment(tmp_path)
    background: list[subprocess.Popen[bytes]] = []
    outputs: list[str] = []
    try:
        for n, line in enumerate(commands(guide)):
            if "pip install" in line:
                _check_install(line, guide)
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
                    proc = subprocess.Popen(["bash", "-c", "exec " + started.group("command")], cwd=folder, env=env,
                                            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True)
                background.append(proc)
                listening = [free for free in ports.values() if re.search(rf"\b{free}\b", line)]
                if listening:
                    _wait_for_port(listening[0], proc, log)
                continue
            done = subprocess.run(["bash", "-c", line], cwd=folder, env=env, capture_output=True, text=True,
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


def _check_served(guide: str, text: str) -> None:
    assert "ECHO: " in text, text[-3000:]  # the emulator answered through the app
    assert CONFLICT[guide] in text, text[-3000:]  # the same order with other notes: refused, not run
    if guide != "celery":
        assert "event: done" in text  # the streamed answer ended cleanly


@pytest.mark.skipif(sys.platform == "win32", reason="the guides' commands are POSIX shell")
@pytest.mark.parametrize("guide", sorted(FRAMEWORKS))
def test_the_guide_runs_as_written(guide: str, tmp_path: Path) -> None:
    for module in FRAMEWORKS[guide]:
        require(module)
    outputs = run_guide(guide, tmp_path)
    _check_served(guide, "\n".join(outputs))


@pytest.mark.parametrize("guide", sorted(FRAMEWORKS))
def test_the_guides_tests_pass_in_its_folder(guide: str, tmp_path: Path) -> None:
    """The guide's test files, with pytest, beside its app: the emulator fixture is the installed SDK's."""
    for module in FRAMEWORKS[guide]:
        require(module)
    folder = write_guide(guide, tmp_path / "app")
    tests = sorted(name for name in guide_files(guide) if Path(name).name.startswith("test_"))
    assert tests, f"{guide}.md has no test file"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests], cwd=folder,
                          env=_environment(tmp_path), capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_only_the_installed_sdk_serves_the_guides(tmp_path: Path) -> None:
    """What the guides' processes import: the installed SDK, never the checkout's examples or tests."""
    probe = ("import sys, hermes_sdk, importlib.util as u; "
             "print(u.find_spec('examples_support'), u.find_spec('flask_app'), "
             "[p for p in sys.path if p.rstrip('/').endswith(('/examples', '/tests'))])")
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=_environment(tmp_path),
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["None", "None", "[]"], done.stdout + done.stderr
    for guide in FRAMEWORKS:
        text = (ROOT / "docs" / "frameworks" / f"{guide}.md").read_text(encoding="utf-8")
        unnamed = [b.splitlines()[0] for b in PYTHON_BLOCK.findall(text) if not FILE_LINE.match(b)]
        assert unnamed == [], f"{guide}.md: a python block that is no file of the app: {unnamed}"
        text = re.sub(r"<!--.*?-->", "", text)  # what the reader sees: the notes for the test are hidden
        assert "examples/" not in text and "-e ." not in text and "requirements/" not in text, guide


def run_block(guide: str, tmp_path: Path, bound: float = 300.0) -> str:
    """Run the guide's block as one pasted script in a folder of its files; returns its output."""
    folder = write_guide(guide, tmp_path / "app")
    ports = {port: _free_port() for port in GUIDE_PORTS}
    lines = commands(guide)
    assert lines[-1].startswith(STOP), f"{guide}.md: the block does not end by stopping its servers"
    script = ["set -e"]
    for line in lines:
        if "pip install" in line:
            _check_install(line, guide)  # installed already: the env is the one it would make
            continue
        script.append(_localized(line, ports, tmp_path))
    (tmp_path / "block.sh").write_text("\n".join(script) + "\n")
    log = tmp_path / "block.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(["bash", str(tmp_path / "block.sh")], cwd=folder, env=_environment(tmp_path),
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
    _check_served(guide, run_block(guide, tmp_path))
