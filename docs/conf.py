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


_BACKLINK = re.compile(r'href="(?P<page>[^"#]*\.html)#(?P<anchor>[^"]+)"')


def _fix_viewcode_backlinks(app, pagename, templatename, context, doctree):  # type: ignore[no-untyped-def]
    """viewcode writes every "[docs]" link of a source module as ``<one module>.<name>``, the module
    of whichever page named it first; a module whose objects are documented under two public
    modules (``hermes_sdk.X``, ``hermes_sdk.plugin.Y``) gets broken links. Point each at the object
    of that name documented on the linked page."""
    if not pagename.startswith("_modules/") or "body" not in context:
        return
    anchors: dict[tuple[str, str], set[str]] = {}  # (page, name without its leading modules) -> anchors
    on_page: dict[str, set[str]] = {}
    for name, entry in app.env.get_domain("py").objects.items():
        if not entry.aliased:
            on_page.setdefault(entry.docname, set()).add(entry.node_id)
            parts = name.split(".")
            for i in range(1, len(parts)):
                anchors.setdefault((entry.docname, ".".join(parts[i:])), set()).add(entry.node_id)
    here = os.path.dirname(pagename)

    def fix(match):  # type: ignore[no-untyped-def]
        page, anchor = match.group("page"), match.group("anchor")
        docname = os.path.normpath(os.path.join(here, page))[:-len(".html")]
        if anchor in on_page.get(docname, ()):
            return match.group(0)
        parts = anchor.split(".")
        for i in range(1, len(parts)):
            found = anchors.get((docname, ".".join(parts[i:])), set())
            if len(found) == 1:
                return f'href="{page}#{next(iter(found))}"'
        return match.group(0)

    context["body"] = _BACKLINK.sub(fix, context["body"])


def setup(app):  # type: ignore[no-untyped-def]
    app.connect("source-read", _guard_plugin_module)
    app.connect("html-page-context", _fix_viewcode_backlinks)


def _type_checking_names() -> None:
    # CompositeContext's signature names the kernel's Executor, OperationSpec, CallOptions... imported only
    # for type checkers (a run-time import would close a circle); the annotations are resolved in the
    # module's namespace, so the docs build gives it those names.
    import importlib

    admission = importlib.import_module("hermes_sdk._core.admission")
    for module, name in (("hermes_sdk._core.executor", "Executor"), ("hermes_sdk._core.operations.spec",
                         "OperationSpec"), ("hermes_sdk._core.options", "CallOptions"),
                         ("hermes_sdk._core.approval", "ApprovalProvider"),
                         ("hermes_sdk._core.endpoints", "ExecutionContext"),
                         ("hermes_sdk._core.families", "FamilyExecutor")):
        vars(admission).setdefault(name, getattr(importlib.import_module(module), name))
    # A schema kind names the Input it holds before Input is defined; attrs' generated __init__ reads its
    # annotations in a namespace of its own: resolved here, once, in the schema module's.
    import attrs

    schema = importlib.import_module("hermes_sdk._core.schema")
    for value in list(vars(schema).values()):
        if isinstance(value, type) and attrs.has(value) and value.__module__ == schema.__name__:
            attrs.resolve_types(value)
            init_globals = getattr(value.__init__, "__globals__", None)
            if isinstance(init_globals, dict):  # where sphinx-autodoc-typehints evaluates them
                for name in ("Input", "Field", "Rule", "Optional", "Any"):
                    if hasattr(schema, name):
                        init_globals.setdefault(name, getattr(schema, name))


_type_checking_names()
