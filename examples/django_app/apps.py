from django.apps import AppConfig


class HermesExampleConfig(AppConfig):
    name = "django_app"
    label = "hermes_example"

    def ready(self) -> None:
        # Do NOT create the HermesClient here: ready() runs in gunicorn's master with --preload
        # (and in `manage.py` commands that never call Hermes). django_app.hermes makes it lazily
        # in each worker process, on first use.
        pass
