package srm.copier;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * Runs the JVM copier's rules over the shared golden cases and prints what they decide:
 * {"origin": {case: action}, "syncs": {case: [[up, down], ...]}, "latency": {...}}. In package srm.copier
 * to reach PartitionCopy; compiled by tests/integration/test_copier_rules.py.
 */
public final class CopierRules {
    public static void main(String[] args) throws Exception {
        ObjectMapper json = new ObjectMapper();
        JsonNode origin = json.readTree(new File(args[0]));
        JsonNode syncs = json.readTree(new File(args[1]));
        Map<String, Object> out = new HashMap<>();
        Map<String, String> actions = new HashMap<>();
        String header = origin.get("header").asText();
        for (JsonNode c : origin.get("cases")) {
            RecordHeaders headers = new RecordHeaders();
            for (JsonNode h : c.get("headers")) {
                JsonNode value = h.get(1);
                byte[] bytes = value.isNull() ? null
                        : value.isObject() ? HexFormat.of().parseHex(value.get("hex").asText())
                        : value.asText().getBytes(StandardCharsets.UTF_8);
                headers.add(h.get(0).asText(), bytes);
            }
            String action;
            try {
                action = OriginRule.decide(headers, header, c.get("target").asText()).name().toLowerCase();
            } catch (OriginRule.MalformedOriginException e) {
                action = "malformed";
            }
            actions.put(c.get("name").asText(), action);
        }
        out.put("origin", actions);
        Map<String, Object> written = new HashMap<>();
        for (JsonNode c : syncs.get("cases")) {
            JsonNode copies = c.get("copies");
            boolean shared = c.get("shared").asBoolean();
            long start = copies.size() > 0 ? copies.get(0).get(0).asLong() : 0;
            long down = copies.size() > 0 ? copies.get(0).get(1).asLong() : 0;
            PartitionCopy p = new PartitionCopy(new TopicPartition("t", 0), 1, "r", start, down, Long.MAX_VALUE, shared);
            for (JsonNode pair : copies) {
                p.sent();
                p.acked(pair.get(0).asLong(), pair.get(1).asLong(), 0, -1);
            }
            @SuppressWarnings("unchecked")
            List<List<Long>> pairs = (List<List<Long>>) p.report(true).get("syncs");
            written.put(c.get("name").asText(), new ArrayList<>(pairs));
        }
        out.put("syncs", written);
        // The latency histogram: the bounds, the bucket of each probe, and what a plan
        // that acknowledged one copy per probe reports (tests/integration/test_copier_rules.py).
        List<Long> probes = new ArrayList<>(List.of(0L, 100_000L, Long.MAX_VALUE / 2));
        for (long bound : LatencyHistogram.BOUNDS_MS) {
            probes.addAll(List.of(bound - 1, bound, bound + 1));
        }
        Map<String, Object> latency = new HashMap<>();
        List<Long> bounds = new ArrayList<>();
        for (long bound : LatencyHistogram.BOUNDS_MS) {
            bounds.add(bound);
        }
        latency.put("bounds", bounds);
        latency.put("probes", probes);
        List<Integer> buckets = new ArrayList<>();
        PartitionCopy p = new PartitionCopy(new TopicPartition("t", 0), 1, "r", 0, 0, Long.MAX_VALUE, false);
        long offset = 0;
        for (long probe : probes) {
            buckets.add(LatencyHistogram.bucketOf(probe));
            p.sent(1_700_000_000_000L);
            p.acked(offset, offset, 1, probe);
            offset++;
        }
        latency.put("buckets", buckets);
        Map<String, Object> report = p.report(false);
        latency.put("report", Map.of(
                "latency_hist", report.get("latency_hist"),
                "latency_min_ms", report.get("latency_min_ms"),
                "latency_max_ms", report.get("latency_max_ms"),
                "records", report.get("records"),
                "pending_ts", report.get("pending_ts")));
        out.put("latency", latency);
        System.out.println(json.writeValueAsString(out));
    }
}
