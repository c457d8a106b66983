package srm.copier;

import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.common.TopicPartition;

/**
 * What the driver wants one flow's unit in a slot to do, from one control answer (its
 * {@code version}, reported back once the unit applied it): {@code epoch} (raised by the driver after it re-planned a unit that broke), the clients'
 * settings, the origin/copy header settings of a shared (identity policy) target, and the
 * plan of every partition. A partition missing here is to be stopped.
 */
final class UnitPlan {
    static final class Partition {
        final long plan;
        final String remote;
        final long start;
        final long down;
        final long reserve;

        Partition(long plan, String remote, long start, long down, long reserve) {
            this.plan = plan;
            this.remote = remote;
            this.start = start;
            this.down = down;
            this.reserve = reserve;
        }
    }

    final String flow;
    final long version;
    final long epoch;
    final Properties consumer;
    final Properties producer;
    final String originHeader;
    final String copyHeader;
    final String sourceAlias;
    final String targetAlias;
    final long pollMillis;
    final Map<TopicPartition, Partition> partitions;

    UnitPlan(String flow, long version, long epoch, Properties consumer, Properties producer, String originHeader,
            String copyHeader, String sourceAlias, String targetAlias, long pollMillis,
            Map<TopicPartition, Partition> partitions) {
        this.flow = flow;
        this.version = version;
        this.epoch = epoch;
        this.consumer = consumer;
        this.producer = producer;
        this.originHeader = originHeader;
        this.copyHeader = copyHeader;
        this.sourceAlias = sourceAlias;
        this.targetAlias = targetAlias;
        this.pollMillis = pollMillis;
        this.partitions = partitions;
    }

    boolean shared() {
        return copyHeader != null;
    }

    /** Parse the unit's entry of a control answer (see {@code srm_driver.copying.protocol}). */
    @SuppressWarnings("unchecked")
    static UnitPlan parse(String flow, long version, Map<String, Object> body) {
        Map<String, Object> settings = (Map<String, Object>) body.get("settings");
        Map<TopicPartition, Partition> partitions = new HashMap<>();
        for (Object item : (Iterable<Object>) body.get("partitions")) {
            Map<String, Object> p = (Map<String, Object>) item;
            TopicPartition tp = new TopicPartition((String) p.get("topic"), number(p, "partition").intValue());
            partitions.put(tp, new Partition(
                    number(p, "plan").longValue(),
                    (String) p.get("remote"),
                    number(p, "start").longValue(),
                    number(p, "down").longValue(),
                    number(p, "reserve").longValue()));
        }
        return new UnitPlan(
                flow,
                version,
                number(body, "epoch").longValue(),
                properties((Map<String, Object>) settings.get("consumer")),
                properties((Map<String, Object>) settings.get("producer")),
                (String) settings.get("origin_header"),
                (String) settings.get("copy_header"),
                (String) settings.get("source"),
                (String) settings.get("target"),
                number(settings, "poll_ms").longValue(),
                partitions);
    }

    private static Number number(Map<String, Object> map, String key) {
        Object value = map.get(key);
        if (!(value instanceof Number)) {
            throw new IllegalArgumentException("control answer: '" + key + "' is not a number: " + value);
        }
        return (Number) value;
    }

    private static Properties properties(Map<String, Object> values) {
        Properties props = new Properties();
        for (Map.Entry<String, Object> entry : values.entrySet()) {
            props.put(entry.getKey(), String.valueOf(entry.getValue()));
        }
        return props;
    }
}
