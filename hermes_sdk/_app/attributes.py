"""The built-in families' resources as client attributes: each is ``client.resource(X)``, the one
instance the client's registry gives, not one the client builds aside."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, TypeVar

from .._families.jobs import Jobs
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
        return self.resource(Runs)

    @property
    def sessions(self) -> Sessions:
        """Addressable, persistent sessions (``/api/sessions``): ``client.resource(Sessions)``."""
        return self.resource(Sessions)

    @property
    def jobs(self) -> Jobs:
        """Cron jobs (``/api/jobs``): ``client.resource(Jobs)``."""
        return self.resource(Jobs)
