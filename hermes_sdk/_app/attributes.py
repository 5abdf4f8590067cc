"""The built-in families' resources as client attributes: each is ``client.resource(X)``, the one
instance the client's registry gives, not one the client builds aside."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, TypeVar

if TYPE_CHECKING:  # each family is imported when its attribute is first read
    from .._families.chat import Chat
    from .._families.jobs import Jobs
    from .._families.responses import Responses
    from .._families.runs import Runs
    from .._families.sessions import Sessions

R = TypeVar("R")


class FamilyResources:
    """Mixed into :class:`~hermes_sdk.HermesClient`."""

    if TYPE_CHECKING:  # HermesClient.resource
        def resource(self, resource: Callable[..., R]) -> R: ...

    @property
    def runs(self) -> Runs:
        """Durable agent runs (``/v1/runs``): ``client.resource(Runs)``."""
        from .._families.runs.resource import Runs

        return self.resource(Runs)

    @property
    def sessions(self) -> Sessions:
        """Addressable, persistent sessions (``/api/sessions``): ``client.resource(Sessions)``."""
        from .._families.sessions.resource import Sessions

        return self.resource(Sessions)

    @property
    def jobs(self) -> Jobs:
        """Cron jobs (``/api/jobs``): ``client.resource(Jobs)``."""
        from .._families.jobs.resource import Jobs

        return self.resource(Jobs)

    def _chat(self) -> Chat:
        """The chat family's resource (``client.chat()``, ``client.chat_stream()``)."""
        from .._families.chat.resource import Chat

        return self.resource(Chat)

    def _responses(self) -> Responses:
        """The Responses family's resource (``client.responses()`` and the three beside it)."""
        from .._families.responses.resource import Responses

        return self.resource(Responses)
