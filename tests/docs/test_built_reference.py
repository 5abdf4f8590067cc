"""The built reference (objects.inv of the docs build) holds every public name of ``hermes_sdk.plugin``
and of each plugin package, linkable, and viewcode's "[docs]" links all land.

The docs tox env builds the site first and points ``HERMES_SDK_DOCS_HTML`` at it; elsewhere this
builds it (warnings are errors, as there) when Sphinx is installed, and skips otherwise.
"""

from __future__ import annotations

import html.parser
import importlib
import os
import re
import subprocess
import sys
import zlib
from pathlib import Path
from urllib.parse import urldefrag

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = ("hermes_sdk_redis", "hermes_sdk_sql", "hermes_sdk_inbox", "hermes_sdk_opentelemetry")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("HERMES_SDK_DOCS_HTML")
    if given:
        return Path(given)
    pytest.importorskip("sphinx", reason="the docs build needs Sphinx (tox -e docs)")
    out = tmp_path_factory.mktemp("html")
    done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                           "-d", str(out / ".doctrees"), str(ROOT / "docs"), str(out)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-6000:]
    return out


def inventory(html_dir: Path) -> dict[str, str]:
    """``objects.inv``: name -> the page and anchor it links to."""
    data = (html_dir / "objects.inv").read_bytes()
    body = zlib.decompress(data.split(b"\n", 4)[4]).decode("utf-8")
    found = {}
    for line in body.splitlines():
        match = re.match(r"(?x)(.+?)\s+(\S+:\S+)\s+(-?\d+)\s+(\S*)\s+(.*)", line)
        if match and match.group(2).startswith("py:"):
            name, uri = match.group(1), match.group(4)
            found[name] = uri.replace("$", name) if uri.endswith("$") else uri
    return found


def test_every_name_of_hermes_sdk_plugin_is_in_the_index(built: Path) -> None:
    plugin = importlib.import_module("hermes_sdk.plugin")
    names = inventory(built)
    missing = [n for n in plugin.__all__ if f"hermes_sdk.plugin.{n}" not in names]
    assert not missing, f"not in objects.inv (docs/reference/plugins.md): {missing}"


@pytest.mark.parametrize("package", PLUGINS)
def test_every_public_name_of_each_plugin_is_in_the_index(built: Path, package: str) -> None:
    module = importlib.import_module(package)
    names = inventory(built)
    assert f"{package}" in names, f"{package} has no reference page"
    missing = [n for n in module.__all__ if f"{package}.{n}" not in names]
    assert not missing, f"not in objects.inv (docs/reference/): {missing}"


class Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.hrefs: list[tuple[str, str]] = []  # (href, the link's text)
        self._href: "str | None" = None
        self._text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, "str | None"]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.add(values["id"] or "")
        if tag == "a" and values.get("href"):
            self._href, self._text = values["href"], ""

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self._text += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._href is not None:
            self.hrefs.append((self._href, self._text.strip()))
            self._href = None


def test_every_internal_link_lands(built: Path) -> None:
    """Every link between pages of the site (viewcode's "[docs]" links of the source pages, the
    reference's cross-references) points at a page and an anchor that exist."""
    pages = {p: Links() for p in built.rglob("*.html")}
    for path, parser in pages.items():
        parser.feed(path.read_text(encoding="utf-8"))
    broken = []
    for path, parser in pages.items():
        for href, text in parser.hrefs:
            if re.match(r"[a-z][a-z0-9+.-]*:", href) or href.startswith("//"):
                continue  # another site
            target, anchor = urldefrag(href)
            page = (path.parent / target).resolve() if target else path
            if page.suffix != ".html":
                continue
            if page not in pages:
                broken.append(f"{path.relative_to(built)}: {href} ({text}): no such page")
            elif anchor and anchor not in pages[page].ids:
                broken.append(f"{path.relative_to(built)}: {href} ({text}): no such anchor")
    assert not broken, f"{len(broken)} broken links:\n" + "\n".join(broken[:60])
