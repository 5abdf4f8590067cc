"""gunicorn settings for examples/wsgi_app (also right for the Flask and Django examples).

With ``preload_app = True`` the application is imported once in the master and the workers are
forked from it: anything created at import time is shared by every worker. The example creates its
client lazily (first request in each worker), so this is safe as it is; the hooks below make the
lifecycle explicit: a fresh client right after the fork, and a clean close when a worker exits.
"""

preload_app = True
workers = 2
threads = 4  # one client per worker process, shared by these threads


def post_fork(server, worker):  # noqa: ARG001 - gunicorn's hook signature
    import app

    app.close_client()  # drops an inherited client without closing the master's sockets
    app.get_client()    # this worker's own client


def worker_exit(server, worker):  # noqa: ARG001
    import app

    app.close_client()
