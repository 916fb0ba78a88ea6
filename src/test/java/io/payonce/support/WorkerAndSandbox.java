package io.payonce.support;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;


/**
 * The two instances every recovery test starts: a worker W, which the test kills, stops or cuts off, and an
 * instance S whose sandbox is W's channel and which nothing disturbs, so its ledger outlives whatever
 * happens to W. W serves no sandbox of its own, reconciles every second and gives the channel 1 s; a test adds what it is about
 * with {@link #worker(String, String)} before {@link #start}.
 */
public final class WorkerAndSandbox implements AutoCloseable {

    private final AppProcess sandbox;
    private final AppProcess worker;
    private PayClient channel;
    private PayClient client;

    private WorkerAndSandbox(String test) throws IOException {
        sandbox = AppProcess.named(test + "-sandbox");
        worker = AppProcess.named(test + "-worker")
                .channel(sandbox.sandboxUrl())
                .env("PAYONCE_SANDBOX_ENABLED", "false")
                .env("PAYONCE_RECONCILE_INTERVAL", "1s")
                // short, so that the tests' short reconciliation ages and leases can be above it, as they must
                .env("PAYONCE_CHANNEL_TIMEOUT", "1s");
    }

    /** S and W, their logs named after {@code test}; not started yet. */
    public static WorkerAndSandbox named(String test) throws IOException {
        return new WorkerAndSandbox(test);
    }

    /** Sets an environment variable of W's for its first and every later start. */
    public WorkerAndSandbox worker(String key, String value) {
        worker.env(key, value);
        return this;
    }

    /** Starts both and waits for both; then {@code merchant} pays through W, and S's sandbox charges normally. */
    public void start(String merchant) throws IOException, InterruptedException {
        AppProcess.startAll(sandbox, worker);
        channel = new PayClient(sandbox, merchant);
        client = new PayClient(worker, merchant);
        channel.sandbox("ok", 0, 0);
    }

    public AppProcess worker() {
        return worker;
    }

    /** S, for the sandbox's behaviour and the books. */
    public PayClient channel() {
        return channel;
    }

    /** W, for payments. */
    public PayClient client() {
        return client;
    }

    /** One payment through W, so what the test does next finds W past its first, slow requests. */
    public PayRequest warmUp() {
        PayRequest request = client.newRequest();
        assertEquals(200, client.pay(request).status(), "a warm-up payment");
        return request;
    }

    /** W first, then S. */
    @Override
    public void close() throws InterruptedException {
        AppProcess.closeAll(worker, sandbox);
    }
}
