"""The operator family: the connector's governed operator run on ``/v1/runs`` (``client.operate``),
one composite capability over the runs family."""

from __future__ import annotations

import attrs

from hermes_sdk.plugin import Family

from .operations import OPERATOR
from .resource import OperatorMethods, invoke_operator
from .types import OperatorResult

FAMILY: Family[None] = Family("operator", (attrs.evolve(OPERATOR, composite=invoke_operator),))

__all__ = ["FAMILY", "OperatorMethods", "OperatorResult"]
