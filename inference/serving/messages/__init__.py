"""Every message between the web side and the inference workers, each defined once.

Messages travel over the Channels layer as dicts with a dotted ``type`` (a consumer handles
``"session.frame"`` in ``session_frame``). Each one is a frozen dataclass here: ``to_message()``
is its channel-layer (JSON/msgpack) form and ``from_message(dict)`` reads one back. Readers
never trust the other process: a field of the wrong type becomes its empty value (an ``option``
that is not 0 or 1 becomes -1, which no story accepts), so garbage reaches no engine call.

Three directions, a module each (``inbox``, ``outputs``, ``presence``; ``wire`` holds what
they share), all read through this package:
- web → worker, sent to the worker's inbox ``worker_channel(name)`` (only
  ``sessions/worker_client.py`` sends them);
- worker → the session's group ``session_group(id)``, which the player's and the spectators'
  consumers join;
- web → the session's group (consumers telling each other about the session).
``sessions/README.md`` lists them with their JSON forms.
"""

from inference.serving.messages.inbox import (
    MAX_SAY_CHARS,
    Attach,
    CharacterCard,
    Choose,
    Detach,
    End,
    InboxMessage,
    Input,
    Probe,
    Prompt,
    Say,
    UnknownMessage,
    Unseat,
    Vote,
    Watch,
    parse_inbox,
)
from inference.serving.messages.outputs import (
    WORKER_FAILURES,
    Choices,
    Error,
    Event,
    Frame,
    Line,
    Status,
)
from inference.serving.messages.presence import (
    SEAT_STATES,
    Placed,
    Player,
    Presence,
    Removed,
    SeatInfo,
    Viewers,
)
from inference.serving.messages.wire import (
    MAX_SLOTS,
    Message,
    camera_group,
    session_group,
    worker_channel,
)

__all__ = [
    "session_group",
    "camera_group",
    "worker_channel",
    "Message",
    "MAX_SLOTS",
    "MAX_SAY_CHARS",
    "CharacterCard",
    "Attach",
    "Input",
    "Prompt",
    "Choose",
    "Vote",
    "Say",
    "Watch",
    "Detach",
    "Unseat",
    "End",
    "Probe",
    "InboxMessage",
    "UnknownMessage",
    "parse_inbox",
    "WORKER_FAILURES",
    "Frame",
    "Status",
    "Event",
    "Choices",
    "Line",
    "Error",
    "Placed",
    "Player",
    "SEAT_STATES",
    "SeatInfo",
    "Presence",
    "Removed",
    "Viewers",
]
