package srm.copier;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.VoidFunction;

/**
 * The driver's one Spark job: {@code slots} long-lived tasks, each a {@link SlotRunner}
 * that copies whatever the driver plans for it until the driver says stop (or forgets the
 * job). Called from Python through Py4J; blocks until every slot has ended.
 *
 * <p>Task retries and speculation are refused by the driver at start-up: a copy task must
 * never be run twice by Spark on its own.
 */
public final class CopyJob {
    /** Slot tasks running in this JVM (local mode: every slot of the driver). */
    static final AtomicInteger ACTIVE = new AtomicInteger();

    private CopyJob() {}

    public static int activeSlots() {
        return ACTIVE.get();
    }

    /**
     * {@code secret} is the driver's per-run token for the slots' control channel: each report
     * bears it ({@code Authorization: Bearer}), so nobody else on the network can post one.
     */
    public static void run(JavaSparkContext context, String group, String controlUrl, String jobId, int slots,
            String secret) {
        context.setJobGroup(group, "srm copy slots of job " + jobId, false);
        List<Integer> ids = new ArrayList<>(slots);
        for (int i = 0; i < slots; i++) {
            ids.add(i);
        }
        final String url = controlUrl;
        final String job = jobId;
        final String token = secret;
        context.parallelize(ids, slots)
                .foreachPartition(
                        (VoidFunction<java.util.Iterator<Integer>>) it -> SlotRunner.runSlots(it, url, job, token));
    }
}
