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
 * state of the slot (level triggered: a lost answer is repaired by the next one) and the
 * lease: how many milliseconds the driver may still let records be written, counted here
 * from when the request was sent. An answer 410 means the driver no longer knows this job:
 * the slot stops everything and ends.
 */
public final class SlotRunner {
    private static final Logger LOG = LoggerFactory.getLogger(SlotRunner.class);
    private static final TypeReference<Map<String, Object>> MAP = new TypeReference<Map<String, Object>>() {};

    private final String url;
    private final String jobId;
    private final int slot;
    private final Lease lease = new Lease();
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

    SlotRunner(String controlUrl, String jobId, int slot) {
        this.url = controlUrl + "/internal/v1/copy/" + jobId + "/slots/" + slot;
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
                lease.revoke();
                if (!stopping) {
                    stopping = true;
                    stopUnits();
                }
            } else if (answer != null) {
                lease.grant(sentAt, answer.leaseMs);
                confirm(snapshot);
                interval = Math.max(20, answer.reportMs);
                if (answer.stop && !stopping) {
                    stopping = true;
                    stopUnits();
                }
                if (!stopping) {
                    apply(answer.units, answer.version);
                    answered = answer.version;
                }
            }
            if (exiting && (answer != null || ++finalAttempts >= 3)) {
                return;
            }
            await(stopping ? 50 : interval);
        }
    }

    private Snapshot snapshot(boolean exiting) {
        Snapshot snapshot = new Snapshot();
        List<Map<String, Object>> reports = new ArrayList<>();
        for (Map.Entry<String, FlowUnit> entry : units.entrySet()) {
            Map<String, Integer> counts = new HashMap<>();
            Set<String> stopped = new HashSet<>();
            FlowUnit unit = entry.getValue();
            boolean exited = unit.exited();
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
        snapshot.body.put("lease_ms", lease.remainingMillis());
        snapshot.body.put("exiting", exiting);
        snapshot.body.put("units", reports);
        return snapshot;
    }

    private Answer exchange(Snapshot snapshot) {
        try {
            HttpRequest request = HttpRequest.newBuilder(URI.create(url))
                    .timeout(Duration.ofSeconds(5))
                    .header("Content-Type", "application/json")
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

    private void confirm(Snapshot snapshot) {
        for (Map.Entry<String, Map<String, Integer>> entry : snapshot.syncCounts.entrySet()) {
            FlowUnit unit = units.get(entry.getKey());
            if (unit != null) {
                unit.confirm(entry.getValue(), snapshot.stopped.get(entry.getKey()));
            }
        }
        for (String flow : snapshot.exited) {
            units.remove(flow);
            Thread thread = threads.remove(flow);
            join(thread, 1000);
        }
    }

    @SuppressWarnings("unchecked")
    private void apply(Map<String, Object> wanted, long version) {
        for (Map.Entry<String, Object> entry : wanted.entrySet()) {
            String flow = entry.getKey();
            UnitPlan plan;
            try {
                plan = UnitPlan.parse(flow, version, (Map<String, Object>) entry.getValue());
            } catch (RuntimeException e) {
                LOG.error("srm copy slot {}: bad plan for {}: {}", slot, flow, e.toString());
                continue;
            }
            FlowUnit unit = units.get(flow);
            if (unit == null) {
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
    static void runSlots(Iterator<Integer> slots, String controlUrl, String jobId) {
        while (slots.hasNext()) {
            CopyJob.ACTIVE.incrementAndGet();
            try {
                new SlotRunner(controlUrl, jobId, slots.next()).run();
            } finally {
                CopyJob.ACTIVE.decrementAndGet();
            }
        }
    }
}
