"""Helpers of the openai facade's tests (a module of its own: ``conftest`` is a name every test
directory has, so importing from it could pick another directory's)."""

from __future__ import annotations


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]
