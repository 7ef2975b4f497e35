import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Properties;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The latency benchmark's feeder (end_to_end.py starts it with the broker's Kafka jars): views at
 * `viewRate`/s and updates at `updateRate`/s, each record's event time the wall clock (in µs) just
 * before its send. A JVM producer with `linger.ms` 0 by default: the Python client took up to a
 * quarter of a second (p99) from a send to the broker's append on the 2-core machine, and most of
 * a core at 10,000 records/s. Starts sending when a line arrives on stdin; prints the counts as JSON.
 *
 * <p>Usage: {@code java -cp '<kafka libs>/*' Feeder.java bootstrap updates views viewRate updateRate seconds
 * lingerMs ads}
 */
public final class Feeder {
  public static void main(String[] args) throws Exception {
    String bootstrap = args[0], updates = args[1], views = args[2];
    long viewRate = Long.parseLong(args[3]), updateRate = Long.parseLong(args[4]);
    double seconds = Double.parseDouble(args[5]);
    int ads = Integer.parseInt(args[7]);
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ProducerConfig.ACKS_CONFIG, "1");
    props.put(ProducerConfig.LINGER_MS_CONFIG, args[6]);
    props.put(ProducerConfig.BATCH_SIZE_CONFIG, "65536");
    props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer())) {
      producer.partitionsFor(updates); // metadata before the clock starts
      producer.partitionsFor(views);
      System.out.println("ready");
      System.out.flush();
      new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
      long start = System.nanoTime();
      long sentU = 0, sentV = 0;
      StringBuilder json = new StringBuilder(96);
      while (true) {
        double elapsed = (System.nanoTime() - start) / 1e9;
        if (elapsed >= seconds) break;
        while (sentU < elapsed * updateRate) {
          // (a StringBuilder, not String.format: the feeder shares the 2 cores with what it measures)
          json.setLength(0);
          json.append("{\"ad_id\":\"ad").append(sentU % ads).append("\",\"ts_us\":").append(nowMicros())
              .append(",\"campaign\":\"c").append(sentU).append("\"}");
          producer.send(new ProducerRecord<>(updates, json.toString().getBytes(StandardCharsets.UTF_8)));
          sentU++;
        }
        while (sentV < elapsed * viewRate) {
          json.setLength(0);
          json.append("{\"event_id\":").append(sentV).append(",\"ad_id\":\"ad").append((sentV * 7) % ads)
              .append("\",\"ts_us\":").append(nowMicros()).append('}');
          producer.send(new ProducerRecord<>(views, json.toString().getBytes(StandardCharsets.UTF_8)));
          sentV++;
        }
        LockSupport.parkNanos(200_000L);
      }
      // U must pass the last views: a last round of updates a little later.
      Thread.sleep(50);
      long last = nowMicros();
      for (int a = 0; a < ads; a++) {
        String end = String.format("{\"ad_id\":\"ad%d\",\"ts_us\":%d,\"campaign\":\"end\"}", a, last);
        producer.send(new ProducerRecord<>(updates, end.getBytes(StandardCharsets.UTF_8)));
      }
      producer.flush();
      System.out.println("{\"views\": " + sentV + ", \"updates\": " + sentU + "}");
    }
  }

  private static long nowMicros() {
    Instant now = Instant.now();
    return now.getEpochSecond() * 1_000_000L + now.getNano() / 1000;
  }
}
