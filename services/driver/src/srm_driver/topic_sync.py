"""Remote topics of one flow on its target: create them, grow them, keep their configs synced.

MM2's topic lifecycle (``mm2-semantics.md`` §5.4): a remote topic gets its source
topic's partition count, the flow's ``replication.factor`` and the source's copyable
configs (:mod:`srm_common.domain.topic_configs`); partitions only ever grow; config
sync SETs and DELETEs with ``incrementalAlterConfigs``. Each method is one round of
batched admin requests and is safe to repeat: what is already right is left alone.

A round that fails for some topics still finishes the others, then raises one
:class:`TopicSyncError` naming each failed ``cluster:topic`` with what to check, and
carrying the changes that did go through. The requests and how each topic's answer is
judged: :mod:`srm_driver.topic_requests`; configs read and changed:
:mod:`srm_driver.topic_config_admin`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from srm_common.config.model import FlowConfig
from srm_common.domain.metadata_batches import (
    growth_steps,
    new_topic_records,
    partitions_at_creation,
)
from srm_common.domain.topic_configs import plan_config_changes, select_configs_to_copy
from srm_common.replication_plan import reason_not_replicated

from srm_driver.kafka_admin import TIMEOUT_S, KafkaAdminError, RecordBudget
from srm_driver.topic_config_admin import Described, alter_configs, describe_configs
from srm_driver.topic_listing import TopicListing, list_topics_of
from srm_driver.topic_requests import FAILED, SKIPPED, TopicRequests

log = logging.getLogger(__name__)

_MAX_LISTED_FAILURES = 5


class TopicSyncError(KafkaAdminError):
    """Some topics of a round failed; ``changes`` lists what the round did change."""

    def __init__(self, message: str, changes: list[str]) -> None:
        super().__init__(message)
        self.changes = changes


class TopicSync:
    """Creates, grows and config-syncs the remote topics of ``flow`` (source -> target).

    The admin clients belong to the caller and must stay open while this object is
    used; they are kept referenced here, so pending futures never outlive their client.
    """

    def __init__(
        self,
        flow: FlowConfig,
        source_admin: AdminClient,
        target_admin: AdminClient,
        *,
        timeout: float = TIMEOUT_S,
    ) -> None:
        self._flow = flow
        self._policy = flow.replication_policy()
        self._config_filter = flow.config_property_filter()
        self._source_admin = source_admin
        self._target_admin = target_admin
        self._timeout = timeout
        # Remote topics the last ensure_remote_topics created or was told "already exist".
        self.present: set[str] = set()
        # The broker gets ``timeout`` to finish an operation; the request a little longer,
        # so a slow broker's answer arrives instead of a client-side timeout.
        self._request_timeout = timeout + 5
        # Records one admin request may generate on the target (lowered when refused).
        self.budget = RecordBudget(flow.admin_max_records)
        self._requests = TopicRequests(flow, self.budget, self._request_timeout)
        # Per source topic, its max.message.bytes as last described (any describe of the
        # source updates it): the copy's clients are sized from it (copying.clients).
        self.record_limits: dict[str, int] = {}

    def remote_topic(self, topic: str) -> str:
        """Name on the target of source ``topic`` (``orders`` -> ``primary.orders``)."""
        return self._policy.format_remote_topic(self._flow.source, topic)

    def replicated_topics(self) -> dict[str, int]:
        """Source topics this flow copies, with their partition counts, sorted by name.

        Same rule as the replication plan: allowed by ``topics``/``topics.exclude`` (or a
        heartbeats topic), not internal, not a copy of a target topic.
        """
        partitions = self._listed(self._flow.source, self._source_admin).counts
        return {
            topic: count
            for topic, count in sorted(partitions.items())
            if reason_not_replicated(self._flow, self._policy, topic) is None
        }

    def ensure_remote_topics(
        self, topics: Mapping[str, int], existing: TopicListing | None = None
    ) -> list[str]:
        """Create missing remote topics and grow those with fewer partitions than the source.

        ``topics``: source topic -> partition count; ``existing``: the target's listing of
        their remote topics (None: list it). New topics get the source's partition count,
        ``replication.factor`` (-1: the broker's default) and copyable configs. A topic
        never shrinks; one deleted meanwhile, made or grown first by another driver, or
        listed with a transient error, is no change. No wait for new leaders (readers
        wait). One line per change; :attr:`present`: the remote topics made or found.
        """
        if existing is None:
            existing = self._listed(self._flow.target, self._target_admin)
        self.present = set()
        counts = existing.counts
        missing = {t: n for t, n in topics.items() if not existing.has(self.remote_topic(t))}
        smaller = {
            self.remote_topic(t): (counts[self.remote_topic(t)], n)
            for t, n in topics.items()
            if counts.get(self.remote_topic(t), n) < n
        }
        changes: list[str] = []
        failures: list[str] = []
        if missing:
            source_configs = self._describe(self._flow.source, self._source_admin, missing)
            failures += source_configs.failures
            to_create = {t: missing[t] for t in missing if t in source_configs.entries}
            configs = {
                t: select_configs_to_copy(source_configs.entries[t], self._config_filter)
                for t in to_create
            }
            smaller.update(self._create(to_create, configs, changes, failures))
        if smaller:
            self._grow(smaller, changes, failures)
        self._raise_if_failed("update remote topics", changes, failures)
        return changes

    def sync_configs(self, topics: Iterable[str]) -> list[str]:
        """Make the remote topics' configs mirror their source topics' (incrementally).

        ``topics`` are source topic names. Allowed configs set on the source are SET
        where they differ; allowed configs at their default on the source but set on the
        remote topic are DELETEd; excluded ones are never touched. A topic missing on
        either side is skipped (creation is :meth:`ensure_remote_topics`' job). Returns
        one line per remote topic changed.
        """
        wanted = list(dict.fromkeys(topics))
        if not wanted:
            return []
        failures: list[str] = []
        source = self._describe(self._flow.source, self._source_admin, wanted)
        remote_names = {self.remote_topic(t): t for t in wanted if t in source.entries}
        target = self._describe(self._flow.target, self._target_admin, remote_names)
        failures += source.failures + target.failures
        planned = {
            remote: plan_config_changes(
                source.entries[topic], target.entries[remote], self._config_filter
            )
            for remote, topic in remote_names.items()
            if remote in target.entries
        }
        changes: list[str] = []
        planned = {r: c for r, c in planned.items() if c}
        alter_configs(
            self._requests, self._flow.target, self._target_admin, planned, changes, failures
        )
        self._raise_if_failed("sync topic configs", changes, failures)
        return changes

    def learn_record_limits(self, topics: Iterable[str]) -> None:
        """Read the ``max.message.bytes`` of the source ``topics`` not read yet (one
        batched describe; a topic that does not answer is tried at the next call)."""
        unknown = [t for t in dict.fromkeys(topics) if t not in self.record_limits]
        if unknown:
            self._describe(self._flow.source, self._source_admin, unknown)

    def _listed(self, alias: str, admin: AdminClient) -> TopicListing:
        try:
            return list_topics_of(admin, timeout=self._timeout)
        except KafkaAdminError as exc:
            raise KafkaAdminError(
                f"flow {self._flow.name}: cannot list the topics of cluster {alias!r}: {exc}"
            ) from exc

    def _describe(self, alias: str, admin: AdminClient, topics: Iterable[str]) -> Described:
        """Config entries per topic (:func:`describe_configs`); a source's record limits
        are kept in :attr:`record_limits`."""
        described = describe_configs(self._requests, alias, admin, topics)
        if alias == self._flow.source:
            self.record_limits.update(described.record_limits)
        return described

    def _create(
        self,
        topics: Mapping[str, int],
        configs: Mapping[str, dict[str, str]],
        changes: list[str],
        failures: list[str],
    ) -> dict[str, tuple[int, int]]:
        """Create ``topics`` in requests under the records limit; returns the remote
        topics created with fewer partitions than wanted (one request could not hold
        them), to be grown: remote -> (partitions now, wanted)."""
        if not topics:
            return {}
        rf = self._flow.replication_factor
        by_remote = {self.remote_topic(t): t for t in topics}
        at_creation = {
            t: partitions_at_creation(n, len(configs[t]), self.budget.limit)
            for t, n in topics.items()
        }
        new_topics = [
            NewTopic(self.remote_topic(t), at_creation[t], replication_factor=rf, config=configs[t])
            for t in topics
        ]
        sent = self.budget.requests
        futures = self._requests.chunked(
            self._flow.target,
            "create topics",
            new_topics,
            lambda topic: new_topic_records(topic.num_partitions, len(topic.config)),
            lambda topic: topic.topic,
            lambda chunk: self._target_admin.create_topics(
                chunk, operation_timeout=self._timeout, request_timeout=self._request_timeout
            ),
        )
        to_grow: dict[str, tuple[int, int]] = {}
        created = len(changes)
        existed = 0
        for remote, future in futures.items():
            topic = by_remote[remote]
            outcome = self._requests.result(self._flow.target, remote, "create", future, failures)
            if outcome is FAILED:
                continue
            self.present.add(remote)
            if outcome is SKIPPED:  # it exists: not in the listing yet, or made by another
                existed += 1
                continue
            count = len(configs[topic])
            changes.append(
                f"created {self._flow.target}:{remote} ({at_creation[topic]} partitions,"
                f" {count} config{'s' if count != 1 else ''})"
            )
            if at_creation[topic] < topics[topic]:
                to_grow[remote] = (at_creation[topic], topics[topic])
        log.info(
            "flow %s: created %d of %d remote topics on %r in %d requests%s",
            self._flow.name,
            len(changes) - created,
            len(topics),
            self._flow.target,
            self.budget.requests - sent,
            f" ({existed} existed already: made by another driver, or not listed yet)"
            if existed
            else "",
        )
        return to_grow

    def _grow(
        self, topics: Mapping[str, tuple[int, int]], changes: list[str], failures: list[str]
    ) -> None:
        """Grow each remote topic from its count to the wanted one, in requests under the
        records limit (a growth larger than the limit takes several steps)."""
        steps = {
            remote: growth_steps(old, new, self.budget.limit)
            for remote, (old, new) in topics.items()
        }
        reached = {remote: old for remote, (old, _new) in topics.items()}
        while steps:
            requests = [NewPartitions(remote, counts[0]) for remote, counts in steps.items()]
            futures = self._requests.chunked(
                self._flow.target,
                "add partitions",
                requests,
                lambda request: request.new_total_count - reached[request.topic],
                lambda request: request.topic,
                lambda chunk: self._target_admin.create_partitions(
                    chunk, operation_timeout=self._timeout, request_timeout=self._request_timeout
                ),
            )
            for remote, future in futures.items():
                counts = steps[remote]
                action = f"grow to {counts[0]} partitions"
                outcome = self._requests.result(self._flow.target, remote, action, future, failures)
                if outcome is FAILED:
                    del steps[remote]  # failed (counted): tried again next round
                    continue
                reached[remote] = counts.pop(0)
                if not counts:
                    del steps[remote]
        for remote, (old, _wanted) in topics.items():
            if reached[remote] > old:
                changes.append(
                    f"grew {self._flow.target}:{remote} from {old} to {reached[remote]} partitions"
                )

    def _raise_if_failed(self, what: str, changes: list[str], failures: list[str]) -> None:
        if not failures:
            return
        listed = "; ".join(failures[:_MAX_LISTED_FAILURES])
        more = len(failures) - _MAX_LISTED_FAILURES
        if more > 0:
            listed += f"; and {more} more"
        done = f" ({len(changes)} other changes went through)" if changes else ""
        raise TopicSyncError(
            f"flow {self._flow.name}: could not {what} for {len(failures)} topic"
            f"{'s' if len(failures) != 1 else ''}{done}: {listed}",
            changes,
        )
