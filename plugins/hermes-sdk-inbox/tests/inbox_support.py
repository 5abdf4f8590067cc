"""Helpers the inbox's web tests share: a host application with the inbox mounted, and a page's CSRF token."""

from __future__ import annotations

import re
from typing import Any, Optional

from flask import Flask
from hermes_sdk_inbox import Inbox, inbox_blueprint


def host_app(inbox: Inbox, authorize: Any = None) -> Flask:
    """An existing application with its own login (here: a header), the inbox mounted under /inbox."""
    app = Flask("host")
    app.config["SECRET_KEY"] = "host-secret"

    def authenticate(request: Any) -> Optional[str]:
        return request.headers.get("X-User")

    app.register_blueprint(inbox_blueprint(inbox, authenticate=authenticate, authorize=authorize),
                           url_prefix="/inbox")
    return app


def csrf_of(html: str) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match, html
    return match.group(1)
