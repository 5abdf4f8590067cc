"""The values the client returns and the events its streams yield, in one importable place.

``from hermes_sdk.types import Run, RunCompleted, HermesSession`` for annotations; the resources
(``client.runs`` is a :class:`Runs`) and the live stream handles are here too. Everything an
application calls or catches is also at the top of :mod:`hermes_sdk` (errors: :mod:`hermes_sdk.errors`).
"""

from __future__ import annotations

import hermes_sdk as _top

from ._core import _compat
from ._core.approval import ApprovalDecision, ApprovalRequest
from ._core.deadline import CallTimeout
from ._core.events import ApprovalRequested, FunctionCall, FunctionCallOutput, MessageDelta, RunEvent, ToolProgress
from ._core.models import (
    ActionResult,
    ChatCompletion,
    ChatMessage,
    Choice,
    DeletionReceipt,
    HermesResponse,
    StreamEvent,
    StreamResult,
)
from ._core.resources.records import Records
from ._core.streaming import ChatStream, HermesStream, ResponseStream
from ._families.discovery.types import Health, ModelInfo, ServerCapabilities, Skill, Toolset
from ._families.jobs import Job, JobDeleted, Jobs
from ._families.operator import OperatorMethods, OperatorResult
from ._families.runs import Run, Runs
from ._families.runs.events import (
    ApprovalResponded,
    ReasoningAvailable,
    RunCancelled,
    RunCompleted,
    RunFailed,
    ToolCompleted,
    ToolStarted,
)
from ._families.runs.types import ApprovalAnswer, RunEventStream, RunResult, RunStarted, RunStatus
from ._families.sessions import Sessions
from ._families.sessions.types import (
    HermesSession,
    SessionAssistantCompleted,
    SessionChatStream,
    SessionDeleted,
    SessionDelta,
    SessionDone,
    SessionEvent,
    SessionMessage,
    SessionMessageStarted,
    SessionPage,
    SessionReply,
    SessionRunCompleted,
    SessionRunStarted,
    SessionStreamError,
    SessionThinking,
    SessionToolCompleted,
    SessionToolEvent,
    SessionToolFailed,
    SessionToolStarted,
    SessionTranscript,
)

__all__ = [
    # results
    "ActionResult", "ApprovalAnswer", "ChatCompletion", "ChatMessage", "Choice", "DeletionReceipt", "Health",
    "HermesResponse", "HermesSession", "Job", "JobDeleted", "ModelInfo", "OperatorResult", "Run", "RunResult",
    "RunStarted", "RunStatus", "ServerCapabilities", "SessionDeleted", "SessionMessage", "SessionPage",
    "SessionReply", "SessionTranscript", "Skill", "StreamResult", "Toolset",
    # streams and their events
    "ChatStream", "HermesStream", "ResponseStream", "RunEventStream", "SessionChatStream", "StreamEvent",
    "ApprovalRequested", "ApprovalResponded", "FunctionCall", "FunctionCallOutput", "MessageDelta",
    "ReasoningAvailable", "RunCancelled", "RunCompleted", "RunEvent", "RunFailed", "ToolCompleted", "ToolProgress",
    "ToolStarted", "SessionAssistantCompleted", "SessionDelta", "SessionDone", "SessionEvent",
    "SessionMessageStarted", "SessionRunCompleted", "SessionRunStarted", "SessionStreamError", "SessionThinking",
    "SessionToolCompleted", "SessionToolEvent", "SessionToolFailed", "SessionToolStarted",
    # approvals and limits
    "ApprovalDecision", "ApprovalRequest", "CallTimeout",
    # the resources: client.runs, client.sessions, client.jobs, client.records, client.operate
    "Jobs", "OperatorMethods", "Records", "Runs", "Sessions",
]

# Names also exported at the top have hermes_sdk as their home; the rest live here.
_compat.rehome(globals(), [n for n in __all__ if n in _top.__all__], _top.__name__)
_compat.rehome(globals(), [n for n in __all__ if n not in _top.__all__], __name__)
