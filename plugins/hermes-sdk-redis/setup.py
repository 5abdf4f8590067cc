"""The long description: README.md as a user who ran ``pip install`` reads it on an index page
(setup.cfg holds the rest of the metadata).

A README serves a checkout too, and two kinds of text in it are for the checkout only:

* what stands between ``<!-- checkout -->`` and ``<!-- /checkout -->`` lines (the core's first two
  commands, an editable install and tox; the pointer to the contributors' page) is left out;
* a link relative to the checkout (``docs/cli.md``, ``../../README.md``) cannot be followed from an
  index page: it becomes its text, the title of the page to look up.

Identical in the five packages (tests/release/test_dist.py checks that it stays so).
"""

import os
import re

from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT_ONLY = re.compile(r"^<!-- checkout -->\n.*?^<!-- /checkout -->\n", re.S | re.M)
# [text](target) whose target has no scheme (http:, mailto:) and is not an anchor (#...).
RELATIVE_LINK = re.compile(r"\[([^\]]+)\]\((?![A-Za-z][A-Za-z0-9+.-]*:|#)([^)\s]+)\)")


def index_readme() -> str:
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as readme:
        text = CHECKOUT_ONLY.sub("", readme.read())
    return RELATIVE_LINK.sub(r"\1", text)


setup(long_description=index_readme())
