"""Configurations for tests (single-node friendly YAML) and the event log they lead to:
one target's log settings, its state replayed, the group of drivers as the log and
their REST APIs show it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (srm_common is imported where it is used: see ControlGroup.state)
    from srm_common.control.state import ControlState


def write_config(
    folder: Path,
    bootstrap: Mapping[str, str],
    *,
    flows: Mapping[str, Mapping[str, object]] | None = None,
    replication: Mapping[str, object] | None = None,
    name: str = "srm.yaml",
    cluster_keys: Mapping[str, Mapping[str, str]] | None = None,
) -> Path:
    """A YAML configuration for clusters on the given bootstrap servers, single-node
    friendly (replication factors 1, short intervals); ``flows`` and ``replication``
    add or override keys (``{"primary->backup": {"enabled": True}}``); ``cluster_keys``
    adds keys per alias (a secured cluster's ``mm2_keys``)."""
    import yaml

    settings: dict[str, object] = {
        "replication.factor": 1,
        "heartbeats.topic.replication.factor": 1,
        "checkpoints.topic.replication.factor": 1,
        "offset-syncs.topic.replication.factor": 1,
        "offset.storage.replication.factor": 1,
        "refresh.topics.interval.seconds": 2,
        "sync.topic.configs.interval.seconds": 2,
        "emit.heartbeats.interval.seconds": 1,
        **(replication or {}),
    }
    document = {
        "clusters": {
            alias: {"bootstrap.servers": servers, **(cluster_keys or {}).get(alias, {})}
            for alias, servers in bootstrap.items()
        },
        "replication": settings,
        "flows": {name: dict(keys) for name, keys in (flows or {}).items()},
    }
    path = folder / name
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def control_config(
    folder: Path, bootstrap: Mapping[str, str], prefix: str, **replication: object
) -> Path:
    """The control-path tests' configuration: primary->backup replicating
    ``<prefix>-base``, backup->primary off, the control topics named after ``prefix``."""
    return write_config(
        folder,
        {"primary": bootstrap["primary"], "backup": bootstrap["backup"]},
        flows={
            "primary->backup": {"enabled": True, "topics": [f"{prefix}-base"]},
            "backup->primary": {"enabled": False},
        },
        replication={"srm.control.topic.prefix": prefix, **replication},
    )


def control_log(config: Path, target: str | None = None):  # type: ignore[no-untyped-def]
    """The :class:`ControlSettings` of one target's log of ``config``: ``target``, or the
    one target of its enabled flows (ValueError when they have several: name one)."""
    from srm_common.cli_support import load_or_exit
    from srm_common.config.control import control_plane

    loaded = load_or_exit("test", config, [])
    if target is None:
        targets = sorted({flow.target for flow in loaded.enabled_flows()})
        if len(targets) != 1:
            raise ValueError(f"the enabled flows write into {targets}: name the target")
        target = targets[0]
    return control_plane(loaded).log(target)


def control_state(config: Path, target: str | None = None):  # type: ignore[no-untyped-def]
    """The state of one target's log (:func:`control_log`), replayed to its end now."""
    from srm_common.adapters.event_log_reads import read_log
    from srm_common.control.state import replay

    return replay(read_log(control_log(config, target), timeout=15))


class ControlGroup:
    """The group of drivers of one target's log (:func:`control_log`: ``target``, or the
    one target of the enabled flows) as the log and the drivers' REST APIs show it (for
    tests that start coordinators and drivers as processes)."""

    def __init__(self, config: Path, target: str | None = None) -> None:
        self.settings = control_log(config, target)

    def state(self):  # type: ignore[no-untyped-def]
        from srm_common.adapters.event_log_reads import read_log
        from srm_common.control.state import replay

        return replay(read_log(self.settings, timeout=15))

    def events(self) -> list[object]:
        """Every event of the log, in order."""
        from srm_common.adapters.event_log_reads import read_log

        return [envelope.event for envelope in read_log(self.settings, timeout=15)]

    def running(self, driver: str, state=None) -> set[str]:  # type: ignore[no-untyped-def]
        """What ``driver`` says it runs of this log's tasks (empty when it does not answer)."""
        current = state or self.state()
        try:
            found = get_json(f"{current.drivers[driver].url}/v1/driver", timeout=3)["running"]
        except (OSError, KeyError, ValueError):
            return set()
        return {task for task in found if task.rpartition("|")[0] in current.tasks}

    def settled(self, drivers: Iterable[str], state: ControlState | None = None) -> bool:
        """Every task assigned to one of ``drivers``, and each runs exactly what it holds
        (in ``state``, or the log read now). False while the event log cannot be read to
        its end (a coordinator just starting has not created it yet): the caller's own
        timeout decides, not the read's 15 s."""
        from srm_common.errors import ControlLogError

        try:
            current = state if state is not None else self.state()
        except ControlLogError:
            return False
        tasks = set(current.all_task_ids())
        if not tasks or set(current.assignment) != tasks:
            return False
        if set(current.assignment.values()) - set(drivers):
            return False
        return all(self.running(d, current) == set(current.tasks_of(d)) for d in drivers)


def get_json(url: str, timeout: float = 10) -> dict:  # type: ignore[type-arg]
    import json
    import urllib.request

    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read())
