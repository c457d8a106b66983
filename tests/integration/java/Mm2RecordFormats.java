/*
 * Oracle for SRM's MM2 record codecs: MirrorMaker 2's own classes encode and decode the
 * vectors of libs/srm_common/tests/golden/mm2_records.json (or a file of the same shape).
 *
 *   java -cp "<kafka jars>/*" tests/integration/java/Mm2RecordFormats.java <vectors.json> [<out.json>]
 *
 * Needs the connect-mirror, connect-mirror-client, connect-json and jackson-databind jars
 * (all in the Kafka runtime folder). Single-file source launch, Java 11 syntax; Kafka 4.x
 * classes themselves need Java 17.
 *
 * Input sections (each optional): "heartbeats", "checkpoints", "offset_syncs" (logical
 * fields plus key_hex/value_hex), "trailing_bytes" and "malformed" (kind plus
 * key_hex/value_hex), "connect_offsets" (connector, partition fields, offset, key_hex,
 * value_hex). Output (stdout, or <out.json>):
 *
 *   {"kafka_version": "...",
 *    "records":  [{"name", "kind", "key_hex", "value_hex"}]       MM2's bytes for the fields
 *    "decoded":  [{"name", "kind", "fields" | "error"}]           MM2 reading the given bytes
 *    "connect_offsets": [{"name", "map_class", "key_hex", "value_hex",   JsonConverter bytes
 *                         "decoded_key", "decoded_value"}]}              JsonConverter reading
 *
 * Package-private MM2 methods (recordKey, recordValue, connectPartition, wrapPartition) are
 * called by reflection; they are what MM2's tasks hand to the producer and to Connect.
 */

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.AppInfoParser;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.mirror.Checkpoint;
import org.apache.kafka.connect.mirror.Heartbeat;
import org.apache.kafka.connect.mirror.MirrorUtils;
import org.apache.kafka.connect.mirror.OffsetSync;

public class Mm2RecordFormats {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final String OFFSETS_TOPIC = "mm2-offsets.A.internal";

    public static void main(String[] args) throws Exception {
        if (args.length < 1 || args.length > 2) {
            System.err.println("usage: Mm2RecordFormats <vectors.json> [<out.json>]");
            System.exit(2);
        }
        JsonNode vectors = MAPPER.readTree(new File(args[0]));
        ObjectNode result = MAPPER.createObjectNode();
        result.put("kafka_version", AppInfoParser.getVersion());

        ArrayNode records = result.putArray("records");
        ArrayNode decoded = result.putArray("decoded");
        String[][] sections = {
            {"heartbeats", "heartbeat"}, {"checkpoints", "checkpoint"}, {"offset_syncs", "offset_sync"}
        };
        for (String[] section : sections) {
            for (JsonNode vector : vectors.path(section[0])) {
                records.add(encode(section[1], vector));
                decoded.add(decode(section[1], vector));
            }
        }
        for (String section : new String[] {"trailing_bytes", "malformed"}) {
            for (JsonNode vector : vectors.path(section)) {
                decoded.add(decode(vector.get("kind").asText(), vector));
            }
        }

        JsonConverter keyConverter = new JsonConverter();
        keyConverter.configure(Map.of("schemas.enable", "false"), true);
        JsonConverter valueConverter = new JsonConverter();
        valueConverter.configure(Map.of("schemas.enable", "false"), false);
        ArrayNode offsets = result.putArray("connect_offsets");
        for (JsonNode vector : vectors.path("connect_offsets")) {
            offsets.add(connectOffset(vector, keyConverter, valueConverter));
        }

        if (args.length == 2) {
            MAPPER.writerWithDefaultPrettyPrinter().writeValue(new File(args[1]), result);
        } else {
            System.out.println(MAPPER.writerWithDefaultPrettyPrinter().writeValueAsString(result));
        }
    }

    /** MM2's key and value bytes for the vector's logical fields. */
    private static ObjectNode encode(String kind, JsonNode v) throws Exception {
        Object record;
        switch (kind) {
            case "heartbeat":
                record = new Heartbeat(
                    v.get("source_cluster_alias").asText(),
                    v.get("target_cluster_alias").asText(),
                    v.get("timestamp_ms").asLong());
                break;
            case "checkpoint":
                record = new Checkpoint(
                    v.get("consumer_group_id").asText(),
                    new TopicPartition(v.get("topic").asText(), v.get("partition").asInt()),
                    v.get("upstream_offset").asLong(),
                    v.get("downstream_offset").asLong(),
                    v.get("metadata").asText());
                break;
            case "offset_sync":
                record = new OffsetSync(
                    new TopicPartition(v.get("topic").asText(), v.get("partition").asInt()),
                    v.get("upstream_offset").asLong(),
                    v.get("downstream_offset").asLong());
                break;
            default:
                throw new IllegalArgumentException("unknown record kind " + kind);
        }
        ObjectNode out = MAPPER.createObjectNode();
        out.put("name", v.get("name").asText());
        out.put("kind", kind);
        out.put("key_hex", hex((byte[]) invoke(record, "recordKey")));
        out.put("value_hex", hex((byte[]) invoke(record, "recordValue")));
        return out;
    }

    /** MM2's deserializeRecord applied to the vector's bytes: the fields, or the error. */
    private static ObjectNode decode(String kind, JsonNode v) {
        ObjectNode out = MAPPER.createObjectNode();
        out.put("name", v.get("name").asText());
        out.put("kind", kind);
        ConsumerRecord<byte[], byte[]> record = new ConsumerRecord<>(
            "vectors", 0, 0L, unhex(v.get("key_hex").asText()), unhex(v.get("value_hex").asText()));
        ObjectNode fields = MAPPER.createObjectNode();
        try {
            switch (kind) {
                case "heartbeat": {
                    Heartbeat h = Heartbeat.deserializeRecord(record);
                    fields.put("source_cluster_alias", h.sourceClusterAlias());
                    fields.put("target_cluster_alias", h.targetClusterAlias());
                    fields.put("timestamp_ms", h.timestamp());
                    break;
                }
                case "checkpoint": {
                    Checkpoint c = Checkpoint.deserializeRecord(record);
                    fields.put("consumer_group_id", c.consumerGroupId());
                    fields.put("topic", c.topicPartition().topic());
                    fields.put("partition", c.topicPartition().partition());
                    fields.put("upstream_offset", c.upstreamOffset());
                    fields.put("downstream_offset", c.downstreamOffset());
                    fields.put("metadata", c.metadata());
                    break;
                }
                case "offset_sync": {
                    OffsetSync s = OffsetSync.deserializeRecord(record);
                    fields.put("topic", s.topicPartition().topic());
                    fields.put("partition", s.topicPartition().partition());
                    fields.put("upstream_offset", s.upstreamOffset());
                    fields.put("downstream_offset", s.downstreamOffset());
                    break;
                }
                default:
                    throw new IllegalArgumentException("unknown record kind " + kind);
            }
            out.set("fields", fields);
        } catch (RuntimeException | AssertionError e) {
            // What MM2's own reader does with these bytes is the answer being recorded.
            out.put("error", e.getClass().getName() + ": " + e.getMessage());
        }
        return out;
    }

    /** JsonConverter's bytes for the partition map MM2 itself builds, and its reading of ours. */
    private static ObjectNode connectOffset(JsonNode v, JsonConverter keys, JsonConverter values)
            throws Exception {
        String connector = v.get("connector").asText();
        JsonNode p = v.get("partition");
        Object map;
        if (p.has("cluster")) {
            Method wrap = MirrorUtils.class.getDeclaredMethod(
                "wrapPartition", TopicPartition.class, String.class);
            wrap.setAccessible(true);
            map = wrap.invoke(null,
                new TopicPartition(p.get("topic").asText(), p.get("partition").asInt()),
                p.get("cluster").asText());
        } else if (p.has("group")) {
            Checkpoint checkpoint = new Checkpoint(p.get("group").asText(),
                new TopicPartition(p.get("topic").asText(), p.get("partition").asInt()), 0L, 0L, "");
            map = invoke(checkpoint, "connectPartition");
        } else {
            Heartbeat heartbeat = new Heartbeat(
                p.get("sourceClusterAlias").asText(), p.get("targetClusterAlias").asText(), 0L);
            map = invoke(heartbeat, "connectPartition");
        }
        ObjectNode out = MAPPER.createObjectNode();
        out.put("name", v.get("name").asText());
        out.put("map_class", map.getClass().getName());
        // Connect's OffsetStorageWriter serializes the key as the list [connector, partition].
        out.put("key_hex", hex(keys.fromConnectData(OFFSETS_TOPIC, null, Arrays.asList(connector, map))));
        out.put("value_hex", hex(values.fromConnectData(
            OFFSETS_TOPIC, null, MirrorUtils.wrapOffset(v.get("offset").asLong()))));
        out.set("decoded_key", MAPPER.valueToTree(
            keys.toConnectData(OFFSETS_TOPIC, unhex(v.get("key_hex").asText())).value()));
        out.set("decoded_value", MAPPER.valueToTree(
            values.toConnectData(OFFSETS_TOPIC, unhex(v.get("value_hex").asText())).value()));
        return out;
    }

    private static Object invoke(Object target, String method) throws Exception {
        Method m = target.getClass().getDeclaredMethod(method);
        m.setAccessible(true);
        try {
            return m.invoke(target);
        } catch (InvocationTargetException e) {
            throw e.getCause() instanceof Exception ? (Exception) e.getCause() : e;
        }
    }

    private static String hex(byte[] bytes) {
        StringBuilder s = new StringBuilder(bytes.length * 2);
        for (byte b : bytes) {
            s.append(String.format("%02x", b & 0xff));
        }
        return s.toString();
    }

    private static byte[] unhex(String hex) {
        byte[] bytes = new byte[hex.length() / 2];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
        }
        return bytes;
    }
}
