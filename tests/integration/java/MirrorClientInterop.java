/*
 * Oracle for SRM's Python mirror client: MM2's own MirrorClient and RemoteClusterUtils
 * answer the same questions on a real cluster.
 *
 *   java -cp "<kafka jars>/*" tests/integration/java/MirrorClientInterop.java <request.json> <out.json>
 *
 * Needs connect-mirror-client, kafka-clients and jackson-databind (all in the Kafka
 * runtime folder). Single-file source launch; Kafka 4.x classes need Java 17.
 *
 * Request: {"properties": {"bootstrap.servers": ...},     the MirrorClient configuration
 *           "timeout_ms": 30000,                          translateOffsets' timeout
 *           "hops": ["A", ...],                           aliases for replicationHops
 *           "sources": ["A", ...],                        sources for remoteTopics(source)
 *           "translate": [{"remote_alias": "A", "group": "g"}, ...]}
 * Output:  {"kafka_version", "heartbeat_topics", "checkpoint_topics", "upstream_clusters",
 *           "remote_topics": [...], "remote_topics_by_source": {"A": [...]},
 *           "replication_hops": {"A": 1, "X": -1},
 *           "translate_offsets": [{"remote_alias", "group",
 *                                  "offsets": [{"topic", "partition", "offset", "metadata"}]}]}
 * Name lists are sorted so that runs compare as text.
 */

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.AppInfoParser;
import org.apache.kafka.connect.mirror.MirrorClient;
import org.apache.kafka.connect.mirror.RemoteClusterUtils;

public class MirrorClientInterop {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: MirrorClientInterop <request.json> <out.json>");
            System.exit(2);
        }
        JsonNode request = MAPPER.readTree(new File(args[0]));
        Map<String, Object> properties = new HashMap<>();
        for (Map.Entry<String, JsonNode> entry : request.get("properties").properties()) {
            properties.put(entry.getKey(), entry.getValue().asText());
        }
        Duration timeout = Duration.ofMillis(request.path("timeout_ms").asLong(30000));

        ObjectNode out = MAPPER.createObjectNode();
        out.put("kafka_version", AppInfoParser.getVersion());
        try (MirrorClient client = new MirrorClient(properties)) {
            out.set("heartbeat_topics", sorted(client.heartbeatTopics()));
            out.set("checkpoint_topics", sorted(client.checkpointTopics()));
            out.set("upstream_clusters", sorted(client.upstreamClusters()));
            out.set("remote_topics", sorted(client.remoteTopics()));
            ObjectNode bySource = out.putObject("remote_topics_by_source");
            for (JsonNode source : request.path("sources")) {
                bySource.set(source.asText(), sorted(client.remoteTopics(source.asText())));
            }
            ObjectNode hops = out.putObject("replication_hops");
            for (JsonNode alias : request.path("hops")) {
                hops.put(alias.asText(), client.replicationHops(alias.asText()));
            }
        }

        ArrayNode translations = out.putArray("translate_offsets");
        for (JsonNode ask : request.path("translate")) {
            String alias = ask.get("remote_alias").asText();
            String group = ask.get("group").asText();
            Map<TopicPartition, OffsetAndMetadata> offsets =
                RemoteClusterUtils.translateOffsets(properties, alias, group, timeout);
            ObjectNode entry = translations.addObject();
            entry.put("remote_alias", alias);
            entry.put("group", group);
            List<TopicPartition> partitions = new ArrayList<>(offsets.keySet());
            partitions.sort((a, b) -> a.topic().equals(b.topic())
                ? Integer.compare(a.partition(), b.partition()) : a.topic().compareTo(b.topic()));
            ArrayNode list = entry.putArray("offsets");
            for (TopicPartition partition : partitions) {
                OffsetAndMetadata offset = offsets.get(partition);
                ObjectNode item = list.addObject();
                item.put("topic", partition.topic());
                item.put("partition", partition.partition());
                item.put("offset", offset.offset());
                item.put("metadata", offset.metadata());
            }
        }
        MAPPER.writerWithDefaultPrettyPrinter().writeValue(new File(args[1]), out);
    }

    private static ArrayNode sorted(Collection<String> names) {
        ArrayNode array = MAPPER.createArrayNode();
        new TreeSet<>(names).forEach(array::add);
        return array;
    }
}
