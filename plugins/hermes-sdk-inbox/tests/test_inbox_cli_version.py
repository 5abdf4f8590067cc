"""``hermes-sdk-inbox --version`` prints the plugin's version, as ``hermes-sdk --version`` does, and a
subcommand's usage error shows that subcommand's usage (in-process)."""

from __future__ import annotations

import pytest
from hermes_sdk_inbox import __version__
from hermes_sdk_inbox.cli import main


def test_version_prints_the_plugins_version_and_exits_0(capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HERMES_SDK_INBOX_STORE", raising=False)  # no store needed to ask the version
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"hermes-sdk-inbox {__version__}\n"


def test_a_subcommands_usage_error_shows_its_own_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--store", "memory:", "list", "--bogus"])
    err = capsys.readouterr().err
    assert done.value.code == 2 and err.startswith("usage: hermes-sdk-inbox list ") and "--bogus" in err
