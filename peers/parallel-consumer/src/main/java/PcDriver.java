/*
 * A keyed-bench external-design driver (docs/external.md, protocol version 1) for Confluent
 * Parallel Consumer 0.5.3.3: each repetition's workload becomes a one-partition topic in a
 * Kafka MockConsumer (no broker), consumed by a fresh ParallelEoSStreamProcessor whose user
 * function runs each message's job and records when it started and ended.
 *
 * Usage: java -cp 'target/classes:target/lib/*' PcDriver [--ordering KEY|PARTITION|UNORDERED]
 *            [--commit sync|async] [--commit-interval-ms MS] [--max-poll-records N]
 *            [--jit-warmup PASSES]
 * Standard input and output are the protocol's; standard output carries nothing else (logs
 * go to standard error at WARN). See README.md for what each setting is and why.
 */

import io.confluent.parallelconsumer.ParallelConsumerOptions;
import io.confluent.parallelconsumer.ParallelConsumerOptions.CommitMode;
import io.confluent.parallelconsumer.ParallelConsumerOptions.ProcessingOrder;
import io.confluent.parallelconsumer.ParallelEoSStreamProcessor;
import io.confluent.parallelconsumer.internal.DrainingCloseable.DrainingMode;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetCommitCallback;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;
import org.apache.kafka.common.TopicPartition;

import java.io.BufferedReader;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.io.BufferedWriter;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.locks.LockSupport;

public final class PcDriver {

    static final String HEADER = "keyed-bench-external 1";
    static final String PC_VERSION = "0.5.3.3";
    static final String TOPIC = "keyed-bench";
    static final TopicPartition PARTITION = new TopicPartition(TOPIC, 0);
    /** -Dpcdriver.debug=true: after each close, the live threads, on standard error. */
    static final boolean DEBUG = Boolean.getBoolean("pcdriver.debug");

    /** A failure the driver reports on standard error before exiting 1. */
    static final class Failure extends Exception {
        private static final long serialVersionUID = 1L;

        Failure(String message) {
            super(message);
        }

        Failure(String message, Throwable cause) {
            super(message, cause);
        }
    }

    // ---------------------------------------------------------------------------------------
    // Settings

    static final class Settings {
        ProcessingOrder ordering = ProcessingOrder.KEY;
        CommitMode commitMode = CommitMode.PERIODIC_CONSUMER_SYNC;
        long commitIntervalMs = 1000;
        long maxPollRecords = 0; // 0: MockConsumer's default, every available record per poll
        int jitWarmupPasses = 1;
    }

    static Settings parseArgs(String[] args) throws Failure {
        Settings settings = new Settings();
        for (int i = 0; i < args.length; i += 2) {
            String flag = args[i];
            if (i + 1 >= args.length) {
                throw new Failure("`" + flag + "` needs a value");
            }
            String value = args[i + 1];
            try {
                switch (flag) {
                    case "--ordering" -> settings.ordering = ProcessingOrder.valueOf(value);
                    case "--commit" -> settings.commitMode = switch (value) {
                        case "sync" -> CommitMode.PERIODIC_CONSUMER_SYNC;
                        case "async" -> CommitMode.PERIODIC_CONSUMER_ASYNCHRONOUS;
                        default -> throw new Failure("`--commit " + value + "`: sync or async");
                    };
                    case "--commit-interval-ms" -> settings.commitIntervalMs = positive(flag, value);
                    case "--max-poll-records" -> settings.maxPollRecords = Long.parseLong(value);
                    case "--jit-warmup" -> settings.jitWarmupPasses = Integer.parseInt(value);
                    default -> throw new Failure("unknown argument `" + flag + "`");
                }
            } catch (IllegalArgumentException e) {
                throw new Failure("`" + flag + " " + value + "`: " + e.getMessage());
            }
        }
        if (settings.maxPollRecords < 0 || settings.jitWarmupPasses < 0) {
            throw new Failure("--max-poll-records and --jit-warmup take a number >= 0");
        }
        return settings;
    }

    static long positive(String flag, String value) throws Failure {
        long n = Long.parseLong(value);
        if (n <= 0) {
            throw new Failure("`" + flag + " " + value + "`: a number above 0");
        }
        return n;
    }

    // ---------------------------------------------------------------------------------------
    // The cell

    static final int NOOP = 0, SPIN = 1, BLOCK = 2, WAIT = 3, RETRY = 4, TOUCH = 5;

    /** The cell's settings and its messages, one array per field, indexed by message. */
    static final class Cell {
        String scenario = "", param = "", arrivals = "";
        int workers, window, throughput, repeat, warmup, producers, keys, stateBytes;
        int n;
        int[] type;
        long[] id, seq;
        byte[] job;
        long[] jobA, jobB, jobC;
        String[] key;

        void allocate(int count) {
            n = count;
            type = new int[count];
            id = new long[count];
            seq = new long[count];
            job = new byte[count];
            jobA = new long[count];
            jobB = new long[count];
            jobC = new long[count];
            key = new String[count];
        }
    }

    static Cell readCell(BufferedReader in) throws IOException, Failure {
        Cell cell = new Cell();
        int next = 0;
        boolean announced = false;
        int lineNo = 0;
        for (String line; (line = in.readLine()) != null; ) {
            lineNo++;
            String[] w = line.split(" ");
            try {
                switch (w[0]) {
                    case "scenario" -> cell.scenario = rest(line);
                    case "param" -> cell.param = rest(line);
                    case "workers" -> cell.workers = Integer.parseInt(w[1]);
                    case "window" -> cell.window = Integer.parseInt(w[1]);
                    case "throughput" -> cell.throughput = Integer.parseInt(w[1]);
                    case "repeat" -> cell.repeat = Integer.parseInt(w[1]);
                    case "warmup" -> cell.warmup = Integer.parseInt(w[1]);
                    case "producers" -> cell.producers = Integer.parseInt(w[1]);
                    case "arrivals" -> cell.arrivals = rest(line);
                    case "keys" -> cell.keys = Integer.parseInt(w[1]);
                    case "state-bytes" -> cell.stateBytes = Integer.parseInt(w[1]);
                    case "messages" -> {
                        cell.allocate(Integer.parseInt(w[1]));
                        announced = true;
                    }
                    case "m" -> {
                        if (!announced || next >= cell.n) {
                            throw new Failure("cell line " + lineNo + ": an `m` line beyond `messages`");
                        }
                        int i = next++;
                        cell.type[i] = Integer.parseInt(w[1]);
                        cell.id[i] = Long.parseLong(w[2]);
                        cell.seq[i] = Long.parseLong(w[3]);
                        parseJob(cell, i, w, 5);
                        cell.key[i] = cell.type[i] == 0
                                ? Long.toString(cell.id[i])
                                : cell.type[i] + ":" + cell.id[i];
                    }
                    case "saga", "chain", "hot", "sender", "duration" -> throw new Failure(
                            "cell line " + lineNo + ": `" + w[0] + "` is not supported: this driver "
                                    + "declares closed arrivals only");
                    case "go" -> {
                        if (!announced || next != cell.n) {
                            throw new Failure("the cell announced " + cell.n + " messages and gave " + next);
                        }
                        if (!cell.arrivals.equals("closed")) {
                            throw new Failure("arrivals `" + cell.arrivals + "`: this driver runs closed only");
                        }
                        if (cell.workers < 1) {
                            throw new Failure("workers " + cell.workers + ": at least 1 needed");
                        }
                        cell.warmup = Math.min(cell.warmup, cell.n);
                        return cell;
                    }
                    default -> throw new Failure("cell line " + lineNo + ": unknown line `" + clip(line) + "`");
                }
            } catch (NumberFormatException | ArrayIndexOutOfBoundsException e) {
                throw new Failure("cell line " + lineNo + ": `" + clip(line) + "`: " + e);
            }
        }
        throw new Failure("the cell ended before `go`");
    }

    static void parseJob(Cell cell, int i, String[] w, int at) throws Failure {
        String kind = w.length > at ? w[at] : "";
        int arity = switch (kind) {
            case "noop" -> 0;
            case "spin", "block", "wait" -> 1;
            case "touch" -> 2;
            case "retry" -> 3;
            default -> throw new Failure("unknown job `" + kind + "`");
        };
        if (w.length != at + 1 + arity) {
            throw new Failure("job `" + kind + "` takes " + arity + " numbers");
        }
        cell.job[i] = switch (kind) {
            case "noop" -> NOOP;
            case "spin" -> SPIN;
            case "block" -> BLOCK;
            case "wait" -> WAIT;
            case "retry" -> RETRY;
            default -> TOUCH;
        };
        if (arity > 0) cell.jobA[i] = Long.parseLong(w[at + 1]);
        if (arity > 1) cell.jobB[i] = Long.parseLong(w[at + 2]);
        if (arity > 2) cell.jobC[i] = Long.parseLong(w[at + 3]);
    }

    static String rest(String line) {
        int space = line.indexOf(' ');
        return space < 0 ? "" : line.substring(space + 1);
    }

    static String clip(String line) {
        return line.length() > 80 ? line.substring(0, 80) + "..." : line;
    }

    // ---------------------------------------------------------------------------------------
    // Jobs, run on Parallel Consumer's worker threads

    /** Burns `ns` of CPU, as the suite's handler does. */
    static void spin(long ns) {
        if (ns <= 0) return;
        long until = System.nanoTime() + ns;
        while (System.nanoTime() - until < 0) {
            Thread.onSpinWait();
        }
    }

    /**
     * Blocks the thread for `ns`. Not Thread.sleep(millis, nanos), which JDK 17 rounds up to
     * a whole millisecond; parkNanos sleeps to the nanosecond (a timed futex wait), as
     * std::thread::sleep does for the Rust designs.
     */
    static void block(long ns) {
        if (ns <= 0) return;
        long until = System.nanoTime() + ns;
        for (long left = ns; left > 0; left = until - System.nanoTime()) {
            LockSupport.parkNanos(left);
            if (Thread.currentThread().isInterrupted()) {
                return; // PC is closing and interrupting its workers
            }
        }
    }

    /** The aggregates' state for `touch` jobs: one word per 64-byte line of each key's block. */
    static final class State {
        final long[] words;
        final int wordsPerKey;

        State(int keys, int stateBytes) {
            wordsPerKey = Math.max(1, stateBytes / 8);
            words = new long[Math.max(1, keys) * wordsPerKey];
        }

        void touch(long key, long lines) {
            int base = (int) (key * wordsPerKey);
            int stride = 8; // 64-byte lines
            for (int line = 0, word = 0; line < lines && word < wordsPerKey; line++, word += stride) {
                words[base + word]++;
            }
        }
    }

    static void runJob(Cell cell, State state, int i) {
        switch (cell.job[i]) {
            case SPIN -> spin(cell.jobA[i]);
            // a `wait` has no non-blocking form in PC's core: its user function is synchronous,
            // so the wait blocks the worker thread (declared in the hello's `wait` line)
            case BLOCK, WAIT -> block(cell.jobA[i]);
            case RETRY -> {
                long retries = cell.jobA[i], backoff = cell.jobB[i], spinNs = cell.jobC[i];
                spin(spinNs);
                for (long attempt = 0; attempt < retries; attempt++) {
                    block(backoff << attempt);
                    spin(spinNs);
                }
            }
            case TOUCH -> {
                if (state != null) state.touch(cell.id[i], cell.jobA[i]);
                spin(cell.jobB[i]);
            }
            default -> { }
        }
    }

    // ---------------------------------------------------------------------------------------
    // The consumer

    /**
     * A MockConsumer that long-polls as a real consumer does: an empty poll waits up to its
     * timeout, until wakeup() (which Parallel Consumer calls to resume a paused poller or to
     * close). Without it PC's broker-poll thread would spin on empty polls. A wakeup while
     * the poller is not waiting is remembered, so that none is lost. It also keeps the last
     * offset committed, for a check after close.
     */
    static final class LongPollingMockConsumer extends MockConsumer<String, Integer> {
        private boolean wakeupPending;
        private volatile long lastCommitted = -1;

        LongPollingMockConsumer() {
            super(OffsetResetStrategy.EARLIEST);
        }

        @Override
        public synchronized ConsumerRecords<String, Integer> poll(Duration timeout) {
            ConsumerRecords<String, Integer> records = super.poll(timeout);
            if (records.isEmpty() && !wakeupPending) {
                long until = System.nanoTime() + timeout.toNanos();
                for (long left = timeout.toNanos(); left > 0 && !wakeupPending; left = until - System.nanoTime()) {
                    try {
                        TimeUnit.NANOSECONDS.timedWait(this, left);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        break;
                    }
                }
            }
            wakeupPending = false;
            return records;
        }

        @Override
        public synchronized void wakeup() {
            wakeupPending = true;
            notifyAll();
        }

        @Override
        public synchronized void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets) {
            note(offsets);
            super.commitSync(offsets);
        }

        @Override
        public synchronized void commitAsync(Map<TopicPartition, OffsetAndMetadata> offsets, OffsetCommitCallback callback) {
            note(offsets);
            super.commitAsync(offsets, callback);
        }

        private void note(Map<TopicPartition, OffsetAndMetadata> offsets) {
            OffsetAndMetadata committed = offsets.get(PARTITION);
            if (committed != null) lastCommitted = committed.offset();
        }
    }

    // ---------------------------------------------------------------------------------------
    // One pass: a fresh consumer and Parallel Consumer over messages 0..count

    static final class Pass {
        final int count;
        final long[] start, end;
        final int[] thread;
        final AtomicIntegerArray runs;
        /** Second and later runs of a message (PC retried it): index, start, end, thread. */
        final ConcurrentLinkedQueue<long[]> repeats = new ConcurrentLinkedQueue<>();
        final CountDownLatch done;
        final ConcurrentHashMap<Thread, Integer> threads = new ConcurrentHashMap<>();
        final AtomicInteger nextThread = new AtomicInteger();
        final LongPollingMockConsumer consumer = new LongPollingMockConsumer();
        final ParallelEoSStreamProcessor<String, Integer> pc;
        long origin, lastSend, finished;

        Pass(Cell cell, Settings settings, int count, boolean noop, State state) {
            this.count = count;
            start = new long[count];
            end = new long[count];
            thread = new int[count];
            runs = new AtomicIntegerArray(count);
            done = new CountDownLatch(count);
            if (settings.maxPollRecords > 0) consumer.setMaxPollRecords(settings.maxPollRecords);
            var options = ParallelConsumerOptions.<String, Integer>builder()
                    .consumer(consumer)
                    .ordering(settings.ordering)
                    .maxConcurrency(cell.workers)
                    .commitMode(settings.commitMode)
                    .commitInterval(Duration.ofMillis(settings.commitIntervalMs));
            if (cell.window > 0) options.messageBufferSize(cell.window);
            pc = new ParallelEoSStreamProcessor<>(options.build());
            // As PC's own tests set up a MockConsumer: subscribe through PC (it registers itself
            // as the rebalance listener), then assign the partition (MockConsumer 3.9 calls the
            // listener's onPartitionsAssigned) and say where it begins.
            pc.subscribe(List.of(TOPIC));
            consumer.rebalance(List.of(PARTITION));
            consumer.updateBeginningOffsets(Map.of(PARTITION, 0L));
            this.noop = noop;
            this.cell = cell;
            this.state = state;
        }

        private final boolean noop;
        private final Cell cell;
        private final State state;

        /** Adds the records (the origin is just before) and starts PC; returns when all ran. */
        void run(List<ConsumerRecord<String, Integer>> records) throws Failure, InterruptedException {
            origin = System.nanoTime();
            for (int i = 0; i < count; i++) {
                consumer.addRecord(records.get(i));
            }
            lastSend = System.nanoTime() - origin;
            pc.poll(context -> {
                long s = System.nanoTime();
                int i = context.getSingleConsumerRecord().value();
                if (!noop) runJob(cell, state, i);
                long e = System.nanoTime();
                int t = threads.computeIfAbsent(Thread.currentThread(), x -> nextThread.getAndIncrement());
                if (runs.getAndIncrement(i) == 0) {
                    start[i] = s;
                    end[i] = e;
                    thread[i] = t;
                    done.countDown();
                } else {
                    repeats.add(new long[] {i, s, e, t});
                }
            });
            while (!done.await(100, TimeUnit.MILLISECONDS)) {
                if (pc.isClosedOrFailed()) {
                    Exception cause = pc.getFailureCause();
                    throw new Failure("Parallel Consumer stopped with " + done.getCount() + " of " + count
                            + " messages not run" + (cause == null ? "" : ": " + cause), cause);
                }
            }
            finished = System.nanoTime() - origin;
        }

        /** Closes PC (everything has run: no draining needed) and checks its last commit. */
        void close() {
            try {
                pc.close(Duration.ofSeconds(10), DrainingMode.DONT_DRAIN);
            } catch (RuntimeException e) {
                System.err.println("PcDriver: warning: Parallel Consumer's close failed: " + e);
            }
            if (DEBUG) {
                System.err.println("PcDriver: debug: after close, " + Thread.activeCount() + " live threads: "
                        + Thread.getAllStackTraces().keySet().stream().map(Thread::getName).sorted().toList());
            }
            if (consumer.lastCommitted != count) {
                System.err.println("PcDriver: note: the last offset committed was " + consumer.lastCommitted
                        + ", not " + count);
            }
        }
    }

    // ---------------------------------------------------------------------------------------
    // The session

    public static void main(String[] args) {
        // The protocol's stream; anything else that prints to System.out goes to stderr.
        PrintStream protocolStream = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        Writer out = new BufferedWriter(new OutputStreamWriter(protocolStream, StandardCharsets.UTF_8), 1 << 16);
        int status = 0;
        try {
            Settings settings = parseArgs(args);
            session(settings, out);
        } catch (Failure e) {
            System.err.println("PcDriver: " + e.getMessage());
            if (e.getCause() != null) e.getCause().printStackTrace(System.err);
            status = 1;
        } catch (Throwable e) {
            System.err.println("PcDriver: unexpected error: " + e);
            e.printStackTrace(System.err);
            status = 1;
        }
        try {
            out.flush();
        } catch (IOException e) {
            status = 1;
        }
        System.err.flush();
        // Parallel Consumer leaves idle non-daemon threads behind (its single-thread executors)
        Runtime.getRuntime().halt(status);
    }

    static void session(Settings settings, Writer out) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 16);
        String first = in.readLine();
        if (!HEADER.equals(first)) {
            throw new Failure("the first line is not `" + HEADER + "`");
        }
        out.write(hello(settings.ordering));
        out.flush();
        String next = in.readLine();
        if (next == null) return; // asked for the hello only
        if (!next.equals("cell")) {
            throw new Failure("expected `cell`, got `" + clip(next) + "`");
        }
        Cell cell = readCell(in);
        runCell(cell, settings, out);
    }

    /** The hello's `family` for PC's ordering (PcConsumer's hello says the same). */
    static String family(ProcessingOrder ordering) {
        return switch (ordering) {
            case KEY -> "mailboxes";
            case PARTITION -> "hash-groups";
            case UNORDERED -> "unordered";
        };
    }

    static String hello(ProcessingOrder ordering) {
        return HEADER + "\n"
                + "name Confluent Parallel Consumer " + PC_VERSION + ", " + ordering + " mode, on a MockConsumer\n"
                + "version " + PC_VERSION + "\n"
                + "family " + family(ordering) + "\n"
                + "ordered " + (ordering != ProcessingOrder.UNORDERED) + "\n"
                + "threads shared-pool\n"
                + "arrivals closed\n"
                + "producers 1\n"
                + "wait none non-blocking: PC core runs user functions synchronously on its own worker pool, "
                + "so a wait job is a blocking sleep (LockSupport.parkNanos) that holds a PC worker thread\n"
                + "source peers/parallel-consumer/pom.xml peers/parallel-consumer/src\n"
                + "ready\n";
    }

    static void runCell(Cell cell, Settings settings, Writer out) throws Exception {
        System.err.printf("PcDriver: %s %s: %d messages, %s order, maxConcurrency %d, messageBufferSize %d, "
                        + "%s commits every %d ms, %d repetitions%n",
                cell.scenario, cell.param, cell.n, settings.ordering, cell.workers, cell.window,
                settings.commitMode, settings.commitIntervalMs, cell.repeat);
        State state = cell.stateBytes > 0 ? new State(cell.keys, cell.stateBytes) : null;
        List<ConsumerRecord<String, Integer>> records = new ArrayList<>(cell.n);
        for (int i = 0; i < cell.n; i++) {
            records.add(new ConsumerRecord<>(TOPIC, 0, i, cell.key[i], i));
        }

        // The warm-up: the harness's prefix with no-op jobs, once, then as many extra passes
        // (the JVM's JIT) as --jit-warmup says, each on a fresh PC; reported as one `warmup`.
        int jitCount = cell.warmup > 0 ? cell.warmup : Math.min(cell.n, 1000);
        int passes = (cell.warmup > 0 ? 1 : 0) + (jitCount > 0 ? settings.jitWarmupPasses : 0);
        if (passes > 0) {
            long started = System.nanoTime();
            for (int p = 0; p < passes; p++) {
                Pass pass = new Pass(cell, settings, jitCount, true, state);
                pass.run(records);
                pass.close();
            }
            System.gc();
            out.write("warmup " + (System.nanoTime() - started) + "\n");
        }

        StringBuilder line = new StringBuilder(96);
        for (int rep = 0; rep < cell.repeat; rep++) {
            Pass pass = cell.n > 0 ? new Pass(cell, settings, cell.n, false, state) : null;
            // said before the first record is made available: the harness reads CPU from here
            out.write("rep " + rep + "\n");
            out.flush();
            long lastSend = 0, finished = 0;
            long[] gcBefore = gcTotals();
            long[] gcAfter = gcBefore;
            if (pass != null) {
                pass.run(records);
                gcAfter = gcTotals();
                lastSend = pass.lastSend;
                finished = pass.finished;
                for (int i = 0; i < cell.n; i++) {
                    writeRecord(out, line, cell, i, pass.start[i] - pass.origin, pass.end[i] - pass.origin, pass.thread[i]);
                }
                for (long[] again : pass.repeats) {
                    int i = (int) again[0];
                    long end = again[2] - pass.origin;
                    if (end <= finished) {
                        writeRecord(out, line, cell, i, again[1] - pass.origin, end, again[3]);
                    }
                }
            }
            // The collector beans' counts while the repetition ran (on Java 17's G1: its pauses).
            out.write("gc " + (gcAfter[0] - gcBefore[0]) + " " + (gcAfter[1] - gcBefore[1]) * 1_000_000L + "\n");
            out.write("end " + rep + " " + lastSend + " " + finished + "\n");
            out.flush();
            if (pass != null) {
                // between `end` and the next `rep`: outside the timing. The collection also
                // retires the idle control and broker-poll threads a closed PC leaves behind
                // (its single-thread executors are shut down when collected).
                pass.close();
                System.gc();
            }
        }
        out.write("done\n");
        out.flush();
    }

    static void writeRecord(Writer out, StringBuilder line, Cell cell, int i, long start, long end, long thread)
            throws IOException {
        line.setLength(0);
        line.append("r ").append(cell.type[i]).append(' ').append(cell.id[i]).append(' ').append(cell.seq[i])
                .append(" 0 ").append(start).append(' ').append(end).append(' ').append(thread).append('\n');
        out.append(line);
    }

    /** Collections so far and the milliseconds they took, over every collector bean. */
    private static long[] gcTotals() {
        long count = 0, millis = 0;
        for (GarbageCollectorMXBean bean : ManagementFactory.getGarbageCollectorMXBeans()) {
            count += Math.max(0, bean.getCollectionCount());
            millis += Math.max(0, bean.getCollectionTime());
        }
        return new long[] {count, millis};
    }
}
