// Waits until a Kafka cluster answers with all of its brokers, for scripts/kafka.sh.
//
//   java -cp CLASSPATH Ready.java BOOTSTRAP BROKERS TIMEOUT_MS
//
// Asks the cluster to describe itself (a DescribeCluster request through the admin client)
// every 250 ms until the answer lists BROKERS brokers, or TIMEOUT_MS have passed. Exit 0:
// ready; exit 1: not ready within the bound, with the last answer or error on standard
// error.

import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterOptions;

public class Ready {
    public static void main(String[] args) throws InterruptedException {
        String bootstrap = args[0];
        int brokers = Integer.parseInt(args[1]);
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Long.parseLong(args[2]));
        Properties config = new Properties();
        config.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "2000");
        config.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "2000");
        config.put(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "250");
        String last = "no answer yet";
        try (Admin admin = Admin.create(config)) {
            while (System.nanoTime() < deadline) {
                DescribeClusterOptions options = new DescribeClusterOptions().timeoutMs(2000);
                try {
                    int seen = admin.describeCluster(options).nodes().get(2, TimeUnit.SECONDS).size();
                    if (seen >= brokers) {
                        return;
                    }
                    last = seen + " of " + brokers + " brokers registered";
                } catch (Exception error) {
                    Throwable cause = error.getCause() == null ? error : error.getCause();
                    last = cause.toString();
                }
                Thread.sleep(250);
            }
        }
        System.err.println("the cluster at " + bootstrap + " was not ready: " + last);
        System.exit(1);
    }
}
