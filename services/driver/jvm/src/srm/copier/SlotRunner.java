package srm.copier;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.spark.TaskContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One copy slot: a long-lived Spark task that asks the driver what to copy and runs it.
 *
 * <p>Every {@code report_ms} (and at once when a unit has news: a failure, a stopped
 * partition, a reservation reached) the slot POSTs a report to the driver's control
 * endpoint: per flow unit, per partition plan, what was acknowledged, the offset syncs
 * since the last answered report, counters and errors. The answer is the whole desired
 * state of the slot (level triggered: a lost answer is repaired by the next one) and,
 * per flow unit, its lease: how many milliseconds the driver may still let records of that
 * flow be written, counted here from when the request was sent. Each unit has its own
 * {@link Lease}: a flow whose lease runs out stops while the others go on. A unit the
 * answer leaves out is stopped and given nothing; a driver that does not answer lets
 * every lease run out by itself. The answer also lists the flows whose part of the report
 * the driver did not take in ({@code refused}): their syncs, stops and exits are kept and
 * reported again. An answer 410 means the driver no longer knows this job: the slot
 * revokes every lease, stops everything and ends.
 */
public final class SlotRunner {
    private static final Logger LOG = LoggerFactory.getLogger(SlotRunner.class);
    private static final TypeReference<Map<String, Object>> MAP = new TypeReference<Map<String, Object>>() {};

    private final String url;
    private final String authorization;
    private final String jobId;
    private final int slot;
    private final Map<String, FlowUnit> units = new HashMap<>();
    private final Map<String, Thread> threads = new HashMap<>();
    private final ObjectMapper json = new ObjectMapper();
    private final HttpClient http = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(2))
            .build();
    private final Object signal = new Object();
    private boolean nudged;
    private long seq;
    private long answered = -1;

    SlotRunner(String controlUrl, String jobId, int slot, String secret) {
        this.url = controlUrl + "/internal/v1/copy/" + jobId + "/slots/" + slot;
        this.authorization = "Bearer " + secret;
        this.jobId = jobId;
        this.slot = slot;
    }

    private static final class Snapshot {
        final Map<String, Object> body = new HashMap<>();
        final Map<String, Map<String, Integer>> syncCounts = new HashMap<>();
        final Map<String, Set<String>> stopped = new HashMap<>();
        final List<String> exited = new ArrayList<>();
    }

    private static final class Answer {
        boolean gone;
        long version = -1;
        long leaseMs;
        long reportMs = 200;
        boolean stop;
        Map<String, Object> units = new HashMap<>();
        Set<String> refused = new HashSet<>();
    }

    void run() {
        try {
            control();
        } finally {
            // However the control loop ended, no unit of this slot may write on: stop them
            // and wait for them (their producers close), so "this slot ended" means it.
            stopUnits();
            for (Thread thread : threads.values()) {
                join(thread, 70_000);
            }
        }
    }

    private void control() {
        long interval = 200;
        boolean stopping = false;
        int finalAttempts = 0;
        while (true) {
            TaskContext task = TaskContext.get();
            if (!stopping && task != null && task.isInterrupted()) {
                stopping = true;
                stopUnits();
            }
            boolean exiting = stopping && allExited();
            Snapshot snapshot = snapshot(exiting);
            long sentAt = System.nanoTime();
            Answer answer = exchange(snapshot);
            if (answer != null && answer.gone) {
                for (FlowUnit unit : units.values()) {
                    unit.lease().revoke();
                }
                if (!stopping) {
                    stopping = true;
                    stopUnits();
                }
            } else if (answer != null) {
                grant(answer, sentAt);
                confirm(snapshot, answer.refused);
                interval = Math.max(20, answer.reportMs);
                if (answer.stop && !stopping) {
                    stopping = true;
                    stopUnits();
                }
                if (!stopping) {
                    apply(answer, sentAt);
                    answered = answer.version;
                }
            }
            boolean taken = answer != null && answer.refused.isEmpty();
            if (exiting && (taken || ++finalAttempts >= 3)) {
                return;
            }
            await(stopping ? 50 : interval);
        }
    }

    private Snapshot snapshot(boolean exiting) {
        Snapshot snapshot = new Snapshot();
        List<Map<String, Object>> reports = new ArrayList<>();
        long longestLease = 0;
        for (Map.Entry<String, FlowUnit> entry : units.entrySet()) {
            Map<String, Integer> counts = new HashMap<>();
            Set<String> stopped = new HashSet<>();
            FlowUnit unit = entry.getValue();
            boolean exited = unit.exited();
            longestLease = Math.max(longestLease, unit.lease().remainingMillis());
            reports.add(unit.report(true, counts, stopped));
            snapshot.syncCounts.put(entry.getKey(), counts);
            snapshot.stopped.put(entry.getKey(), stopped);
            if (exited) {
                snapshot.exited.add(entry.getKey());
            }
        }
        snapshot.body.put("job", jobId);
        snapshot.body.put("slot", slot);
        snapshot.body.put("seq", seq++);
        snapshot.body.put("answered", answered);
        snapshot.body.put("lease_ms", longestLease);
        snapshot.body.put("exiting", exiting);
        snapshot.body.put("units", reports);
        return snapshot;
    }

    private Answer exchange(Snapshot snapshot) {
        try {
            HttpRequest request = HttpRequest.newBuilder(URI.create(url))
                    .timeout(Duration.ofSeconds(5))
                    .header("Content-Type", "application/json")
                    .header("Authorization", authorization)
                    .POST(HttpRequest.BodyPublishers.ofByteArray(json.writeValueAsBytes(snapshot.body)))
                    .build();
            HttpResponse<byte[]> response = http.send(request, HttpResponse.BodyHandlers.ofByteArray());
            Answer answer = new Answer();
            if (response.statusCode() == 410) {
                answer.gone = true;
                return answer;
            }
            if (response.statusCode() != 200) {
                LOG.warn("srm copy slot {}: the driver answered {}: {}", slot, response.statusCode(),
                        new String(response.body(), java.nio.charset.StandardCharsets.UTF_8));
                return null;
            }
            Map<String, Object> body = json.readValue(response.body(), MAP);
            answer.version = ((Number) body.get("version")).longValue();
            answer.leaseMs = ((Number) body.get("lease_ms")).longValue();
            answer.reportMs = ((Number) body.get("report_ms")).longValue();
            answer.stop = Boolean.TRUE.equals(body.get("stop"));
            @SuppressWarnings("unchecked")
            Map<String, Object> wanted = (Map<String, Object>) body.get("units");
            answer.units = wanted;
            Object refused = body.get("refused");
            if (refused instanceof List) {
                for (Object flow : (List<?>) refused) {
                    answer.refused.add(String.valueOf(flow));
                }
            }
            return answer;
        } catch (IOException e) {
            return null; // the driver is unreachable: the lease runs out by itself
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        } catch (RuntimeException e) {
            LOG.error("srm copy slot {}: cannot read the driver's answer: {}", slot, e.toString());
            return null;
        }
    }

    /**
     * Give each unit the lease its entry in the answer carries (the slot-level one if the
     * entry has none), counted from {@code sentAt}; a unit the answer leaves out gets
     * nothing (it is being stopped; its lease runs out by itself).
     */
    @SuppressWarnings("unchecked")
    private void grant(Answer answer, long sentAt) {
        for (Map.Entry<String, FlowUnit> entry : units.entrySet()) {
            Object wanted = answer.units.get(entry.getKey());
            if (wanted instanceof Map) {
                entry.getValue().lease().grant(sentAt, leaseOf((Map<String, Object>) wanted, answer.leaseMs));
            }
        }
    }

    private static long leaseOf(Map<String, Object> unit, long slotLeaseMs) {
        Object value = unit.get("lease_ms");
        return value instanceof Number ? ((Number) value).longValue() : slotLeaseMs;
    }

    /** The driver took the report in, but for the {@code refused} flows: those keep it all. */
    private void confirm(Snapshot snapshot, Set<String> refused) {
        for (Map.Entry<String, Map<String, Integer>> entry : snapshot.syncCounts.entrySet()) {
            FlowUnit unit = units.get(entry.getKey());
            if (unit != null && !refused.contains(entry.getKey())) {
                unit.confirm(entry.getValue(), snapshot.stopped.get(entry.getKey()));
            }
        }
        for (String flow : snapshot.exited) {
            if (refused.contains(flow)) {
                continue; // reported again, so that the driver sees it ended
            }
            units.remove(flow);
            Thread thread = threads.remove(flow);
            join(thread, 1000);
        }
    }

    @SuppressWarnings("unchecked")
    private void apply(Answer answer, long sentAt) {
        Map<String, Object> wanted = answer.units;
        for (Map.Entry<String, Object> entry : wanted.entrySet()) {
            String flow = entry.getKey();
            Map<String, Object> body;
            UnitPlan plan;
            try {
                body = (Map<String, Object>) entry.getValue();
                plan = UnitPlan.parse(flow, answer.version, body);
            } catch (RuntimeException e) {
                LOG.error("srm copy slot {}: bad plan for {}: {}", slot, flow, e.toString());
                continue;
            }
            FlowUnit unit = units.get(flow);
            if (unit == null) {
                Lease lease = new Lease();
                lease.grant(sentAt, leaseOf(body, answer.leaseMs));
                unit = new FlowUnit(plan, lease, this::nudge);
                Thread thread = new Thread(unit, "srm-copy " + flow + " slot " + slot);
                thread.setDaemon(true);
                units.put(flow, unit);
                threads.put(flow, thread);
                thread.start();
            } else if (!unit.exited()) {
                unit.update(plan);
            }
        }
        for (Map.Entry<String, FlowUnit> entry : units.entrySet()) {
            if (!wanted.containsKey(entry.getKey())) {
                entry.getValue().requestStop();
            }
        }
    }

    private void stopUnits() {
        for (FlowUnit unit : units.values()) {
            unit.requestStop();
        }
    }

    private boolean allExited() {
        for (FlowUnit unit : units.values()) {
            if (!unit.exited()) {
                return false;
            }
        }
        return true;
    }

    void nudge() {
        synchronized (signal) {
            nudged = true;
            signal.notifyAll();
        }
    }

    private void await(long millis) {
        synchronized (signal) {
            if (!nudged) {
                try {
                    signal.wait(millis);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            nudged = false;
        }
    }

    private static void join(Thread thread, long millis) {
        if (thread == null) {
            return;
        }
        try {
            thread.join(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Run the slots of one copy job; returns when every slot has ended. */
    static void runSlots(Iterator<Integer> slots, String controlUrl, String jobId, String secret) {
        while (slots.hasNext()) {
            CopyJob.ACTIVE.incrementAndGet();
            try {
                new SlotRunner(controlUrl, jobId, slots.next(), secret).run();
            } finally {
                CopyJob.ACTIVE.decrementAndGet();
            }
        }
    }
}
