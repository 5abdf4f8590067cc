"""The long description: README.md as an index page shows it (setup.cfg holds the rest of the metadata).

A package index cannot follow a link relative to the checkout (``docs/cli.md``, ``../../README.md``):
each becomes its text, followed by the path in backticks when that file ships in this package's
sdist. Identical in the five packages (tests/release/test_dist.py checks that it stays so).
"""

import os
import re

from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))
# [text](target) whose target has no scheme (http:, mailto:) and is not an anchor (#...).
RELATIVE_LINK = re.compile(r"\[([^\]]+)\]\((?![A-Za-z][A-Za-z0-9+.-]*:|#)([^)\s]+)\)")


def plain(match: "re.Match[str]") -> str:
    text, target = match.groups()
    path = os.path.normpath(os.path.join(HERE, target.split("#")[0]))
    shipped = path.startswith(HERE + os.sep) and os.path.isfile(path)
    return f"{text} (`{os.path.relpath(path, HERE)}`)" if shipped else text


def index_readme() -> str:
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as readme:
        return RELATIVE_LINK.sub(plain, readme.read())


setup(long_description=index_readme())
