"""The values the client returns and the events its streams yield, in one importable place.

``from hermes_sdk.types import Run, RunCompleted, HermesSession`` for annotations; the resources
(``client.runs`` is a :class:`Runs`) and the live stream handles are here too. Everything an
application calls or catches is also at the top of :mod:`hermes_sdk` (errors: :mod:`hermes_sdk.errors`).
"""

from __future__ import annotations

import hermes_sdk as _top

from ._app import _compat

# -- written by tools/exports.py from _TABLE: do not edit --
from ._core.approval import ApprovalDecision as ApprovalDecision, ApprovalRequest as ApprovalRequest
from ._core.deadline import CallTimeout as CallTimeout
from ._core.events import (
    ApprovalRequested as ApprovalRequested,
    FunctionCall as FunctionCall,
    FunctionCallOutput as FunctionCallOutput,
    HermesStatus as HermesStatus,
    MessageDelta as MessageDelta,
    ReasoningDelta as ReasoningDelta,
    RunEvent as RunEvent,
    ToolProgress as ToolProgress,
)
from ._core.models import ActionResult as ActionResult, StreamEvent as StreamEvent, StreamResult as StreamResult
from ._core.resources.records import Records as Records
from ._core.server_features import ServerFeatures as ServerFeatures
from ._core.streaming import HermesStream as HermesStream
from ._families.chat import Chat as Chat
from ._families.chat.types import (
    ChatCompletion as ChatCompletion,
    ChatMessage as ChatMessage,
    ChatStream as ChatStream,
    Choice as Choice,
)
from ._families.discovery.types import (
    Health as Health,
    ModelInfo as ModelInfo,
    ServerCapabilities as ServerCapabilities,
    Skill as Skill,
    Toolset as Toolset,
)
from ._families.jobs import Jobs as Jobs
from ._families.jobs.types import Job as Job, JobDeleted as JobDeleted
from ._families.operator import OperatorMethods as OperatorMethods
from ._families.operator.types import OperatorResult as OperatorResult
from ._families.responses import Responses as Responses
from ._families.responses.types import (
    DeletionReceipt as DeletionReceipt,
    HermesResponse as HermesResponse,
    ResponseStream as ResponseStream,
)
from ._families.runs import Runs as Runs
from ._families.runs.events import (
    ApprovalResponded as ApprovalResponded,
    ReasoningAvailable as ReasoningAvailable,
    RunCancelled as RunCancelled,
    RunCompleted as RunCompleted,
    RunEnded as RunEnded,
    RunFailed as RunFailed,
    RunInterrupted as RunInterrupted,
    RunSteered as RunSteered,
    SubagentEvent as SubagentEvent,
    ToolCompleted as ToolCompleted,
    ToolStarted as ToolStarted,
)
from ._families.runs.run import Run as Run
from ._families.runs.types import (
    ApprovalAnswer as ApprovalAnswer,
    RunEventStream as RunEventStream,
    RunResult as RunResult,
    RunStarted as RunStarted,
    RunStatus as RunStatus,
    SteerAnswer as SteerAnswer,
)
from ._families.sessions import Sessions as Sessions
from ._families.sessions.types import (
    HermesSession as HermesSession,
    SessionAssistantCompleted as SessionAssistantCompleted,
    SessionChatStream as SessionChatStream,
    SessionDeleted as SessionDeleted,
    SessionDelta as SessionDelta,
    SessionDone as SessionDone,
    SessionEvent as SessionEvent,
    SessionMessage as SessionMessage,
    SessionMessageStarted as SessionMessageStarted,
    SessionPage as SessionPage,
    SessionReply as SessionReply,
    SessionRunCompleted as SessionRunCompleted,
    SessionRunStarted as SessionRunStarted,
    SessionStreamError as SessionStreamError,
    SessionThinking as SessionThinking,
    SessionToolCompleted as SessionToolCompleted,
    SessionToolEvent as SessionToolEvent,
    SessionToolFailed as SessionToolFailed,
    SessionToolStarted as SessionToolStarted,
    SessionTranscript as SessionTranscript,
)
# -- end of the written imports --

#: Every value, stream, event and resource type (hermes_sdk._TABLE's "top" and "types" rows).
__all__ = sorted(name for _module, place, names in _top._TABLE if place in ("top", "types") for name in names)

# Names also exported at the top have hermes_sdk as their home; the rest live here.
_compat.rehome(globals(), [n for n in __all__ if n in _top.__all__], _top.__name__)
_compat.rehome(globals(), [n for n in __all__ if n not in _top.__all__], __name__)
