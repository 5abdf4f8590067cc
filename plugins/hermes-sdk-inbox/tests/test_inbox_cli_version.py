"""``hermes-sdk-inbox --version`` prints the plugin's version, as ``hermes-sdk --version`` does (in-process)."""

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
