package srm.copier;

/**
 * The buckets of the replication latency histogram a slot reports per partition plan:
 * upper bounds in milliseconds (inclusive), then one open bucket for anything slower.
 *
 * <p>The same bounds as {@code srm_common.metrics.raw.LATENCY_BOUNDS_MS} (the raw metrics
 * format, version 1): {@code tests/integration/test_copier_rules.py} checks this copy and
 * {@link #bucketOf} against the Python ones, so histograms of both sides add up.
 */
final class LatencyHistogram {
    static final long[] BOUNDS_MS = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 60000};

    private LatencyHistogram() {
    }

    /** The index of the bucket {@code latencyMs} falls in (the first bound not below it). */
    static int bucketOf(long latencyMs) {
        int low = 0;
        int high = BOUNDS_MS.length;
        while (low < high) {
            int mid = (low + high) >>> 1;
            if (BOUNDS_MS[mid] < latencyMs) {
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        return low;
    }

    static long[] empty() {
        return new long[BOUNDS_MS.length + 1];
    }
}
