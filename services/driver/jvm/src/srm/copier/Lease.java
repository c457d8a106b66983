package srm.copier;

/**
 * Until when one flow unit of a slot may hand records to its producer, on this JVM's
 * monotonic clock.
 *
 * <p>The driver answers each control request with the lease it still holds for each flow,
 * in milliseconds. The slot counts that from the moment it <em>sent</em> the request, so
 * however long the answer took, the deadline here is never later than the driver's own:
 * the driver's lease ends when the coordinator may have given the work to someone else,
 * and nothing reaches a producer here after that (docs/design.md, fencing).
 */
final class Lease {
    private volatile long deadlineNanos;
    private volatile boolean granted;

    /** Extend to {@code sentAtNanos + millis}; a lease never moves backwards except to zero. */
    synchronized void grant(long sentAtNanos, long millis) {
        if (millis <= 0) {
            revoke();
            return;
        }
        long deadline = sentAtNanos + millis * 1_000_000L;
        if (!granted || deadline - deadlineNanos > 0) {
            deadlineNanos = deadline;
        }
        granted = true;
    }

    synchronized void revoke() {
        granted = false;
    }

    boolean valid() {
        return granted && deadlineNanos - System.nanoTime() > 0;
    }

    /** Milliseconds left, 0 when expired or never granted. */
    long remainingMillis() {
        if (!granted) {
            return 0;
        }
        return Math.max(0, (deadlineNanos - System.nanoTime()) / 1_000_000L);
    }
}
