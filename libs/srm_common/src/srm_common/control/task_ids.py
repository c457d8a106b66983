"""Task ids: MM2's task names (``<Connector>-<index>``) under the flow they belong to,
as the event log's assignments, the drivers' reports and the REST API name tasks."""

from __future__ import annotations

_KINDS = {
    "MirrorSourceConnector": "source",
    "MirrorCheckpointConnector": "checkpoint",
    "MirrorHeartbeatConnector": "heartbeat",
}


def source_task_id(flow: str, index: int) -> str:
    """``primary->backup|MirrorSourceConnector-0``: MM2's task name under the flow."""
    return f"{flow}|MirrorSourceConnector-{index}"


def checkpoint_task_id(flow: str, index: int) -> str:
    return f"{flow}|MirrorCheckpointConnector-{index}"


def heartbeat_task_id(flow: str) -> str:
    return f"{flow}|MirrorHeartbeatConnector-0"


def parse_task_id(task_id: str) -> tuple[str, str, int]:
    """``(flow, kind, index)`` of a task id, kind ``source``, ``checkpoint`` or
    ``heartbeat``; ``ValueError`` naming the id when it is not one of ours."""
    flow, _, task = task_id.rpartition("|")
    connector, _, index = task.rpartition("-")
    kind = _KINDS.get(connector)
    if not flow or kind is None or not index.isdigit():
        raise ValueError(f"{task_id!r} is not a task id like 'a->b|MirrorSourceConnector-0'")
    return flow, kind, int(index)
