package srm.driver;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;

/**
 * The write half of a source task's batch: every Spark partition of a Kafka source
 * DataFrame (one upstream topic partition, in offset order) is written to its remote
 * topic partition with key, value, headers and timestamp unchanged.
 *
 * <p>Spark's own Kafka sink drops the timestamp column (Spark 4.0), so this writer owns the
 * producer. Records stay in the JVM: Python only passes the plan and reads one summary
 * line per partition.
 *
 * <p>Plan per upstream partition ("topic/partition" -> "remote/skip/downStart"): the first
 * {@code skip} records that pass the origin filter are already on the target (written by
 * a batch that crashed) and are not sent again; the record with index i among those that
 * pass lands at downstream offset {@code downStart + i}. Every acknowledged offset is
 * checked against that; a mismatch means someone else writes to the remote partition and
 * fails the task, which Spark must not retry (spark.task.maxFailures=1).
 *
 * <p>Summary per partition, tab separated: topic, partition, passed, skipped, written,
 * dropped, firstUp, lastUp, valueBytes, latencySumMs, latencyMaxMs, lastDown, syncs, where
 * syncs is "up:down,up:down..." for the first and last record and both sides of every
 * upstream gap.
 *
 * <p>With a {@code copyHeader} (identity policy: the remote partition is the target's own
 * topic, written by its producers too) there is no offset check and no skip: each copy
 * carries "source/upstreamOffset" in that header, the restart looks for the last one, and
 * syncs come from the acknowledged offsets.
 */
public final class RangeCopier {
    private static final ConcurrentHashMap<String, KafkaProducer<byte[], byte[]>> PRODUCERS =
            new ConcurrentHashMap<>();

    /** Copy tasks running in this JVM; after a failed job the driver waits for zero. */
    private static final java.util.concurrent.atomic.AtomicInteger ACTIVE =
            new java.util.concurrent.atomic.AtomicInteger();

    private RangeCopier() {}

    /** Copy tasks still running in this JVM (local mode: every task of the driver). */
    public static int activeTasks() {
        return ACTIVE.get();
    }

    /** Runs one Spark job over {@code source}; returns one summary line per non-empty partition. */
    public static List<String> copy(
            Dataset<Row> source,
            Map<String, String> producerConfig,
            Map<String, String> plan,
            String originHeader,
            String copyHeader,
            String originAlias,
            String targetAlias) {
        Job job = new Job(
                new TreeMap<>(producerConfig), new HashMap<>(plan), originHeader, copyHeader, originAlias,
                targetAlias);
        JavaRDD<InternalRow> rows = source.queryExecution().toRdd().toJavaRDD();
        return rows.mapPartitions((FlatMapFunction<Iterator<InternalRow>, String>) it -> {
                    ACTIVE.incrementAndGet();
                    try {
                        return copyRows(it, job);
                    } finally {
                        ACTIVE.decrementAndGet();
                    }
                })
                .collect();
    }

    /** Closes cached producers (tests, shutdown). */
    public static void closeProducers() {
        for (String key : PRODUCERS.keySet()) {
            KafkaProducer<byte[], byte[]> producer = PRODUCERS.remove(key);
            if (producer != null) {
                producer.close();
            }
        }
    }

    private static KafkaProducer<byte[], byte[]> producer(TreeMap<String, String> config) {
        return PRODUCERS.computeIfAbsent(config.toString(), key -> {
            Properties props = new Properties();
            props.putAll(config);
            return new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
        });
    }

    private static void discard(TreeMap<String, String> config, KafkaProducer<byte[], byte[]> producer) {
        if (PRODUCERS.remove(config.toString(), producer)) {
            producer.close(Duration.ofSeconds(5));
        }
    }

    // Column positions of Spark's Kafka source with includeHeaders=true.
    private static final int KEY = 0;
    private static final int VALUE = 1;
    private static final int TOPIC = 2;
    private static final int PARTITION = 3;
    private static final int OFFSET = 4;
    private static final int TIMESTAMP = 5;
    private static final int HEADERS = 7;

    /** What every task of one copy job needs; shipped to the executors with the closure. */
    private static final class Job implements java.io.Serializable {
        private static final long serialVersionUID = 1L;
        final TreeMap<String, String> config;
        final HashMap<String, String> plans;
        final String originHeader;
        final String copyHeader;
        final String originAlias;
        final String targetAlias;

        Job(TreeMap<String, String> config, HashMap<String, String> plans, String originHeader,
                String copyHeader, String originAlias, String targetAlias) {
            this.config = config;
            this.plans = plans;
            this.originHeader = originHeader;
            this.copyHeader = copyHeader;
            this.originAlias = originAlias;
            this.targetAlias = targetAlias;
        }
    }

    private static Iterator<String> copyRows(Iterator<InternalRow> rows, Job job) {
        if (!rows.hasNext()) {
            return new ArrayList<String>().iterator();
        }
        KafkaProducer<byte[], byte[]> producer = producer(job.config);
        AtomicReference<Exception> failure = new AtomicReference<>();
        AtomicLong latencySum = new AtomicLong();
        AtomicLong latencyMax = new AtomicLong();
        String topic = null;
        int partition = -1;
        String remote = null;
        long skip = 0;
        long downStart = 0;
        long passed = 0;
        long skipped = 0;
        long written = 0;
        long dropped = 0;
        long firstUp = -1;
        long prevUp = -1;
        long lastUp = -1;
        long valueBytes = 0;
        StringBuilder syncs = new StringBuilder();
        long lastSyncUp = -1;
        boolean shared = job.copyHeader != null;
        AckSyncs ackSyncs = new AckSyncs();
        try {
            while (rows.hasNext()) {
                InternalRow row = rows.next();
                if (topic == null) {
                    topic = row.getUTF8String(TOPIC).toString();
                    partition = row.getInt(PARTITION);
                    String entry = job.plans.get(topic + "/" + partition);
                    if (entry == null) {
                        throw new IllegalStateException("no plan for " + topic + "-" + partition);
                    }
                    String[] parts = entry.split("/");
                    remote = parts[0];
                    skip = Long.parseLong(parts[1]);
                    downStart = Long.parseLong(parts[2]);
                }
                long up = row.getLong(OFFSET);
                List<Header> headers = headers(row);
                if (job.originHeader != null) {
                    String stamped = stampedOrigin(headers, job.originHeader, topic + "-" + partition + "@" + up);
                    if (job.targetAlias.equals(stamped)) {
                        dropped++;  // first produced on the target: copying it back would loop
                        continue;
                    }
                    if (stamped == null) {
                        headers.add(new RecordHeader(job.originHeader, job.originAlias.getBytes(StandardCharsets.UTF_8)));
                    }
                }
                if (shared) {
                    // The remote partition has other writers: say which upstream record
                    // this is, so a restart can find the last one that landed.
                    headers.removeIf(h -> h.key().equals(job.copyHeader));
                    headers.add(new RecordHeader(
                            job.copyHeader, (job.originAlias + "/" + up).getBytes(StandardCharsets.UTF_8)));
                }
                long down = downStart + passed;
                if (firstUp < 0) {
                    firstUp = up;
                    lastSyncUp = appendSync(syncs, up, down);
                } else if (up != prevUp + 1) {
                    if (lastSyncUp != prevUp) {
                        appendSync(syncs, prevUp, down - 1);
                    }
                    lastSyncUp = appendSync(syncs, up, down);
                }
                prevUp = up;
                lastUp = up;
                passed++;
                if (passed <= skip) {
                    skipped++;
                    continue;
                }
                if (failure.get() != null) {
                    break;
                }
                byte[] key = row.isNullAt(KEY) ? null : row.getBinary(KEY);
                byte[] value = row.isNullAt(VALUE) ? null : row.getBinary(VALUE);
                long micros = row.getLong(TIMESTAMP);
                Long timestamp = micros < 0 ? null : Math.floorDiv(micros, 1000L);
                valueBytes += value == null ? 0 : value.length;
                ProducerRecord<byte[], byte[]> record =
                        new ProducerRecord<>(remote, partition, timestamp, key, value, headers);
                final long expected = down;
                final long upstream = up;
                final String where = remote + "-" + partition;
                producer.send(record, (metadata, error) -> {
                    if (error != null) {
                        stop(failure, error, producer);
                    } else if (shared) {
                        ackSyncs.ack(upstream, metadata.offset());
                    } else if (metadata.offset() != expected) {
                        stop(failure, new IllegalStateException(
                                "remote partition " + where + " took a record at offset " + metadata.offset()
                                        + " where offset " + expected + " was expected: something else writes"
                                        + " to it; replication of this partition stops"), producer);
                    }
                    if (error == null && timestamp != null) {
                        long latency = System.currentTimeMillis() - timestamp;
                        latencySum.addAndGet(latency);
                        latencyMax.accumulateAndGet(latency, Math::max);
                    }
                });
                written++;
            }
            producer.flush();
        } catch (RuntimeException e) {
            failure.compareAndSet(null, e);
        }
        Exception error = failure.get();
        if (error != null) {
            discard(job.config, producer);
            throw new IllegalStateException(
                    "copy of " + topic + "-" + partition + " failed: " + error.getMessage(), error);
        }
        long lastDown = passed > 0 ? downStart + passed - 1 : -1;
        if (shared) {
            syncs = ackSyncs.finish();
            lastDown = ackSyncs.lastDown;
        } else if (lastUp >= 0 && lastSyncUp != lastUp) {
            appendSync(syncs, lastUp, lastDown);
        }
        String summary = String.join("\t",
                topic, Integer.toString(partition), Long.toString(passed), Long.toString(skipped),
                Long.toString(written), Long.toString(dropped), Long.toString(firstUp),
                Long.toString(lastUp), Long.toString(valueBytes), Long.toString(latencySum.get()),
                Long.toString(latencyMax.get()), Long.toString(lastDown), syncs.toString());
        List<String> out = new ArrayList<>(1);
        out.add(summary);
        return out.iterator();
    }

    /**
     * First failure of a partition: abort everything still queued (close with no wait, the
     * only close allowed on the producer's own thread), so that the target keeps a prefix of
     * the batch and nothing after a hole. The resume logic relies on that prefix.
     */
    private static void stop(AtomicReference<Exception> failure, Exception error, KafkaProducer<byte[], byte[]> producer) {
        if (failure.compareAndSet(null, error)) {
            producer.close(Duration.ZERO);
        }
    }

    /**
     * Offset syncs from acknowledgements, for a remote partition with other writers:
     * the first and last record and both sides of every gap, upstream or downstream.
     * Acknowledgements of one partition arrive in order on the producer's thread.
     */
    private static final class AckSyncs {
        private final StringBuilder syncs = new StringBuilder();
        private long prevUp = -1;
        private long prevDown = -1;
        private long lastSyncUp = -1;
        long lastDown = -1;

        synchronized void ack(long up, long down) {
            if (prevUp < 0) {
                lastSyncUp = appendSync(syncs, up, down);
            } else if (up != prevUp + 1 || down != prevDown + 1) {
                if (lastSyncUp != prevUp) {
                    appendSync(syncs, prevUp, prevDown);
                }
                lastSyncUp = appendSync(syncs, up, down);
            }
            prevUp = up;
            prevDown = down;
            lastDown = down;
        }

        synchronized StringBuilder finish() {
            if (prevUp >= 0 && lastSyncUp != prevUp) {
                lastSyncUp = appendSync(syncs, prevUp, prevDown);
            }
            return syncs;
        }
    }

    private static long appendSync(StringBuilder syncs, long up, long down) {
        if (syncs.length() > 0) {
            syncs.append(',');
        }
        syncs.append(up).append(':').append(down);
        return up;
    }

    private static List<Header> headers(InternalRow row) {
        List<Header> headers = new ArrayList<>();
        if (row.isNullAt(HEADERS)) {
            return headers;
        }
        ArrayData array = row.getArray(HEADERS);
        for (int i = 0; i < array.numElements(); i++) {
            InternalRow header = array.getStruct(i, 2);
            String key = header.getUTF8String(0).toString();
            byte[] value = header.isNullAt(1) ? null : header.getBinary(1);
            headers.add(new RecordHeader(key, value));
        }
        return headers;
    }

    /** The first origin header's alias, or null when the record has none (it was produced on the source). */
    private static String stampedOrigin(List<Header> headers, String name, String where) {
        for (Header header : headers) {
            if (!header.key().equals(name)) {
                continue;
            }
            byte[] value = header.value();
            String origin = value == null ? "" : new String(value, StandardCharsets.UTF_8);
            if (origin.isEmpty() || !Arrays.equals(origin.getBytes(StandardCharsets.UTF_8), value)) {
                throw new IllegalStateException("record " + where + " has a malformed '" + name
                        + "' header; it must hold a cluster alias in UTF-8");
            }
            return origin;
        }
        return null;
    }
}
