"""Every code a :class:`~runtime.records.ToolResult` can carry, in one catalogue.

A code names *why* a call ended as it did, for apps and logs to branch on (the model
reads the text). Each :class:`ResultCode` says the stage that gives it and the status
it comes with; a member is its wire value (a ``str``), so ``result.code == "denied"``
holds and JSON, logs and the audit log carry the plain text. Codes a stage gives in two
ways list both (a call cut short by the turn's deadline while it ran is ``unknown`` at
execute; one the deadline kept from starting is ``not_executed`` at respond).

A workflow run as a tool ends with ``workflow_<its status>`` (see runtime.workflow).
"""

from __future__ import annotations

from enum import Enum

from runtime.records import Stage, Status

_P, _L, _V, _M, _E, _S, _R = (
    Stage.parse,
    Stage.lookup,
    Stage.validate,
    Stage.permit,
    Stage.execute,
    Stage.shape,
    Stage.respond,
)


class ResultCode(str, Enum):
    """A result code: its wire value, the stage that gives it, its status(es)."""

    stage: Stage
    statuses: tuple[Status, ...]

    def __new__(cls, value: str, stage: Stage, *statuses: Status) -> ResultCode:
        member = str.__new__(cls, value)
        member._value_ = value
        member.stage = stage
        member.statuses = statuses
        return member

    def __str__(self) -> str:  # the wire value, as text everywhere (not "ResultCode.denied")
        return str.__str__(self)

    def __format__(self, format_spec: str) -> str:
        return str.__format__(self, format_spec)

    @property
    def status(self) -> Status:
        """The status the code usually comes with (the first of ``statuses``)."""
        return self.statuses[0]

    # 01 parse
    parse_error = ("parse_error", _P, Status.invalid)
    # 02 lookup
    unknown_tool = ("unknown_tool", _L, Status.invalid)
    unknown_version = ("unknown_version", _L, Status.invalid)
    # 03 validate
    bad_arguments = ("bad_arguments", _V, Status.invalid)
    invalid_arguments = ("invalid_arguments", _V, Status.invalid)
    rule_failed = ("rule_failed", _V, Status.invalid)
    # 04 permit
    denied = ("denied", _M, Status.denied)
    quota_exceeded = ("quota_exceeded", _M, Status.denied)
    circuit_open = ("circuit_open", _M, Status.denied)
    limit_store_unavailable = ("limit_store_unavailable", _M, Status.denied)
    # 05 execute
    timeout = ("timeout", _E, Status.timeout, Status.unknown)
    tool_error = ("tool_error", _E, Status.error)
    handler_error = ("handler_error", _E, Status.error)
    handler_crashed = ("handler_crashed", _E, Status.error)
    spawn_failed = ("spawn_failed", _E, Status.error)
    process_limit = ("process_limit", _E, Status.error, Status.unknown)
    program_not_found = ("program_not_found", _E, Status.error)
    program_not_executable = ("program_not_executable", _E, Status.error)
    bad_command = ("bad_command", _E, Status.invalid, Status.error)
    not_available = ("not_available", _E, Status.error)
    background = ("background", _E, Status.background)
    cancelled = ("cancelled", _E, Status.unknown)
    step_timeout = ("step_timeout", _E, Status.unknown)
    mcp_error = ("mcp_error", _E, Status.error)
    mcp_unavailable = ("mcp_unavailable", _E, Status.error)
    address_refused = ("address_refused", _E, Status.denied)
    bad_request = ("bad_request", _E, Status.invalid)
    connect_failed = ("connect_failed", _E, Status.error)
    http_status = ("http_status", _E, Status.error)
    too_many_redirects = ("too_many_redirects", _E, Status.error)
    #: A bug in toolrt, contained: the call may not have run.
    internal_error = ("internal_error", _E, Status.internal)
    # 06 shape
    output_invalid = ("output_invalid", _S, Status.error)
    # 07 respond (the turn: order, pairing, deadlines)
    duplicate_id = ("duplicate_id", _R, Status.not_executed)
    not_reached = ("not_reached", _R, Status.not_executed)
    stopped_on_error = ("stopped_on_error", _R, Status.not_executed)
    interrupted = ("interrupted", _R, Status.not_executed, Status.unknown)
    turn_deadline = ("turn_deadline", _R, Status.not_executed, Status.unknown)


#: Codes that begin with this are a workflow's ending (``workflow_ok``, ``workflow_failed``, ...).
WORKFLOW_PREFIX = "workflow_"


def known(code: str) -> bool:
    """Whether ``code`` is in the catalogue (a workflow's ending included)."""
    return code in ResultCode._value2member_map_ or code.startswith(WORKFLOW_PREFIX)
