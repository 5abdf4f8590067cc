"""The operator family: the connector's governed operator run on ``/v1/runs`` (``client.operate``),
one composite capability over the runs family."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._shared import lazy_exports
from .methods import OperatorMethods

if TYPE_CHECKING:
    from hermes_sdk.plugin import Family

    from .types import OperatorResult

    FAMILY: Family[None]

# The client mixes OperatorMethods in; the family (and the runs family it drives) loads when first asked for.
__getattr__ = lazy_exports(__name__, {"FAMILY": ".resource", "OperatorResult": ".types"})

__all__ = ["FAMILY", "OperatorMethods", "OperatorResult"]
