"""The smallest settings the example needs; a real project adds these to its own settings.

The Hermes client itself is configured by the environment (HERMES_BASE_URL, HERMES_API_KEY,
HERMES_SDK_IDEMPOTENCY_STORE) and created per process in django_app/hermes.py.
"""

import os

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "example-only-not-secret")
DEBUG = False
ALLOWED_HOSTS = ["*"]
ROOT_URLCONF = "django_app.urls"
INSTALLED_APPS = ["django_app.apps.HermesExampleConfig"]
MIDDLEWARE: list = []  # a real project keeps its middleware (CSRF included; see views.summarize)
DATABASES: dict = {}
USE_TZ = True
# Where a process that runs several thousand requests would put its store: shared by every worker
# of this host (sqlite) or every host (redis://). The default is in memory, per process.
# HERMES_SDK_IDEMPOTENCY_STORE = "sqlite:////var/lib/myapp/hermes-idem.db"
