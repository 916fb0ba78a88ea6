package io.payonce.queue;

import java.time.Duration;
import java.util.UUID;
import java.util.function.UnaryOperator;

import io.payonce.support.AppProcess;
import io.payonce.support.PayClient;
import io.payonce.support.QueueClient;
import io.payonce.support.RabbitVhost;

/**
 * A packaged instance with the queue entrance on, in a vhost of the test class's own on the local broker, and a
 * merchant that sends by queue (its own broker user) and by HTTP; ready once every command queue is declared.
 */
final class QueueInstance implements AutoCloseable {

    private static final Duration DECLARED_BOUND = Duration.ofSeconds(20);

    RabbitVhost vhost;
    AppProcess app;
    QueueClient queue;
    PayClient http;

    private QueueInstance() {
    }

    /**
     * Starts the instance {@code name}, configured further by {@code settings}, with the sandbox answering ok;
     * what a failed start did start is closed.
     */
    static QueueInstance start(Class<?> testClass, String name, UnaryOperator<AppProcess> settings)
            throws Exception {
        QueueInstance instance = new QueueInstance();
        try {
            instance.open(testClass, name, settings);
            return instance;
        } catch (Exception | AssertionError failed) {
            instance.close();
            throw failed;
        }
    }

    private void open(Class<?> testClass, String name, UnaryOperator<AppProcess> settings) throws Exception {
        vhost = RabbitVhost.create(testClass);
        String merchant = "merchant_q_" + UUID.randomUUID().toString().substring(0, 8);
        RabbitVhost.Credentials user = vhost.user(merchant);
        app = settings.apply(AppProcess.named(name).env("PAYONCE_QUEUE_ENABLED", "true"));
        vhost.appEnv().forEach(app::env);
        AppProcess.startAll(app);
        queue = QueueClient.connect(vhost, user);
        for (Topology.CommandQueue command : Topology.CommandQueue.values()) {
            queue.awaitQueue(command.name, DECLARED_BOUND);
        }
        http = new PayClient(app, merchant);
        http.sandbox("ok", 0, 0);
    }

    /**
     * A 1 s channel timeout, and the owner's lease (above the channel timeout plus the database timeout, as the
     * service requires) and reconciliation short: a command answered 202 is settled within seconds.
     */
    static AppProcess settlingQuickly(AppProcess app) {
        return app.env("PAYONCE_CHANNEL_TIMEOUT", "1s")
                .env("PAYONCE_IDEMPOTENCY_LEASE", "4s")
                .env("PAYONCE_RECONCILE_INTERVAL", "1s")
                .env("PAYONCE_RECONCILE_MIN_AGE", "2s");
    }

    @Override
    public void close() throws InterruptedException {
        if (queue != null) {
            queue.close();
        }
        AppProcess.closeAll(app);
        if (vhost != null) {
            vhost.close();
        }
    }
}
