/*
 * A keyed-bench consumer driver (docs/external.md, protocol version 1, "Consumers") for
 * Confluent Parallel Consumer 0.5.3.3: PC's core (ParallelEoSStreamProcessor) on a real
 * KafkaConsumer, consuming a pipeline cell's topic in its group with PC's own commits. Its
 * user function reports every record it starts (`s P O`) and applies (`a P O KEY VERSION`);
 * on `stop` PC closes, draining first, and commits what completed.
 *
 * Usage: java -cp 'target/classes:target/lib/*' PcConsumer --ordering KEY|PARTITION|UNORDERED [--commit-interval-ms MS]
 * Standard input and output are the protocol's; standard output carries nothing else (logs
 * go to standard error at WARN). The harness may SIGKILL the process at any time: every line
 * is written whole in one write(2), and a record's `a` line is out before its user function
 * returns. See README.md.
 */

import io.confluent.parallelconsumer.ParallelConsumerOptions;
import io.confluent.parallelconsumer.ParallelConsumerOptions.ProcessingOrder;
import io.confluent.parallelconsumer.ParallelEoSStreamProcessor;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

public final class PcConsumer {

    static final String HEADER = PcDriver.HEADER;
    static final String PC_VERSION = PcDriver.PC_VERSION;
    /** A key is a big-endian u64; a value is version u64, payload size u32, produce time u64. */
    static final int KEY_BYTES = 8, VALUE_BYTES = 20;

    /** A failure the driver reports on standard error before exiting with `status`. */
    static final class Failure extends Exception {
        private static final long serialVersionUID = 1L;
        final int status;

        Failure(String message) {
            this(message, null, 1);
        }

        Failure(String message, Throwable cause) {
            this(message, cause, 1);
        }

        Failure(String message, Throwable cause, int status) {
            super(message, cause);
            this.status = status;
        }
    }

    // ---------------------------------------------------------------------------------------
    // Standard output and exits

    /**
     * The protocol's standard output: each line (or the hello) is one write(2) to file
     * descriptor 1 under one lock, so that PC's worker threads never interleave and a line
     * that reached the pipe is whole, whenever the process is killed. Nothing is buffered:
     * a write is flushed when it returns.
     */
    static final class Out {
        private final FileOutputStream stream = new FileOutputStream(FileDescriptor.out);

        synchronized void write(String text) {
            try {
                stream.write(text.getBytes(StandardCharsets.UTF_8));
            } catch (IOException e) {
                die("writing standard output failed: " + e);
            }
        }
    }

    static final Out OUT = new Out();

    /** Exits at once with `status`, holding the output's lock (no line is cut short). */
    static void exit(int status) {
        synchronized (OUT) {
            System.err.flush();
            // PC's threads are not daemons and a failed PC may not end them: halt
            Runtime.getRuntime().halt(status);
        }
    }

    /** Says why on standard error and exits 1 at once. */
    static void die(String message) {
        synchronized (OUT) {
            System.err.println("PcConsumer: " + message);
            exit(1);
        }
    }

    // ---------------------------------------------------------------------------------------
    // Arguments and the request

    /**
     * The command line: PC's ordering; its commit interval and messageBufferSize at PC's
     * defaults unless given (`--buffer window`: messageBufferSize = the cell's window, as
     * PcDriver maps it).
     */
    record Settings(ProcessingOrder ordering, Duration commitInterval, String trace, boolean defaultBuffer) {}

    static final String USAGE =
            "usage: PcConsumer --ordering KEY|PARTITION|UNORDERED [--commit-interval-ms MS] [--buffer window|default] [--trace FILE]";

    /**
     * `--trace FILE`: every user-function call also appended to FILE-INCARNATION (`s P O`
     * on entry, `a P O` before it returns), unbuffered and apart from the protocol: what PC
     * ran, as the process saw it, even after it was killed.
     */
    static volatile FileOutputStream TRACE;

    static void trace(String line) {
        FileOutputStream trace = TRACE;
        if (trace == null) return;
        synchronized (PcConsumer.class) {
            try {
                trace.write(line.getBytes(StandardCharsets.UTF_8));
            } catch (IOException e) {
                die("writing the trace failed: " + e);
            }
        }
    }

    static Settings parseArgs(String[] args) throws Failure {
        ProcessingOrder ordering = null;
        Duration commitInterval = null;
        String trace = null;
        boolean defaultBuffer = true;
        for (int i = 0; i < args.length; i += 2) {
            String flag = args[i];
            if (!flag.equals("--ordering") && !flag.equals("--commit-interval-ms") && !flag.equals("--trace")
                    && !flag.equals("--buffer")) {
                throw new Failure("unknown argument `" + flag + "` (" + USAGE + ")", null, 2);
            }
            if (i + 1 >= args.length) {
                throw new Failure("`" + flag + "` needs a value (" + USAGE + ")", null, 2);
            }
            String value = args[i + 1];
            if (flag.equals("--buffer")) {
                if (!value.equals("window") && !value.equals("default")) {
                    throw new Failure("`--buffer " + value + "`: window (messageBufferSize = the cell's window) or default (PC's)", null, 2);
                }
                defaultBuffer = value.equals("default");
                continue;
            }
            if (flag.equals("--trace")) {
                trace = value;
                continue;
            }
            if (flag.equals("--commit-interval-ms")) {
                try {
                    long ms = Long.parseLong(value);
                    if (ms < 1) throw new NumberFormatException();
                    commitInterval = Duration.ofMillis(ms);
                } catch (NumberFormatException e) {
                    throw new Failure("`--commit-interval-ms " + value + "`: a whole number of milliseconds, 1 or more", null, 2);
                }
                continue;
            }
            try {
                ordering = ProcessingOrder.valueOf(value);
            } catch (IllegalArgumentException e) {
                throw new Failure("`--ordering " + value + "`: KEY, PARTITION or UNORDERED", null, 2);
            }
        }
        if (ordering == null) {
            throw new Failure("--ordering KEY|PARTITION|UNORDERED is required (" + USAGE + ")", null, 2);
        }
        return new Settings(ordering, commitInterval, trace, defaultBuffer);
    }

    /** One incarnation's settings: the lines from `consume` to `go`. */
    static final class Request {
        String scenario, param, bootstrap, topic, group;
        int incarnation, sessionTimeoutMs, partitions, workers, window;
        long records, spinNs;
        /** Per partition: offset -> the wait in ns after the spin. Read-only once built. */
        List<Map<Long, Long>> slow;
        int slowCount;

        long waitNs(int partition, long offset) {
            if (partition < 0 || partition >= slow.size()) return 0;
            Long ns = slow.get(partition).get(offset);
            return ns == null ? 0 : ns;
        }
    }

    static final List<String> REQUIRED = List.of("scenario", "param", "incarnation", "bootstrap", "topic", "group",
            "session-timeout-ms", "partitions", "records", "workers", "window", "spin");

    static Request readRequest(BufferedReader in) throws IOException, Failure {
        Request r = new Request();
        Set<String> seen = new HashSet<>();
        List<long[]> slow = new ArrayList<>();
        int lineNo = 0;
        for (String line; (line = in.readLine()) != null; ) {
            lineNo++;
            String[] w = line.split(" ", -1);
            String at = "request line " + lineNo + " `" + PcDriver.clip(line) + "`";
            if (REQUIRED.contains(w[0]) && !seen.add(w[0])) {
                throw new Failure(at + ": `" + w[0] + "` given twice");
            }
            switch (w[0]) {
                case "scenario" -> r.scenario = PcDriver.rest(line);
                case "param" -> r.param = PcDriver.rest(line);
                case "incarnation" -> r.incarnation = (int) numbers(at, w, 1, 0, Integer.MAX_VALUE)[0];
                case "bootstrap" -> r.bootstrap = word(at, w);
                case "topic" -> r.topic = word(at, w);
                case "group" -> r.group = word(at, w);
                case "session-timeout-ms" -> r.sessionTimeoutMs = (int) numbers(at, w, 1, 1, Integer.MAX_VALUE)[0];
                case "partitions" -> r.partitions = (int) numbers(at, w, 1, 1, Integer.MAX_VALUE)[0];
                case "records" -> r.records = numbers(at, w, 1, 0, Long.MAX_VALUE)[0];
                case "workers" -> r.workers = (int) numbers(at, w, 1, 1, Integer.MAX_VALUE)[0];
                case "window" -> r.window = (int) numbers(at, w, 1, 0, Integer.MAX_VALUE)[0];
                case "spin" -> r.spinNs = numbers(at, w, 1, 0, Long.MAX_VALUE)[0];
                case "slow" -> slow.add(numbers(at, w, 3, 0, Long.MAX_VALUE));
                case "go" -> {
                    if (w.length != 1) {
                        throw new Failure(at + ": `go` takes nothing");
                    }
                    List<String> missing = REQUIRED.stream().filter(word -> !seen.contains(word)).toList();
                    if (!missing.isEmpty()) {
                        throw new Failure("the request reached `go` without " + String.join(", ", missing));
                    }
                    r.slow = new ArrayList<>(r.partitions);
                    for (int p = 0; p < r.partitions; p++) {
                        r.slow.add(new HashMap<>());
                    }
                    for (long[] s : slow) {
                        if (s[0] >= r.partitions) {
                            throw new Failure("`slow " + s[0] + " " + s[1] + " " + s[2] + "`: the topic has "
                                    + r.partitions + " partitions");
                        }
                        if (r.slow.get((int) s[0]).put(s[1], s[2]) != null) {
                            throw new Failure("`slow " + s[0] + " " + s[1] + " ...` given twice");
                        }
                    }
                    r.slowCount = slow.size();
                    return r;
                }
                default -> throw new Failure(at + ": unknown line");
            }
        }
        throw new Failure("the request ended before `go`");
    }

    /** The `count` numbers after the line's first word, each in [min, max]. */
    static long[] numbers(String at, String[] w, int count, long min, long max) throws Failure {
        if (w.length != count + 1) {
            throw new Failure(at + ": `" + w[0] + "` takes " + count + (count == 1 ? " number" : " numbers"));
        }
        long[] n = new long[count];
        for (int i = 0; i < count; i++) {
            try {
                if (!w[i + 1].matches("[0-9]+")) throw new NumberFormatException();
                n[i] = Long.parseLong(w[i + 1]);
            } catch (NumberFormatException e) {
                throw new Failure(at + ": `" + PcDriver.clip(w[i + 1]) + "` is not a number");
            }
            if (n[i] < min || n[i] > max) {
                throw new Failure(at + ": " + n[i] + " is out of range (" + min + " to " + max + ")");
            }
        }
        return n;
    }

    /** The one non-empty word after the line's first. */
    static String word(String at, String[] w) throws Failure {
        if (w.length != 2 || w[1].isEmpty()) {
            throw new Failure(at + ": `" + w[0] + "` takes one word");
        }
        return w[1];
    }

    // ---------------------------------------------------------------------------------------
    // The user function, on Parallel Consumer's worker threads

    static final AtomicLong HANDLED = new AtomicLong();
    static final AtomicLong FIRST_START = new AtomicLong();

    static void handle(Request r, ConsumerRecord<byte[], byte[]> record) {
        int partition = record.partition();
        long offset = record.offset();
        byte[] key = record.key(), value = record.value();
        if (key == null || key.length != KEY_BYTES || value == null || value.length != VALUE_BYTES) {
            // nothing written for it, and the function never returns: PC neither completes
            // nor commits it
            die("warning: the record at partition " + partition + " offset " + offset + " has a key of "
                    + (key == null ? "null" : key.length + " bytes") + " and a value of "
                    + (value == null ? "null" : value.length + " bytes") + ", not " + KEY_BYTES + " and "
                    + VALUE_BYTES + " bytes: not the suite's record format");
        }
        FIRST_START.compareAndSet(0, System.nanoTime());
        OUT.write("s " + partition + " " + offset + "\n");
        trace("s " + partition + " " + offset + "\n");
        PcDriver.spin(r.spinNs);
        long waitNs = r.waitNs(partition, offset);
        if (waitNs > 0) park(waitNs);
        long k = ByteBuffer.wrap(key).getLong();
        long version = ByteBuffer.wrap(value, 0, 8).getLong();
        trace("a " + partition + " " + offset + "\n");
        OUT.write("a " + partition + " " + offset + " " + Long.toUnsignedString(k) + " "
                + Long.toUnsignedString(version) + "\n");
        HANDLED.incrementAndGet();
    }

    /**
     * Blocks the worker thread for `ns` (PC core has no non-blocking wait), to the nanosecond
     * as PcDriver's `block` does, and the whole time: an interrupt is kept for after it.
     */
    static void park(long ns) {
        boolean interrupted = false;
        long until = System.nanoTime() + ns;
        for (long left = ns; left > 0; left = until - System.nanoTime()) {
            LockSupport.parkNanos(left);
            if (Thread.interrupted()) interrupted = true;
        }
        if (interrupted) Thread.currentThread().interrupt();
    }

    // ---------------------------------------------------------------------------------------
    // The session

    public static void main(String[] args) {
        // The protocol's stream is OUT; anything else that prints to System.out goes to stderr.
        System.setOut(System.err);
        int status;
        try {
            status = session(parseArgs(args));
        } catch (Failure e) {
            System.err.println("PcConsumer: " + e.getMessage());
            if (e.getCause() != null) e.getCause().printStackTrace(System.err);
            status = e.status;
        } catch (Throwable e) {
            System.err.println("PcConsumer: unexpected error: " + e);
            e.printStackTrace(System.err);
            status = 1;
        }
        exit(status);
    }

    static int session(Settings settings) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 16);
        String first = in.readLine();
        if (!HEADER.equals(first)) {
            throw new Failure("the first line is not `" + HEADER + "`");
        }
        OUT.write(hello(settings));
        String next = in.readLine();
        if (next == null) return 0; // asked for the hello only
        if (!next.equals("consume")) {
            throw new Failure("expected `consume`, got `" + PcDriver.clip(next) + "`");
        }
        return consume(readRequest(in), settings, in);
    }

    static String hello(Settings settings) {
        ProcessingOrder ordering = settings.ordering();
        String commits = settings.commitInterval() == null
                ? "PC's default commit interval"
                : "commits every " + settings.commitInterval().toMillis() + " ms";
        String buffer = settings.defaultBuffer() ? "" : ", messageBufferSize = the cell's window";
        return HEADER + "\n"
                + "name Confluent Parallel Consumer " + PC_VERSION + ", " + ordering + " mode, consuming Kafka, "
                + commits + buffer + "\n"
                + "version " + PC_VERSION + "\n"
                + "family " + PcDriver.family(ordering) + "\n"
                + "ordered " + (ordering != ProcessingOrder.UNORDERED) + "\n"
                + "threads shared-pool\n"
                + "arrivals\n"
                + "consumes kafka contiguous+metadata\n"
                + "producers 1\n"
                + "wait none non-blocking: PC core runs user functions synchronously on its own worker pool, "
                + "so a slow record's wait is a blocking sleep (LockSupport.parkNanos) that holds a PC worker thread\n"
                + "source peers/parallel-consumer/pom.xml peers/parallel-consumer/src\n"
                + "ready\n";
    }

    /** The consumer's properties: only these, everything else at kafka-clients' defaults. */
    static Properties consumerProperties(Request r) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, r.bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, r.group);
        p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, Integer.toString(r.sessionTimeoutMs));
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false"); // PC requires it: it commits itself
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "keyed-bench-pc-" + r.incarnation);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
        return p;
    }

    static int consume(Request r, Settings settings, BufferedReader in) throws Exception {
        ProcessingOrder ordering = settings.ordering();
        if (settings.trace() != null) {
            TRACE = new FileOutputStream(settings.trace() + "-" + r.incarnation, true);
        }
        System.err.printf("PcConsumer: %s %s, incarnation %d: topic %s (%d partitions, %d records), group %s at %s, "
                        + "session %d ms; %s order, maxConcurrency %d, messageBufferSize %s; spin %d ns, %d slow records%n",
                r.scenario, r.param, r.incarnation, r.topic, r.partitions, r.records, r.group, r.bootstrap,
                r.sessionTimeoutMs, ordering, r.workers, r.window > 0 && !settings.defaultBuffer() ? Integer.toString(r.window) : "default",
                r.spinNs, r.slowCount);
        long started = System.nanoTime();
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProperties(r));
        var options = ParallelConsumerOptions.<byte[], byte[]>builder()
                .consumer(consumer)
                .ordering(ordering)
                .maxConcurrency(r.workers);
        if (r.window > 0 && !settings.defaultBuffer()) options.messageBufferSize(r.window);
        if (settings.commitInterval() != null) options.commitInterval(settings.commitInterval());
        ParallelEoSStreamProcessor<byte[], byte[]> pc = new ParallelEoSStreamProcessor<>(options.build());
        pc.subscribe(List.of(r.topic));
        pc.poll(context -> handle(r, context.getSingleConsumerRecord()));

        // Standard input, read on its own thread: `stop`, or its end (empty).
        BlockingQueue<Optional<String>> lines = new LinkedBlockingQueue<>();
        Thread reader = new Thread(() -> {
            try {
                for (String line; (line = in.readLine()) != null; ) {
                    lines.add(Optional.of(line));
                }
            } catch (IOException e) {
                System.err.println("PcConsumer: reading standard input failed: " + e);
            }
            lines.add(Optional.empty());
        }, "pc-consumer-stdin");
        reader.setDaemon(true);
        reader.start();

        boolean toldFirst = false;
        while (true) {
            Optional<String> line = lines.poll(100, TimeUnit.MILLISECONDS);
            if (line != null) {
                if (line.isEmpty()) {
                    die("standard input ended without `stop` (the harness went away), " + HANDLED.get()
                            + " records handled");
                }
                if (line.get().equals("stop")) break;
                throw new Failure("expected `stop`, got `" + PcDriver.clip(line.get()) + "`");
            }
            if (pc.isClosedOrFailed()) {
                Exception cause = pc.getFailureCause();
                throw new Failure("Parallel Consumer stopped before `stop`"
                        + (cause == null ? " with no failure cause" : ": " + cause), cause);
            }
            long first = FIRST_START.get();
            if (!toldFirst && first != 0) {
                toldFirst = true;
                System.err.printf("PcConsumer: the first record started %d ms after the consumer was made%n",
                        TimeUnit.NANOSECONDS.toMillis(first - started));
            }
        }

        long closing = System.nanoTime();
        System.err.printf("PcConsumer: stop after %d records handled: closing Parallel Consumer, draining first%n",
                HANDLED.get());
        try {
            pc.closeDrainFirst();
        } catch (Exception e) { // PC rethrows its checked exceptions unchecked (SneakyThrows)
            throw new Failure("Parallel Consumer's close failed: " + e, e);
        }
        if (pc.getFailureCause() != null) {
            throw new Failure("Parallel Consumer failed: " + pc.getFailureCause(), pc.getFailureCause());
        }
        System.err.printf("PcConsumer: closed in %d ms, %d records handled%n",
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - closing), HANDLED.get());
        OUT.write("done\n");
        return 0;
    }
}
