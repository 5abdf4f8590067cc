"""The ten release files carry what a careful maintainer ships (``tox -e release`` builds them first).

``HERMES_SDK_DIST`` names the directory ``tools/release.py`` built them into; without it (a plain
test run) the built-file tests skip and only the source checks run.
"""

from __future__ import annotations

import email.message
import email.parser
import os
import re
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROJECTS = {"hermes-sdk": ROOT, **{p.name: p for p in sorted((ROOT / "plugins").glob("hermes-sdk-*"))}}
PLUGINS = [name for name in PROJECTS if name != "hermes-sdk"]
PYTHONS = ["3.9", "3.10", "3.11", "3.12", "3.13"]
# [text](target) with no scheme: a link a package index cannot follow.
RELATIVE_LINK = re.compile(r"\]\((?![A-Za-z][A-Za-z0-9+.-]*:|#)[^)]*\)")


def source_version(name: str) -> str:
    module = "hermes_sdk" if name == "hermes-sdk" else name.replace("-", "_")
    text = (PROJECTS[name] / module / "_version.py").read_text()
    return re.search(r'^__version__ = "([^"]+)"', text, re.M).group(1)  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def dist() -> Path:
    where = os.environ.get("HERMES_SDK_DIST")
    if not where:
        pytest.skip("HERMES_SDK_DIST is not set: tox -e release builds the files and sets it")
    return Path(where)


def wheel(dist: Path, name: str) -> Path:
    (found,) = dist.glob(f"{name.replace('-', '_')}-{source_version(name)}-py3-none-any.whl")
    return found


def sdist(dist: Path, name: str) -> Path:
    (found,) = dist.glob(f"{name.replace('-', '_')}-{source_version(name)}.tar.gz")
    return found


def metadata(dist: Path, name: str) -> email.message.Message:
    with zipfile.ZipFile(wheel(dist, name)) as archive:
        (meta,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return email.parser.Parser().parsestr(archive.read(meta).decode())


def test_ten_files_one_sdist_and_one_wheel_per_package(dist: Path) -> None:
    expected = {wheel(dist, n).name for n in PROJECTS} | {sdist(dist, n).name for n in PROJECTS}
    assert sorted(p.name for p in dist.iterdir()) == sorted(expected) and len(expected) == 10


@pytest.mark.parametrize("name", PROJECTS)
def test_the_metadata_a_package_index_shows(dist: Path, name: str) -> None:
    meta = metadata(dist, name)
    assert meta["Name"] == name and meta["Version"] == source_version(name)
    assert meta["Author"], "no author"
    assert meta["License"] == "Apache-2.0" or meta["License-Expression"] == "Apache-2.0"
    classifiers = set(meta.get_all("Classifier") or [])
    assert "License :: OSI Approved :: Apache Software License" in classifiers
    assert any(c.startswith("Development Status :: ") for c in classifiers)
    assert "Typing :: Typed" in classifiers
    assert {f"Programming Language :: Python :: {v}" for v in PYTHONS} <= classifiers
    assert meta["Requires-Python"] == ">=3.9"
    # No host is justified yet, so none is named; a relative path (docs/index.md) was a broken link.
    urls = meta.get_all("Project-URL") or []
    assert all(re.fullmatch(r"[^,]+, https://[^/\s]+\.[^/\s]+/\S*", u) for u in urls), urls
    assert not any(re.search(r"pypi|pythonhosted", u, re.I) for u in urls), urls
    assert meta["Description-Content-Type"] == "text/markdown"
    description = meta.get_payload()
    assert description.startswith(f"# {name}"), description[:80]
    assert_written_for_an_installed_user(description)


def assert_written_for_an_installed_user(description: str) -> None:
    """No link an index cannot follow, no editable install, tox or checkout path, no checkout-only block."""
    assert not RELATIVE_LINK.findall(description), RELATIVE_LINK.findall(description)
    for checkout in (r"pip install[^\n]* -e\b", r"\.tox\b|\btox -e\b", r"docs/[\w/.-]*\.md", r"\.\./",
                     r"<!-- /?checkout -->", r"plugins/hermes-sdk-"):
        assert not re.search(checkout, description), (checkout, re.search(checkout, description))


def long_description(name: str) -> str:
    """What setup.py gives the index, from the source (no build)."""
    import runpy

    import setuptools

    given: dict[str, str] = {}
    real = setuptools.setup
    setuptools.setup = lambda **kwargs: given.update(kwargs)  # type: ignore[assignment]
    try:
        runpy.run_path(str(PROJECTS[name] / "setup.py"))
    finally:
        setuptools.setup = real
    return given["long_description"]


@pytest.mark.parametrize("name", PROJECTS)
def test_the_long_description_is_the_readme_for_an_installed_user(name: str) -> None:
    pytest.importorskip("setuptools")
    description = long_description(name)
    assert description.startswith(f"# {name}\n"), description[:80]
    assert_written_for_an_installed_user(description)


def test_the_readme_still_starts_with_the_checkout_commands() -> None:
    # CI and a fresh clone run the README's first two commands; the index leaves them out.
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"^<!-- checkout -->\n```sh\n(.*?)\n```\n", readme, re.S | re.M)
    assert block is not None and readme.index("```") == block.start(1) - len("```sh\n")
    first, second = block.group(1).splitlines()
    assert first.startswith("python3 -m pip install -e . && python3 -m hermes_sdk demo")
    assert second.startswith('python3 -m pip install "tox>=4" && python3 -m tox ')


@pytest.mark.parametrize("name", PROJECTS)
def test_each_wheel_and_sdist_ships_the_licence_and_py_typed(dist: Path, name: str) -> None:
    module = "hermes_sdk" if name == "hermes-sdk" else name.replace("-", "_")
    with zipfile.ZipFile(wheel(dist, name)) as archive:
        files = archive.namelist()
    assert any(re.fullmatch(r"[^/]+\.dist-info/(licenses/)?LICENSE", f) for f in files), files
    assert f"{module}/py.typed" in files and f"{module}/_version.py" in files
    with tarfile.open(sdist(dist, name)) as archive:
        members = {m.split("/", 1)[1] for m in archive.getnames() if "/" in m}
    assert {"LICENSE", "README.md", "PKG-INFO", "setup.py", "setup.cfg", f"{module}/py.typed"} <= members


def test_the_core_sdist_holds_the_tests_changelog_and_docs(dist: Path) -> None:
    with tarfile.open(sdist(dist, "hermes-sdk")) as archive:
        members = {m.split("/", 1)[1] for m in archive.getnames() if "/" in m}
    for folder in ("tests", "docs", "examples"):
        # what the checkout holds, not what a build or an editable install left in it (egg-info)
        source = {str(p.relative_to(ROOT)) for p in (ROOT / folder).rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and "_build" not in p.parts
                  and not any(part.endswith(".egg-info") for part in p.parts)
                  and p.suffix not in (".pyc", ".pyo")}
        assert source - members == set(), f"left out of the sdist: {sorted(source - members)[:10]}"
    assert {"CHANGELOG.md", "requirements/test.txt", "tox.ini", "docs/conf.py"} <= members


@pytest.mark.parametrize("name", PROJECTS)
def test_no_broker_or_build_litter_is_shipped(dist: Path, name: str) -> None:
    # A Celery try-out's filesystem broker wrote examples/celery_app/control/*.exchange into the tree
    # (and the release); queued messages are *.msg.
    with tarfile.open(sdist(dist, name)) as archive:
        members = archive.getnames()
    with zipfile.ZipFile(wheel(dist, name)) as archive:
        members += archive.namelist()
    litter = [m for m in members if re.search(r"\.(exchange|msg|py[cod])$|/control/|__pycache__", m)]
    assert litter == [], litter


def test_the_checkout_tracks_no_broker_files() -> None:
    import subprocess

    tracked = subprocess.run(["git", "ls-files", "*.exchange", "*.msg", "examples/celery_app/control"], cwd=ROOT,
                             capture_output=True, text=True)
    if tracked.returncode != 0:
        pytest.skip("not a git checkout")
    assert tracked.stdout.split() == []


@pytest.mark.parametrize("name", PLUGINS)
def test_a_plugin_requires_the_released_core_minor_with_an_upper_bound(dist: Path, name: str) -> None:
    requires = [r for r in metadata(dist, name).get_all("Requires-Dist") or [] if re.match(r"hermes-sdk\b(?!-)", r)]
    assert len(requires) == 1, requires
    bounds = set(re.sub(r"[\s()]", "", requires[0][len("hermes-sdk"):]).split(","))
    assert bounds == {">=0.2", "<0.3"}, requires


def test_the_core_extras_install_each_plugin_and_nothing_for_development(dist: Path) -> None:
    meta = metadata(dist, "hermes-sdk")
    assert set(meta.get_all("Provides-Extra") or []) == {"redis", "opentelemetry", "sql", "postgresql", "inbox",
                                                         "openai"}
    wanted = {"redis": "hermes-sdk-redis", "opentelemetry": "hermes-sdk-opentelemetry", "sql": "hermes-sdk-sql",
              "postgresql": "hermes-sdk-sql[postgresql]", "inbox": "hermes-sdk-inbox"}
    requires = meta.get_all("Requires-Dist") or []
    for extra, requirement in wanted.items():
        named = [r for r in requires if re.search(rf"extra\s*==\s*[\"']{extra}[\"']", r)]
        assert len(named) == 1 and named[0].startswith(requirement) and "<0.3" in named[0], named
    # hermes_sdk.openai (issue 39): openai itself, from the release legacy applications pin
    named = [r for r in requires if re.search(r"extra\s*==\s*[\"']openai[\"']", r)]
    assert len(named) == 1 and re.match(r"openai\b", named[0]) and ">=1.30.5" in named[0] and "<4" in named[0], named


def test_the_five_setup_py_are_one_file() -> None:
    texts = {name: (project / "setup.py").read_text() for name, project in PROJECTS.items()}
    assert len(set(texts.values())) == 1, "setup.py differs between the packages; keep them identical"


def test_one_release_version_everywhere() -> None:
    versions = {name: source_version(name) for name in PROJECTS}
    assert set(versions.values()) == {"0.2.0"}, versions
    for name in PLUGINS:
        assert "version = attr:" in (PROJECTS[name] / "setup.cfg").read_text(), name


# A legacy application's own pins (tox -e plugins-oldest runs each plugin's suite on them).
LEGACY_PINS = ["Flask==2.0.3", "Werkzeug==2.0.3", "SQLAlchemy==1.4.*"]


def test_every_extra_resolves_from_the_built_files_on_a_legacy_applications_pins(dist: Path, tmp_path: Path) -> None:
    # hermes-sdk[inbox] took Flask 2.0.3 to 3.1, [sql] SQLAlchemy 1.4 to 2.0: with the pins as
    # constraints pip found no resolution. The five packages must come from the built files.
    import json
    import subprocess
    import sys

    lowest = (ROOT / "tests" / "install" / "constraints-lowest.txt").read_text()
    constraints = tmp_path / "legacy-constraints.txt"
    constraints.write_text(lowest + "\n".join(LEGACY_PINS) + "\n")
    report = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if k not in ("PIP_CONSTRAINT", "PIP_REQUIRE_VIRTUALENV")}
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet", "--report", str(report),
         "--find-links", str(dist), "--only-binary", ":all:", "--python-version", "3.9", "-c", str(constraints),
         "hermes-sdk[inbox,sql,redis,opentelemetry]"], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    chosen = {re.sub(r"[-_.]+", "-", item["metadata"]["name"]).lower(): item
              for item in json.loads(report.read_text())["install"]}
    for pin in LEGACY_PINS + lowest.split():
        name, version = pin.split("==")
        assert re.fullmatch(version.replace(".", r"\.").replace("*", ".*"),
                            chosen[name.lower()]["metadata"]["version"]), (pin, chosen[name.lower()]["metadata"])
    for name in PROJECTS:
        assert chosen[name]["metadata"]["version"] == source_version(name)
        assert chosen[name]["download_info"]["url"] == wheel(dist, name).resolve().as_uri(), chosen[name]
