// Apache Kafka's Java client (kafka-clients, the version peers/kafka/pom.xml pins) against
// a broker: produce, consume in a group, commit, and resume from the commits. The same
// checks run against `keyed-bench broker` and against Apache Kafka (tests/java_client.rs),
// so that the two brokers are held to one standard.
//
//   java -cp CLASSPATH ClientCheck.java BOOTSTRAP TOPIC GROUP_PROTOCOL
//
// 1. The topic: used as it is if the broker has it (`keyed-bench broker --topic NAME:3`),
//    else made with 3 partitions and deleted at the end, with the group.
// 2. Produce 200 records of 10 keys (idempotent, acks=all): each key lands in one
//    partition, and each send is acknowledged.
// 3. Consume them in a group (GROUP_PROTOCOL: classic or consumer), each key's values in
//    the order produced; commit every partition's next offset with metadata, and read the
//    commits back.
// 4. Produce 50 more; a second member of the group, started after the first closed,
//    resumes from the commits and reads exactly the 50, in order; commits them.
//
// Prints what it did and exits 0; on the first check that fails, prints it and exits 1.
// A topic and group it made are deleted either way.

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class ClientCheck {
    static final int KEYS = 10;
    static final String METADATA = "keyed-bench client check";

    /** A check that failed. */
    static final class Failed extends RuntimeException {
        Failed(String what) {
            super(what);
        }
    }

    static void check(boolean holds, String what) {
        if (!holds) {
            throw new Failed(what);
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        String protocol = args[2];
        String group = topic + "-group";
        Properties common = new Properties();
        common.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        common.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        common.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");

        String failure = null;
        try (Admin admin = Admin.create(common)) {
            Set<String> topics = admin.listTopics().names().get(20, TimeUnit.SECONDS);
            boolean made = !topics.contains(topic);
            if (made) {
                admin.createTopics(List.of(new NewTopic(topic, 3, (short) 1))).all().get(20, TimeUnit.SECONDS);
            }
            try {
                run(admin, common, topic, group, protocol, made);
            } catch (Failed failed) {
                failure = failed.getMessage();
            } finally {
                if (made) {
                    admin.deleteTopics(List.of(topic)).all().get(20, TimeUnit.SECONDS);
                    admin.deleteConsumerGroups(List.of(group)).all().get(20, TimeUnit.SECONDS);
                    System.out.println("deleted the topic and the group");
                }
            }
        }
        if (failure != null) {
            System.out.println("FAILED: " + failure);
            System.exit(1);
        }
        System.out.println("ok");
    }

    /** Steps 2 to 4 on `topic`. */
    static void run(Admin admin, Properties common, String topic, String group, String protocol, boolean made)
            throws Exception {
        int partitions = admin.describeTopics(List.of(topic)).allTopicNames().get(20, TimeUnit.SECONDS)
                .get(topic).partitions().size();
        System.out.println("topic " + topic + ": " + partitions + " partitions"
                + (made ? ", made by the check" : ", the broker's"));

        Map<String, Integer> placed = produce(common, topic, 0, 200);
        System.out.println("produced 200 records of " + KEYS + " keys, each key to one partition: " + placed);

        Map<TopicPartition, Long> committed = consume(common, topic, group, protocol, 200, 0);
        System.out.println("consumed 200 in group " + group + " (" + protocol
                + "), each key in order; committed and read back " + committed);

        produce(common, topic, 200, 50);
        consume(common, topic, group, protocol, 50, 200);
        System.out.println("a second member resumed from the commits and consumed exactly the 50 records produced since, in order");
    }

    /** Produces records `from` to `from + count - 1` (key k<i mod KEYS>, value <i>); each key's partition. */
    static Map<String, Integer> produce(Properties common, String topic, int from, int count) throws Exception {
        Properties config = new Properties();
        config.putAll(common);
        config.remove(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG);
        config.put(ProducerConfig.ACKS_CONFIG, "all");
        config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        config.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        config.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        Map<String, Integer> placed = new HashMap<>();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(config)) {
            List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = from; i < from + count; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, "k" + (i % KEYS), Integer.toString(i))));
            }
            producer.flush();
            for (int i = 0; i < sent.size(); i++) {
                RecordMetadata metadata = sent.get(i).get(20, TimeUnit.SECONDS);
                String key = "k" + ((from + i) % KEYS);
                Integer before = placed.putIfAbsent(key, metadata.partition());
                check(before == null || before == metadata.partition(), key + " landed in two partitions");
            }
        }
        return placed;
    }

    /**
     * One member of `group` reads `expected` records, checks each key's values are the
     * next ones produced (the first `from`), commits with metadata and reads the commits back.
     */
    static Map<TopicPartition, Long> consume(Properties common, String topic, String group, String protocol,
            int expected, int from) throws Exception {
        Properties config = new Properties();
        config.putAll(common);
        config.remove(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG);
        config.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        config.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        Map<String, Integer> next = new HashMap<>();
        for (int k = 0; k < KEYS; k++) {
            int first = k;
            while (first < from) {
                first += KEYS;
            }
            next.put("k" + k, first);
        }
        Map<TopicPartition, Long> offsets = new HashMap<>();
        int read = 0;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(config)) {
            consumer.subscribe(List.of(topic));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (read < expected) {
                check(System.nanoTime() < deadline, "only " + read + " of " + expected + " records within 60 s");
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                    int value = Integer.parseInt(record.value());
                    check(value == next.get(record.key()),
                            record.key() + ": " + value + " came where " + next.get(record.key()) + " was next");
                    next.put(record.key(), value + KEYS);
                    offsets.put(new TopicPartition(record.topic(), record.partition()), record.offset() + 1);
                    read++;
                }
            }
            // Nothing more than expected arrives.
            for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
                check(false, "an extra record: " + record.key() + "=" + record.value());
            }
            Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
            offsets.forEach((partition, offset) -> commit.put(partition, new OffsetAndMetadata(offset, METADATA)));
            consumer.commitSync(commit);
            Map<TopicPartition, OffsetAndMetadata> back = consumer.committed(commit.keySet());
            for (TopicPartition partition : commit.keySet()) {
                OffsetAndMetadata stored = back.get(partition);
                check(stored != null && stored.offset() == offsets.get(partition) && METADATA.equals(stored.metadata()),
                        partition + ": committed " + commit.get(partition) + ", read back " + stored);
            }
        }
        return offsets;
    }
}
