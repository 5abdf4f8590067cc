"""``import hermes_sdk`` never imports openai; without openai, ``import hermes_sdk.openai`` names
the extra to install. Runs with and without openai installed (subprocesses, fresh interpreters)."""

from __future__ import annotations

import subprocess
import sys


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_import_hermes_sdk_does_not_import_openai() -> None:
    done = _run("import sys, hermes_sdk\nhermes_sdk.HermesClient\nprint('openai' in sys.modules)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_without_openai_the_import_names_the_extra() -> None:
    # sys.modules["openai"] = None makes `import openai` fail as if it were not installed.
    done = _run(
        "import sys\nsys.modules['openai'] = None\n"
        "try:\n    import hermes_sdk.openai\nexcept ImportError as e:\n    print('IMPORTERROR', e.name, e)\n"
    )
    assert done.returncode == 0, done.stderr
    assert 'IMPORTERROR openai' in done.stdout and 'pip install "hermes-sdk[openai]"' in done.stdout
