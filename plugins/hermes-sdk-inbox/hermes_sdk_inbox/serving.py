"""The standalone inbox's WSGI server: waitress when installed, else Werkzeug's development server
with a plain warning (``Served.warning``, printed after the serving line) that it is not for production.

``pip install 'hermes-sdk-inbox[production]'`` installs waitress. Behind an application's own WSGI
server (gunicorn, uWSGI, mod_wsgi), mount :func:`~hermes_sdk_inbox.inbox_blueprint` in the
application instead, or serve ``create_app(...)`` from a module it imports (README: "Serving it").
"""

from __future__ import annotations

from typing import Any

DEV_WARNING = ("hermes-sdk-inbox: WARNING: serving with Werkzeug's development server, which is not for "
               "production. Install waitress (pip install 'hermes-sdk-inbox[production]') or mount "
               "inbox_blueprint in your application's own WSGI server (hermes-sdk-inbox documentation: "
               "'Serving it').")


class Served:
    """A started server: ``port`` (the one bound), ``name``, ``serve_forever()`` and ``close()``."""

    def __init__(self, name: str, port: int, serve: Any, close: Any, warning: str = "") -> None:
        self.name, self.port, self.warning = name, port, warning
        self.serve_forever, self.close = serve, close


def wsgi_server(app: Any, host: str, port: int, choice: str = "auto") -> Served:
    """Bind ``app`` on ``host:port`` with the server ``choice`` names (``auto``: waitress if installed)."""
    if choice in ("auto", "waitress"):
        try:
            from waitress.server import create_server
        except ImportError:
            if choice == "waitress":
                raise SystemExit("hermes-sdk-inbox: --server waitress needs waitress: "
                                 "pip install 'hermes-sdk-inbox[production]'") from None
        else:
            server = create_server(app, host=host, port=port, threads=8, ident="hermes-sdk-inbox")
            return Served("waitress", int(server.effective_port), server.run, server.close)
    from werkzeug.serving import make_server

    dev = make_server(host, port, app, threaded=True)
    return Served("Werkzeug development server", int(dev.server_port), dev.serve_forever, dev.server_close,
                  DEV_WARNING)
