package srm.copier;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.TopicPartition;

/**
 * One upstream partition under one plan: where sending stands (copy loop thread), what
 * was acknowledged (producer thread), and what the next report tells the driver.
 *
 * <p>A plan is the driver's decision after reconciling: start at upstream {@code start},
 * the first copy lands at downstream {@code down} (checked on every acknowledgement unless
 * the remote partition is shared), never send an upstream offset at or past
 * {@code reserve} (the end recorded as in flight in the progress topic).
 *
 * <p>Offset syncs come from acknowledgements, which arrive in send order per partition:
 * the first record of the plan, both sides of every gap (upstream, or downstream when the
 * partition is shared), and the last acknowledged record at every report.
 */
final class PartitionCopy {
    enum State { SENDING, WAITING_RESERVATION, STOPPING, STOPPED }

    final TopicPartition source;
    final long plan;
    final String remote;
    final long start;
    final boolean shared;

    // Written by the copy loop thread only; nextSend is read by reports too.
    volatile long nextSend;
    long nextDown;

    // Guarded by this.
    private volatile long reserve;
    private State state = State.SENDING;
    private int outstanding;
    private long ackedUp;
    private long ackedDown;
    private long prevUp = -1;
    private long prevDown = -1;
    private long lastSyncUp = -1;
    private final List<long[]> syncs = new ArrayList<>();
    private long records;
    private long bytes;
    private long dropped;
    private long latencySumMs;
    private long latencyMaxMs;
    private long latencyMinMs = -1;
    private final long[] latencyCounts = LatencyHistogram.empty();
    // Timestamps of the records sent and not yet acknowledged, oldest first (acks come
    // in send order): the oldest record not yet copied, for the lag in time.
    private long[] pendingTs = new long[64];
    private int pendingHead;
    private int pendingSize;
    // The record the partition waits at for its reservation (-1: none or no timestamp).
    private long waitingTs = -1;
    // The source partition's end (log end, or last stable offset when reading committed)
    // as the consumer last saw it; -1 unknown. Written by the copy loop thread.
    private volatile long sourceEnd = -1;
    private Map<String, Object> error;
    // A send of this plan ended without an acknowledgement: it may still land.
    private boolean uncertain;

    PartitionCopy(TopicPartition source, long plan, String remote, long start, long down, long reserve,
            boolean shared) {
        this.source = source;
        this.plan = plan;
        this.remote = remote;
        this.start = start;
        this.shared = shared;
        this.nextSend = start;
        this.nextDown = down;
        this.reserve = reserve;
        this.ackedUp = start;
        this.ackedDown = down;
    }

    long reserve() {
        return reserve;
    }

    synchronized void extendReserve(long value) {
        if (value > reserve) {
            reserve = value;
        }
    }

    synchronized State state() {
        return state;
    }

    synchronized boolean sending() {
        return state == State.SENDING;
    }

    synchronized void awaitReservation() {
        awaitReservation(-1);
    }

    /** As {@link #awaitReservation()}, at a record of timestamp {@code timestamp}. */
    synchronized void awaitReservation(long timestamp) {
        if (state == State.SENDING) {
            state = State.WAITING_RESERVATION;
            waitingTs = timestamp;
        }
    }

    void sourceEnd(long end) {
        sourceEnd = end;
    }

    /** Back to sending once the reservation moved past the next offset to send. */
    synchronized boolean maybeResume() {
        if (state == State.WAITING_RESERVATION && reserve > nextSend) {
            state = State.SENDING;
            waitingTs = -1;
            return true;
        }
        return false;
    }

    /** Send nothing more; {@code why} (nullable) is reported as this partition's error. */
    synchronized void stop(Map<String, Object> why) {
        if (why != null && error == null) {
            error = why;
        }
        if (state != State.STOPPED) {
            state = outstanding == 0 ? State.STOPPED : State.STOPPING;
        }
    }

    synchronized boolean stopped() {
        return state == State.STOPPED;
    }

    synchronized void sent() {
        sent(-1);
    }

    /** A record of timestamp {@code timestamp} (-1: none) handed to the producer. */
    synchronized void sent(long timestamp) {
        outstanding++;
        if (pendingSize == pendingTs.length) {
            long[] grown = new long[pendingTs.length * 2];
            for (int i = 0; i < pendingSize; i++) {
                grown[i] = pendingTs[(pendingHead + i) % pendingTs.length];
            }
            pendingTs = grown;
            pendingHead = 0;
        }
        pendingTs[(pendingHead + pendingSize) % pendingTs.length] = timestamp;
        pendingSize++;
    }

    private void settledOne() {
        if (pendingSize > 0) {
            pendingHead = (pendingHead + 1) % pendingTs.length;
            pendingSize--;
        }
    }

    synchronized void dropped() {
        dropped++;
    }

    /** An acknowledged copy of upstream {@code up} at downstream {@code down}. */
    synchronized void acked(long up, long down, long valueBytes, long latencyMs) {
        outstanding--;
        settledOne();
        if (prevUp < 0) {
            lastSyncUp = sync(up, down);
        } else if (up != prevUp + 1 || (shared && down != prevDown + 1)) {
            if (lastSyncUp != prevUp) {
                sync(prevUp, prevDown);
            }
            lastSyncUp = sync(up, down);
        }
        prevUp = up;
        prevDown = down;
        ackedUp = up + 1;
        ackedDown = down + 1;
        records++;
        bytes += valueBytes;
        if (latencyMs >= 0) {
            latencySumMs += latencyMs;
            latencyMaxMs = Math.max(latencyMaxMs, latencyMs);
            latencyMinMs = latencyMinMs < 0 ? latencyMs : Math.min(latencyMinMs, latencyMs);
            latencyCounts[LatencyHistogram.bucketOf(latencyMs)]++;
        }
        settle();
    }

    /** A send that did not land (or whose fate is unknown); the plan is over. */
    synchronized void failed() {
        outstanding--;
        settledOne();
        uncertain = true;
        settle();
    }

    private void settle() {
        if (state == State.STOPPING && outstanding == 0) {
            state = State.STOPPED;
        }
    }

    private long sync(long up, long down) {
        syncs.add(new long[] {up, down});
        return up;
    }

    /** The report entry; {@code boundary} adds a sync for the last acknowledged record. */
    synchronized Map<String, Object> report(boolean boundary) {
        if (boundary && prevUp >= 0 && lastSyncUp != prevUp) {
            lastSyncUp = sync(prevUp, prevDown);
        }
        Map<String, Object> entry = new HashMap<>();
        entry.put("topic", source.topic());
        entry.put("partition", source.partition());
        entry.put("plan", plan);
        entry.put("state", state.name().toLowerCase());
        entry.put("acked_up", ackedUp);
        entry.put("acked_down", ackedDown);
        entry.put("next_send", nextSend);
        entry.put("outstanding", outstanding);
        entry.put("records", records);
        entry.put("bytes", bytes);
        entry.put("dropped", dropped);
        entry.put("latency_sum_ms", latencySumMs);
        entry.put("latency_max_ms", latencyMaxMs);
        entry.put("latency_min_ms", latencyMinMs);
        List<Long> counts = new ArrayList<>(latencyCounts.length);
        for (long count : latencyCounts) {
            counts.add(count);
        }
        entry.put("latency_hist", counts);
        entry.put("source_end", sourceEnd);
        long oldest = pendingSize > 0 ? pendingTs[pendingHead]
                : state == State.WAITING_RESERVATION ? waitingTs : -1;
        entry.put("pending_ts", oldest);
        List<List<Long>> pairs = new ArrayList<>(syncs.size());
        for (long[] sync : syncs) {
            pairs.add(List.of(sync[0], sync[1]));
        }
        entry.put("syncs", pairs);
        entry.put("error", error);
        entry.put("uncertain", uncertain);
        return entry;
    }

    /** The driver has the first {@code count} syncs (they were in a report it answered). */
    synchronized void confirmSyncs(int count) {
        syncs.subList(0, Math.min(count, syncs.size())).clear();
    }

    synchronized int pendingSyncs() {
        return syncs.size();
    }
}
