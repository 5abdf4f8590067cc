"""The built-in families' resources as client attributes: each is ``client.resource(X)``, the one
instance the client's registry gives, not one the client builds aside. Each resource class is imported
under the family import lock (``family_loading``): a bare import racing another family's can deadlock."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, TypeVar, cast

from .._core.family_loading import load

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
        return self.resource(cast("type[Runs]", load("hermes_sdk._families.runs.resource:Runs")))

    @property
    def sessions(self) -> Sessions:
        """Addressable, persistent sessions (``/api/sessions``): ``client.resource(Sessions)``."""
        return self.resource(cast("type[Sessions]", load("hermes_sdk._families.sessions.resource:Sessions")))

    @property
    def jobs(self) -> Jobs:
        """Cron jobs (``/api/jobs``): ``client.resource(Jobs)``."""
        return self.resource(cast("type[Jobs]", load("hermes_sdk._families.jobs.resource:Jobs")))

    def _chat(self) -> Chat:
        """The chat family's resource (``client.chat()``, ``client.chat_stream()``)."""
        return self.resource(cast("type[Chat]", load("hermes_sdk._families.chat.resource:Chat")))

    def _responses(self) -> Responses:
        """The Responses family's resource (``client.responses()`` and the three beside it)."""
        return self.resource(cast("type[Responses]", load("hermes_sdk._families.responses.resource:Responses")))
