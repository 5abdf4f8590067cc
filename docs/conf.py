"""Sphinx configuration: furo, MyST for the markdown guides, autodoc with type hints for the reference.

Build with ``python3 -m tox -e docs`` (warnings are errors there), or
``sphinx-build -W -b html docs docs/_build/html`` in a venv with ``pip install -e . -r requirements/docs.txt``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import warnings

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, ROOT)

import hermes_sdk  # noqa: E402

# sphinx-autodoc-typehints calls an API that Sphinx 9 deprecates: noise, not a problem of these docs.
warnings.filterwarnings("ignore", message=".*set_application.*")

project = "hermes-sdk"
author = "the hermes-sdk authors"
copyright = "the hermes-sdk authors, Apache-2.0"
release = hermes_sdk.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "sphinx_autodoc_typehints",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

html_theme = "furo"
html_title = f"hermes-sdk {release}"

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_typehints = "description"
typehints_fully_qualified = False
always_document_param_types = False
autodoc_mock_imports = ["sseclient"] if importlib.util.find_spec("sseclient") is None else []

# The plugin-author module is added by the call-path rewrite; until it exists its section says so,
# and once it exists it is documented with no change here.
HAVE_PLUGIN_MODULE = importlib.util.find_spec("hermes_sdk.plugin") is not None
_PLUGIN_BLOCK = re.compile(r"<!-- plugin-module -->.*?<!-- /plugin-module -->", re.S)


def _guard_plugin_module(app, docname, source):  # type: ignore[no-untyped-def]
    if not HAVE_PLUGIN_MODULE and "<!-- plugin-module -->" in source[0]:
        source[0] = _PLUGIN_BLOCK.sub(
            "`hermes_sdk.plugin` is not in this version yet: plugin authors import `hookimpl` from "
            "`hermes_sdk` and find the hook specifications in `hermes_sdk.hookspecs` below.", source[0])


def setup(app):  # type: ignore[no-untyped-def]
    app.connect("source-read", _guard_plugin_module)
