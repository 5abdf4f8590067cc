"""The framework examples under examples/ run against the emulator, through each framework's own test
tooling. Flask, Django and Celery are dev dependencies (``tox -e examples``, or
``pip install -e . -r requirements/examples.txt``): without one, its tests skip, except under ``CI=true``,
where a missing framework fails the run instead of hiding it."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))


def require(module: str) -> ModuleType:
    """Import a framework, or skip the test module without it (fail under CI=true)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{module} is not installed; tests/examples needs it under CI "
                        f"(pip install -e . -r requirements/examples.txt)", pytrace=False)
        pytest.skip(f"{module} is not installed (pip install -e . -r requirements/examples.txt)",
                    allow_module_level=True)
        raise  # unreachable
