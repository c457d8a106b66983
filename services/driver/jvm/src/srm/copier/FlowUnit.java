package srm.copier;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * One flow's copy loop in one slot: a consumer of the source, a producer to the target,
 * and the partitions the driver planned here. Records never leave the JVM.
 *
 * <p>Rules that keep the copy exactly once (docs/driver.md):
 * <ul>
 *   <li>the producer is idempotent (up to 5 requests in flight, kept in order) and never
 *       lingers; nothing is handed to it without a valid {@link Lease} or past a
 *       partition's reservation;
 *   <li>every acknowledged offset must be the planned one (unless the target is shared);
 *       a different one means another writer: the unit breaks;
 *   <li>the first failed send breaks the unit: the producer is closed at once, so nothing
 *       queued behind the failure lands after a hole, and every partition of the unit
 *       waits for a new plan (a higher epoch) made after the driver reconciled it;
 *   <li>a partition-level problem (a malformed origin header, an offset out of range)
 *       stops that partition only; the driver re-plans or halts it.
 * </ul>
 */
final class FlowUnit implements Runnable {
    private final String flow;
    private final Lease lease;
    private final Runnable nudge;
    private volatile UnitPlan desired;
    private volatile boolean stopRequested;
    private volatile boolean exited;
    private final Map<TopicPartition, PartitionCopy> partitions = new ConcurrentHashMap<>();
    private final Set<String> confirmedStopped = ConcurrentHashMap.newKeySet();
    private final AtomicReference<Map<String, Object>> failure = new AtomicReference<>();
    private volatile long brokenEpoch = -1;
    private volatile String pollError;
    private volatile KafkaProducer<byte[], byte[]> producer;
    private KafkaConsumer<byte[], byte[]> consumer;
    private long appliedEpoch;
    // The version of the last answer whose plans are applied (every partition it started
    // is in the map before this is set; report() reads it before the map).
    private volatile long appliedVersion = -1;
    private long endsSeenAt;

    FlowUnit(UnitPlan plan, Lease lease, Runnable nudge) {
        this.flow = plan.flow;
        this.desired = plan;
        this.lease = lease;
        this.nudge = nudge;
        this.appliedEpoch = plan.epoch;
    }

    void update(UnitPlan plan) {
        desired = plan;
    }

    /** This unit's own lease: its flow's, granted by the slot from each answer. */
    Lease lease() {
        return lease;
    }

    /** Stop sending, let what was sent be acknowledged, close the clients, exit. */
    void requestStop() {
        stopRequested = true;
    }

    boolean exited() {
        return exited;
    }

    @Override
    public void run() {
        try {
            loop();
        } catch (Throwable t) {
            breakUnit("transient", null, -1, "copy loop of " + flow + " failed: " + t, t.getClass().getName());
        } finally {
            for (PartitionCopy p : partitions.values()) {
                p.stop(null);
            }
            closeClients();
            exited = true;
            nudge.run();
        }
    }

    private void loop() {
        consumer = new KafkaConsumer<>(desired.consumer, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        while (!stopRequested) {
            UnitPlan plan = desired;
            if (failure.get() != null) {
                // A plan applied while the failure was being recorded may have added a
                // partition after breakUnit stopped the others: stop it too.
                for (PartitionCopy p : partitions.values()) {
                    p.stop(null);
                }
                if (plan.epoch <= brokenEpoch || !allStopped()) {
                    sleep(20);
                    continue;
                }
                // Re-planned after the driver reconciled: a new producer, new plans.
                producer = null;
                appliedEpoch = plan.epoch;
                failure.set(null);
            }
            applyPlans(plan);
            if (!lease.valid()) {
                if (!partitions.isEmpty() && anyNotStopped()) {
                    breakUnit("lease", null, -1, "the lease of " + flow + " ran out in this slot (no"
                            + " answer from the driver, or the driver holds none for this flow now)", null);
                }
                sleep(50);
                continue;
            }
            if (!anySending()) {
                sleep(20);
                continue;
            }
            ConsumerRecords<byte[], byte[]> records;
            try {
                records = consumer.poll(Duration.ofMillis(plan.pollMillis));
                pollError = null;
            } catch (OffsetOutOfRangeException e) {
                outOfRange(e);
                continue;
            } catch (WakeupException | InterruptException e) {
                continue;
            } catch (KafkaException e) {
                pollError = "reading " + plan.sourceAlias + ": " + e;
                nudge.run();
                sleep(1000);
                continue;
            }
            copy(plan, records);
            seeEnds();
        }
        for (PartitionCopy p : partitions.values()) {
            p.stop(null);
        }
    }

    private void copy(UnitPlan plan, ConsumerRecords<byte[], byte[]> records) {
        for (TopicPartition tp : records.partitions()) {
            PartitionCopy p = partitions.get(tp);
            if (p == null || !p.sending()) {
                continue;
            }
            for (ConsumerRecord<byte[], byte[]> record : records.records(tp)) {
                if (record.offset() < p.nextSend) {
                    continue; // fetched before a seek
                }
                if (record.offset() >= p.reserve()) {
                    // Nothing lies between the last record sent and this one (the fetch
                    // skipped a gap): this is where sending goes on, and what the driver
                    // must reserve past.
                    p.nextSend = record.offset();
                    p.awaitReservation(record.timestamp());
                    consumer.pause(Collections.singleton(tp));
                    consumer.seek(tp, record.offset());
                    nudge.run();
                    break;
                }
                if (!lease.valid() || failure.get() != null) {
                    // The rest of this poll is not sent: the consumer is now ahead of what
                    // was sent. Break the unit (if not broken already): every partition is
                    // re-planned and sought to an exact position before it sends again.
                    breakUnit("lease", null, -1, "the lease of " + flow + " ran out in this slot while copying",
                            null);
                    return;
                }
                if (!send(plan, p, record)) {
                    break;
                }
            }
        }
    }

    /** Hand one record to the producer; false when the partition stopped on it. */
    private boolean send(UnitPlan plan, PartitionCopy p, ConsumerRecord<byte[], byte[]> record) {
        Headers headers = record.headers();
        if (plan.originHeader != null) {
            OriginRule.Action action;
            try {
                action = OriginRule.decide(headers, plan.originHeader, plan.targetAlias);
            } catch (OriginRule.MalformedOriginException e) {
                p.stop(error("poison", p.source, record.offset(), e.getMessage(), "MalformedOriginException"));
                consumer.pause(Collections.singleton(p.source));
                nudge.run();
                return false;
            }
            if (action == OriginRule.Action.DROP) {
                p.dropped();
                p.nextSend = record.offset() + 1;
                return true;
            }
            if (action == OriginRule.Action.STAMP) {
                headers.add(plan.originHeader, plan.sourceAlias.getBytes(StandardCharsets.UTF_8));
            }
        }
        if (plan.copyHeader != null) {
            // The remote partition has other writers: say which upstream record this is,
            // so that a restart can find the last one that landed.
            headers.remove(plan.copyHeader);
            headers.add(plan.copyHeader,
                    (plan.sourceAlias + "/" + record.offset()).getBytes(StandardCharsets.UTF_8));
        }
        Long timestamp = record.timestamp() < 0 ? null : record.timestamp();
        ProducerRecord<byte[], byte[]> copy = new ProducerRecord<>(
                p.remote, record.partition(), timestamp, record.key(), record.value(), headers);
        final long up = record.offset();
        final long expected = p.nextDown;
        final long size = record.value() == null ? 0 : record.value().length;
        p.sent(timestamp == null ? -1 : timestamp);
        p.nextSend = up + 1;
        p.nextDown = expected + 1;
        try {
            KafkaProducer<byte[], byte[]> target = producer(plan);
            target.send(copy, (metadata, error) -> acknowledged(p, up, expected, size, timestamp, metadata, error));
            if (size + keyLength(record) > batchSize(plan)) {
                // Alone in its batch: the producer would put the next records in the same
                // batch, and a batch the broker refuses as too large is split and resent
                // without end when one record alone is too large (it then times out
                // instead of failing as the record it is).
                target.flush();
            }
        } catch (RuntimeException e) {
            // Not handed over (the producer was closed by a failure meanwhile, or refused
            // the record before any callback): the callback will not run.
            p.failed();
            breakUnit(kind(e), p.source, up, String.valueOf(e.getMessage()), e.getClass().getName());
            return false;
        }
        return true;
    }

    private void acknowledged(PartitionCopy p, long up, long expected, long size, Long timestamp,
            RecordMetadata metadata, Exception error) {
        if (error != null) {
            p.failed();
            breakUnit(kind(error), p.source, up, String.valueOf(error.getMessage()), error.getClass().getName());
            return;
        }
        long offset = metadata.offset();
        if (offset < 0 && !p.shared) {
            // The broker had this batch already (a retry of one that landed): it is where
            // its sequence put it, right after the previous copy.
            offset = expected;
        }
        if (offset < 0) {
            p.failed(); // a shared partition's copy landed where no sync can say: look again
            breakUnit("transient", p.source, up, "the broker did not say where a copy landed", null);
            return;
        }
        if (!p.shared && offset != expected) {
            p.failed();
            breakUnit("conflict", p.source, up,
                    "remote partition " + p.remote + "-" + p.source.partition() + " took upstream offset "
                            + up + " at offset " + offset + " where offset " + expected
                            + " was planned: something else writes to it",
                    null);
            return;
        }
        // A timestamp ahead of this clock (skew) counts as no latency, not as none.
        long latency = timestamp == null ? -1 : Math.max(0, System.currentTimeMillis() - timestamp);
        p.acked(up, offset, size, latency);
    }

    /**
     * Where each partition's source ends, as the consumer's last fetch said (no request:
     * the fetch responses carry it), at most every 100 ms; reported for the lag.
     */
    private void seeEnds() {
        long now = System.currentTimeMillis();
        if (now - endsSeenAt < 100) {
            return;
        }
        endsSeenAt = now;
        for (PartitionCopy p : partitions.values()) {
            if (p.stopped()) {
                continue;
            }
            try {
                OptionalLong lag = consumer.currentLag(p.source);
                if (lag.isPresent()) {
                    p.sourceEnd(consumer.position(p.source, Duration.ZERO) + lag.getAsLong());
                }
            } catch (RuntimeException e) {
                // Not assigned any more, or no position yet: known at a later poll.
            }
        }
    }

    /**
     * The first failure of the unit: close the producer at once (the only close allowed on
     * its own thread), so that nothing queued behind the failure is sent; every partition
     * stops and waits for a plan of a later epoch.
     */
    private void breakUnit(String kind, TopicPartition tp, long offset, String message, String cls) {
        Map<String, Object> info = error(kind, tp, offset, message, cls);
        if (!failure.compareAndSet(null, info)) {
            return;
        }
        brokenEpoch = desired.epoch;
        for (PartitionCopy p : partitions.values()) {
            p.stop(null);
        }
        KafkaProducer<byte[], byte[]> current = producer;
        if (current != null) {
            current.close(Duration.ZERO);
        }
        nudge.run();
    }

    /** Retriable client errors pass; anything else about one record makes it a poison. */
    private static String kind(Throwable error) {
        if (error instanceof RetriableException || error instanceof org.apache.kafka.common.errors.TimeoutException) {
            return "transient";
        }
        if (error instanceof IllegalStateException || error instanceof InterruptException) {
            return "transient";
        }
        if (error instanceof org.apache.kafka.common.errors.AuthorizationException
                || error instanceof org.apache.kafka.common.errors.AuthenticationException) {
            return "transient";
        }
        return "poison";
    }

    private void outOfRange(OffsetOutOfRangeException e) {
        for (Map.Entry<TopicPartition, Long> entry : e.offsetOutOfRangePartitions().entrySet()) {
            PartitionCopy p = partitions.get(entry.getKey());
            consumer.pause(Collections.singleton(entry.getKey()));
            if (p != null) {
                p.stop(error("out_of_range", p.source, entry.getValue(),
                        "offset " + entry.getValue() + " is no longer (or not yet) in the source partition", null));
            }
        }
        nudge.run();
    }

    /** Start, restart, stop partitions as the plan says; move reservations on. */
    private void applyPlans(UnitPlan plan) {
        boolean reassign = false;
        List<TopicPartition> seek = new ArrayList<>();
        for (Map.Entry<TopicPartition, PartitionCopy> entry : partitions.entrySet()) {
            TopicPartition tp = entry.getKey();
            PartitionCopy p = entry.getValue();
            UnitPlan.Partition wanted = plan.partitions.get(tp);
            if (wanted != null && wanted.plan == p.plan) {
                p.extendReserve(wanted.reserve);
                if (p.maybeResume()) {
                    consumer.seek(tp, p.nextSend);
                    consumer.resume(Collections.singleton(tp));
                }
                continue;
            }
            p.stop(null);
            if (!p.stopped()) {
                continue; // sends of the old plan still pending
            }
            if (wanted == null && !confirmedStopped.contains(key(tp, p.plan))) {
                continue; // the driver has not yet seen it stopped
            }
            partitions.remove(tp);
            confirmedStopped.remove(key(tp, p.plan));
            reassign = true;
        }
        for (Map.Entry<TopicPartition, UnitPlan.Partition> entry : plan.partitions.entrySet()) {
            TopicPartition tp = entry.getKey();
            if (partitions.containsKey(tp)) {
                continue;
            }
            UnitPlan.Partition w = entry.getValue();
            partitions.put(tp, new PartitionCopy(tp, w.plan, w.remote, w.start, w.down, w.reserve, plan.shared()));
            seek.add(tp);
            reassign = true;
        }
        if (reassign) {
            Set<TopicPartition> assigned = new HashSet<>();
            List<TopicPartition> paused = new ArrayList<>();
            for (PartitionCopy p : partitions.values()) {
                if (!p.stopped()) {
                    assigned.add(p.source);
                    if (!p.sending()) {
                        paused.add(p.source);
                    }
                }
            }
            consumer.assign(assigned);
            consumer.pause(paused);
            for (TopicPartition tp : seek) {
                consumer.seek(tp, partitions.get(tp).start);
            }
        }
        appliedVersion = plan.version;
    }

    private static long keyLength(ConsumerRecord<byte[], byte[]> record) {
        return record.key() == null ? 0 : record.key().length;
    }

    private long batchSize = -1;

    private long batchSize(UnitPlan plan) {
        if (batchSize < 0) {
            try {
                batchSize = Long.parseLong(plan.producer.getProperty("batch.size", "16384").trim());
            } catch (NumberFormatException e) {
                batchSize = 16384;
            }
        }
        return batchSize;
    }

    private KafkaProducer<byte[], byte[]> producer(UnitPlan plan) {
        KafkaProducer<byte[], byte[]> current = producer;
        if (current == null) {
            current = new KafkaProducer<>(plan.producer, new ByteArraySerializer(), new ByteArraySerializer());
            producer = current;
        }
        return current;
    }

    private boolean allStopped() {
        for (PartitionCopy p : partitions.values()) {
            if (!p.stopped()) {
                return false;
            }
        }
        return true;
    }

    private boolean anyNotStopped() {
        return !allStopped();
    }

    private boolean anySending() {
        for (PartitionCopy p : partitions.values()) {
            if (p.sending()) {
                return true;
            }
        }
        return false;
    }

    private void closeClients() {
        KafkaProducer<byte[], byte[]> current = producer;
        if (current != null) {
            // Records already handed over were sent under a valid lease: let them land
            // (bounded by delivery.timeout.ms) unless a failure closed the producer.
            current.close(failure.get() == null ? Duration.ofSeconds(60) : Duration.ZERO);
        }
        if (consumer != null) {
            consumer.close(Duration.ofSeconds(5));
        }
    }

    /**
     * This unit's part of a report; {@code syncCounts} gets the number of syncs it includes
     * per partition plan, {@code stopped} the partition plans it shows stopped.
     */
    Map<String, Object> report(boolean boundary, Map<String, Integer> syncCounts, Set<String> stopped) {
        Map<String, Object> entry = new HashMap<>();
        entry.put("applied", appliedVersion);
        entry.put("flow", flow);
        entry.put("epoch", appliedEpoch);
        entry.put("broken", failure.get());
        entry.put("broken_epoch", brokenEpoch);
        entry.put("poll_error", pollError);
        entry.put("exited", exited);
        entry.put("lease_ms", lease.remainingMillis());
        List<Map<String, Object>> items = new ArrayList<>();
        for (PartitionCopy p : partitions.values()) {
            Map<String, Object> item = p.report(boundary);
            @SuppressWarnings("unchecked")
            List<Object> syncs = (List<Object>) item.get("syncs");
            syncCounts.put(key(p.source, p.plan), syncs.size());
            if ("stopped".equals(item.get("state"))) {
                stopped.add(key(p.source, p.plan));
            }
            items.add(item);
        }
        entry.put("partitions", items);
        return entry;
    }

    /** The driver answered a report: drop the syncs it had and forget what it saw stopped. */
    void confirm(Map<String, Integer> syncCounts, Set<String> stopped) {
        for (PartitionCopy p : partitions.values()) {
            Integer count = syncCounts.get(key(p.source, p.plan));
            if (count != null) {
                p.confirmSyncs(count);
            }
        }
        confirmedStopped.addAll(stopped);
    }

    private static String key(TopicPartition tp, long plan) {
        return tp.topic() + "\u0000" + tp.partition() + "\u0000" + plan;
    }

    private static Map<String, Object> error(String kind, TopicPartition tp, long offset, String message, String cls) {
        Map<String, Object> info = new HashMap<>();
        info.put("kind", kind);
        info.put("topic", tp == null ? null : tp.topic());
        info.put("partition", tp == null ? null : tp.partition());
        info.put("offset", offset);
        info.put("message", message);
        info.put("class", cls);
        return info;
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
