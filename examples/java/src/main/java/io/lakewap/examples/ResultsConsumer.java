package io.lakewap.examples;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;

import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.message.BinaryMessageDecoder;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Reads lakewap's results topic and prints one line per event: its type, dataset/batch, then key=value
 * pairs, e.g.
 *
 * <pre>
 * BatchPublished billing/2024-06-01 target=main commit=9f3c... checks=5 passed=true
 * BatchAborted billing/2024-06-02 reason=audit_failed failed=billing_id_not_null:40/1000 branch=wap-billing-2024-06-02 kept=true
 * </pre>
 *
 * <p>Values are Avro in single-object encoding (C3 01, the schema's 8-byte CRC-64-AVRO fingerprint,
 * the body), written with the schemas lakewap publishes (its schemas/*.avsc); the wap.event_type
 * header names the record. With a schema registry lakewap writes the Confluent wire format instead:
 * use Confluent's KafkaAvroDeserializer there.
 *
 * <pre>
 * --brokers HOST:PORT  Kafka bootstrap servers (env LAKEWAP_BROKERS; localhost:9092)
 * --topic NAME         the results topic (env LAKEWAP_RESULTS_TOPIC; wap.results)
 * --group ID           consumer group (env LAKEWAP_GROUP; a new one per run)
 * --schemas DIR        directory of lakewap's .avsc files (env LAKEWAP_SCHEMAS; ../../schemas)
 * --from-beginning     read the topic from its start when the group has no offsets
 * --exit-at-end        stop once every partition has been read to its end
 * </pre>
 */
public final class ResultsConsumer {
    private static final String HEADER_EVENT_TYPE = "wap.event_type";

    public static void main(String[] args) throws Exception {
        Map<String, String> opt = parseArgs(args);
        String brokers = opt.getOrDefault("brokers", env("LAKEWAP_BROKERS", "localhost:9092"));
        String topic = opt.getOrDefault("topic", env("LAKEWAP_RESULTS_TOPIC", "wap.results"));
        String group = opt.getOrDefault("group", env("LAKEWAP_GROUP", "lakewap-results-" + UUID.randomUUID()));
        File schemas = new File(opt.getOrDefault("schemas", env("LAKEWAP_SCHEMAS", "../../schemas")));
        boolean exitAtEnd = opt.containsKey("exit-at-end");

        Map<String, BinaryMessageDecoder<GenericRecord>> decoders = loadDecoders(schemas);

        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, opt.containsKey("from-beginning") ? "earliest" : "latest");
        // Offsets are committed after the events are handled (at least once).
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());

        // lakewap may send an outcome twice (after a crash); the copy has the same event_id.
        Set<String> seen = recentlySeen(10_000);
        try (KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            while (true) {
                for (ConsumerRecord<String, byte[]> rec : consumer.poll(Duration.ofMillis(500))) {
                    String type = header(rec, HEADER_EVENT_TYPE);
                    BinaryMessageDecoder<GenericRecord> decoder = decoders.get(type);
                    if (decoder == null) {
                        System.err.printf("skipping %s-%d@%d: unknown event type %s%n", rec.topic(), rec.partition(), rec.offset(), type);
                        continue;
                    }
                    GenericRecord event;
                    try {
                        event = decoder.decode(rec.value());
                    } catch (Exception e) {
                        System.err.printf("skipping %s-%d@%d: cannot decode %s: %s%n", rec.topic(), rec.partition(), rec.offset(), type, e);
                        continue;
                    }
                    if (seen.add(str(event, "event_id"))) {
                        System.out.println(describe(type, event));
                    }
                }
                consumer.commitSync();
                if (exitAtEnd && atEnd(consumer)) {
                    return;
                }
            }
        }
    }

    /** One line for an event: type, dataset/batch, and what a downstream job acts on. */
    static String describe(String type, GenericRecord e) {
        StringBuilder line = new StringBuilder(type).append(' ').append(str(e, "dataset")).append('/').append(str(e, "batch_id"));
        switch (type) {
            case "BranchReady" -> kv(line, "branch", str(e, "branch"));
            case "BatchPublished" -> {
                GenericRecord report = (GenericRecord) e.get("report");
                kv(line, "target", str(e, "target_ref"));
                kv(line, "commit", str(e, "commit_id"));
                kv(line, "checks", String.valueOf(((List<?>) report.get("checks")).size()));
                kv(line, "passed", String.valueOf(report.get("passed")));
            }
            case "BatchAborted" -> {
                kv(line, "reason", str(e, "reason"));
                if (e.get("report") instanceof GenericRecord report) {
                    kv(line, "failed", failedChecks(report));
                }
                kv(line, "branch", str(e, "branch"));
                kv(line, "kept", String.valueOf(e.get("branch_kept")));
            }
            case "BatchFailed" -> {
                kv(line, "state", str(e, "state"));
                kv(line, "branch", str(e, "branch"));
                kv(line, "error", '"' + str(e, "error") + '"');
            }
            case "BatchReverted" -> {
                kv(line, "target", str(e, "target_ref"));
                kv(line, "commit", str(e, "commit_id"));
                kv(line, "by", str(e, "reverted_by"));
            }
            case "RequestRefused" -> {
                kv(line, "request", str(e, "request_type"));
                kv(line, "reason", str(e, "reason"));
            }
            default -> { }
        }
        return line.toString();
    }

    /** The checks that blocked the batch, as name:failures/rows_checked (the counts where known). */
    static String failedChecks(GenericRecord report) {
        List<String> failed = new ArrayList<>();
        for (Object o : (List<?>) report.get("checks")) {
            GenericRecord c = (GenericRecord) o;
            String status = str(c, "status");
            if (!status.equals("fail") && !status.equals("error")) {
                continue;
            }
            String s = str(c, "name");
            if (c.get("failures") != null) {
                s += ":" + c.get("failures");
                if (c.get("rows_checked") != null) {
                    s += "/" + c.get("rows_checked");
                }
            }
            failed.add(s);
        }
        return String.join(",", failed);
    }

    /**
     * A decoder per event type. AuditReport is parsed first: BatchPublished and BatchAborted refer to
     * it by name. A decoder takes the messages whose fingerprint is of its schema or of an older version.
     */
    static Map<String, BinaryMessageDecoder<GenericRecord>> loadDecoders(File dir) throws Exception {
        File[] files = dir.listFiles((d, name) -> name.endsWith(".avsc"));
        if (files == null || files.length == 0) {
            throw new IllegalArgumentException("no .avsc files in " + dir + " (set --schemas to lakewap's schemas/)");
        }
        Arrays.sort(files, (a, b) -> Boolean.compare(!a.getName().equals("AuditReport.avsc"), !b.getName().equals("AuditReport.avsc")));
        Schema.Parser parser = new Schema.Parser();
        Map<String, BinaryMessageDecoder<GenericRecord>> decoders = new HashMap<>();
        for (File f : files) {
            Schema s = parser.parse(f);
            decoders.put(s.getName(), new BinaryMessageDecoder<>(GenericData.get(), s));
        }
        // Older versions (self-contained files) of the current schemas: events lakewap wrote before an
        // upgrade still decode, resolved into the current schema (new fields at their defaults).
        File[] history = new File(dir, "history").listFiles((d, name) -> name.endsWith(".avsc"));
        for (File f : history == null ? new File[0] : history) {
            Schema old = new Schema.Parser().parse(f);
            if (decoders.containsKey(old.getName())) {
                decoders.get(old.getName()).addSchema(old);
            }
        }
        return decoders;
    }

    /** True once the consumer has partitions and has read each to its end offset. */
    static boolean atEnd(KafkaConsumer<?, ?> consumer) {
        Set<TopicPartition> assigned = consumer.assignment();
        if (assigned.isEmpty()) {
            return false;
        }
        Map<TopicPartition, Long> ends = consumer.endOffsets(assigned);
        return assigned.stream().allMatch(tp -> consumer.position(tp) >= ends.get(tp));
    }

    static Set<String> recentlySeen(int max) {
        return java.util.Collections.newSetFromMap(new LinkedHashMap<String, Boolean>() {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
                return size() > max;
            }
        });
    }

    static String header(ConsumerRecord<?, ?> rec, String name) {
        Header h = rec.headers().lastHeader(name);
        return h == null ? "" : new String(h.value(), StandardCharsets.UTF_8);
    }

    static String str(GenericRecord r, String field) {
        Object v = r.get(field);
        return v == null ? "" : v.toString();
    }

    static void kv(StringBuilder line, String key, String value) {
        line.append(' ').append(key).append('=').append(value);
    }

    static String env(String name, String fallback) {
        String v = System.getenv(name);
        return v == null || v.isEmpty() ? fallback : v;
    }

    /** --name value and --flag, nothing more (a real job would use picocli or its framework's config). */
    static Map<String, String> parseArgs(String[] args) {
        Set<String> flags = Set.of("from-beginning", "exit-at-end");
        Set<String> valued = Set.of("brokers", "topic", "group", "schemas");
        Map<String, String> opt = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String name = args[i].replaceFirst("^--?", "");
            if (flags.contains(name)) {
                opt.put(name, "true");
            } else if (valued.contains(name) && i + 1 < args.length) {
                opt.put(name, args[++i]);
            } else {
                System.err.println("usage: ResultsConsumer [--brokers HOST:PORT] [--topic NAME] [--group ID] [--schemas DIR] [--from-beginning] [--exit-at-end]");
                System.exit(2);
            }
        }
        return opt;
    }
}
