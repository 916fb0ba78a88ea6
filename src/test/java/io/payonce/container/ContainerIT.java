package io.payonce.container;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

import io.payonce.support.Answer;
import io.payonce.support.Await;
import io.payonce.support.Concurrently;
import io.payonce.support.DevCa;
import io.payonce.support.PayClient;
import io.payonce.support.PayRequest;

/**
 * The native container as deployed by {@code scripts/container.sh up}: two service containers (the prod profile,
 * business ports over mTLS, read-only, user 1001) behind the shipped gateway. {@code scripts/container.sh test}
 * starts the deployment and runs this class against it with the {@code payonce.container.*} properties; without
 * them (the README's test command) the class is skipped, since it needs the image and podman.
 *
 * <p>The sandbox of the first container is both containers' channel, turned on as a provider's test mode, so the
 * ledger of what was charged can be read; it is read straight from that container over mTLS, with the gateway's
 * certificate (the gateway lets no one at {@code /sandbox}). Each test kills or stops a container only after the
 * tests before it are done with the deployment, and leaves both running.
 */
@EnabledIfSystemProperty(named = "payonce.container.gateway", matches = "\\d+")
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ContainerIT {

    private static final Duration COMMAND_BOUND = Duration.ofSeconds(90);
    /** Past a dead owner's lease (30 s) and reconciliation's minimum age (30 s) and its interval (5 s). */
    private static final Duration SETTLE_BOUND = Duration.ofSeconds(150);
    private static final Duration STORM_BOUND = Duration.ofSeconds(60);
    private static final int STORM_PAYMENTS = 40;
    private static final int STORM_CLIENTS = 16;
    /** Above the service's shutdown bound (1 s delay + 10 s) and the script's stop timeout (15 s). */
    private static final Duration STOP_BOUND = Duration.ofSeconds(30);
    /** SIGKILL's exit status: podman killed a container that outlived its stop timeout. */
    private static final int KILLED = 137;

    private static String merchant;
    private static List<String> names;
    private static PayClient gateway;
    private static PayClient first;
    private static PayClient second;

    @BeforeAll
    static void connect() throws Exception {
        merchant = System.getProperty("payonce.container.merchant");
        names = List.of(System.getProperty("payonce.container.names").split(","));
        int[] ports = Arrays.stream(System.getProperty("payonce.container.ports").split(","))
                .mapToInt(Integer::parseInt).toArray();
        gateway = PayClient.throughGateway(Integer.getInteger("payonce.container.gateway"), merchant,
                System.getProperty("payonce.container.key"));
        first = PayClient.overMtls(ports[0], merchant, DevCa.client(true));
        second = PayClient.overMtls(ports[1], merchant, DevCa.client(true));
    }

    @AfterAll
    static void bothRunning() throws Exception {
        // a test that failed half-way leaves the deployment as the next run expects it
        for (int i = 0; i < names.size(); i++) {
            if (!running(names.get(i))) {
                script("start", i == 0 ? "a" : "b");
            }
        }
    }

    /** The README's walk-through, through the gateway into the containers. */
    @Test
    @Order(1)
    void walkThrough_throughTheGateway_paidOnce_replayed() {
        PayRequest request = gateway.newRequest();

        Answer paid = gateway.pay(request);
        Answer replay = gateway.pay(request);

        assertEquals(200, paid.status(), paid.toString());
        assertEquals("PAID", paid.field("status"));
        assertFalse(paid.isReplay(), paid.toString());
        assertEquals(200, replay.status(), replay.toString());
        assertTrue(replay.isReplay(), replay.toString());
        assertEquals(paid.body(), replay.body(), "the replay is the first answer");
        PayClient.Books books = books(request);
        assertEquals("PAID", books.orderStatus(), books.toString());
        assertEquals(1, books.charges(), books.toString());
        assertEquals(1, books.attempts(), books.toString());
    }

    /**
     * Copies of one request sent at once, half to each container, while its charge takes a second at the
     * channel: the copies on the container that does not own it wait there and get the owner's answer.
     */
    @Test
    @Order(2)
    void stormOfOneRequest_splitAcrossTheContainers_oneCharge_oneAnswer() {
        PayRequest request = gateway.newRequest();
        first.sandbox("ok", 1_000, 1);

        List<Answer> answers = Concurrently.all(40, STORM_BOUND,
                (group, copy) -> (copy % 2 == 0 ? first : second).pay(request));

        for (Answer answer : answers) {
            assertEquals(200, answer.status(), () -> "every copy gets the payment's answer: " + answers);
        }
        assertEquals(1, answers.stream().map(Answer::body).distinct().count(), () -> "one answer: " + answers);
        assertEquals(1, answers.stream().filter(a -> !a.isReplay()).count(), () -> "one execution: " + answers);
        PayClient.Books books = books(request);
        assertEquals(1, books.charges(), books.toString());
        assertEquals(1, books.attempts(), books.toString());
    }

    /**
     * The container holding a charge in flight is killed (SIGKILL: no shutdown of any kind) while the channel
     * takes five seconds; a new container takes its place. The charge is settled by the channel's word, once,
     * and every answer the client gets afterwards agrees.
     */
    @Test
    @Order(3)
    void containerKilledWithAChargeInFlight_newContainer_settledOnce_answersAgree() throws Exception {
        PayRequest request = gateway.newRequest();
        first.sandbox("ok", 5_000, 1);
        ExecutorService caller = Executors.newSingleThreadExecutor();
        try {
            CompletableFuture<Answer> inFlight = CompletableFuture.supplyAsync(() -> second.pay(request), caller);
            Await.until("the charge to reach the channel", Duration.ofSeconds(10),
                    () -> first.ledger(request.orderNo()).attempts() == 1);

            podman("kill", "-s", "KILL", names.get(1));

            Answer cut = inFlight.get(COMMAND_BOUND.toSeconds(), TimeUnit.SECONDS);
            assertFalse(cut.answered(), () -> "the killed owner answered nothing: " + cut);
        } finally {
            caller.shutdownNow();
        }
        script("start", "b");

        List<Answer> retries = new ArrayList<>();
        Answer settled = Await.upTo(SETTLE_BOUND, () -> {
            Answer answer = gateway.pay(request);
            retries.add(answer);
            return answer;
        }, answer -> !toBeRetried(answer));

        assertEquals(200, settled.status(), () -> "retries: " + retries);
        assertEquals("PAID", settled.field("status"));
        for (PayClient client : List.of(gateway, first, second)) {
            Answer again = client.pay(request);
            assertEquals(settled.body(), again.body(), () -> "every answer agrees: " + again);
        }
        PayClient.Books books = books(request);
        assertEquals("PAID", books.orderStatus(), books.toString());
        assertEquals("SUCCEEDED", books.paymentStatus(request.requestNo()), books.toString());
        assertEquals(1, books.charges(), books.toString());
        assertEquals(1, books.attempts(), "the charge was never sent again: " + books);
    }

    /**
     * Payments sent through the gateway, each twice at once and again until final, while one container is
     * stopped (SIGTERM) and then replaced: it exits on its own within the stop timeout, every payment is paid
     * once, and every 200 a payment got is the same answer.
     */
    @Test
    @Order(4)
    void containerStoppedDuringAStorm_nothingLost_nothingAnsweredTwiceDifferently() throws Exception {
        List<PayRequest> requests = gateway.newRequests(STORM_PAYMENTS);
        // every charge of the storm takes two seconds at the channel: payments are in flight on both
        // containers when one is stopped
        first.sandbox("ok", 2_000, STORM_PAYMENTS);
        Map<String, List<Answer>> answers = new ConcurrentHashMap<>();
        AtomicInteger sent = new AtomicInteger();
        ExecutorService clients = Executors.newFixedThreadPool(STORM_CLIENTS);
        List<CompletableFuture<Answer>> finals = new ArrayList<>();
        try {
            for (PayRequest request : requests) {
                for (int copy = 0; copy < 2; copy++) {
                    finals.add(CompletableFuture.supplyAsync(() -> Await.upTo(SETTLE_BOUND, () -> {
                        sent.incrementAndGet();
                        Answer answer = gateway.pay(request);
                        answers.computeIfAbsent(request.requestNo(), k -> new CopyOnWriteArrayList<>()).add(answer);
                        return answer;
                    }, answer -> !toBeRetried(answer)), clients));
                }
            }
            Await.until("every client sending", STORM_BOUND, () -> sent.get() >= STORM_CLIENTS);

            long stopping = System.nanoTime();
            podman("stop", "-t", "15", names.get(1));
            Duration stopped = Duration.ofNanos(System.nanoTime() - stopping);
            int exit = Integer.parseInt(podman("inspect", "--format", "{{.State.ExitCode}}", names.get(1)).strip());
            assertNotEquals(KILLED, exit, "the container exited on its own within its stop timeout, in " + stopped);
            assertTrue(stopped.compareTo(STOP_BOUND) < 0, "stopped in " + stopped);
            script("start", "b");

            CompletableFuture.allOf(finals.toArray(CompletableFuture[]::new)).get(SETTLE_BOUND.toSeconds() + 30,
                    TimeUnit.SECONDS);
            System.out.printf("storm: %d payments, %d calls, stopped in %d ms (exit %d), answers by status %s%n",
                    requests.size(), sent.get(), stopped.toMillis(), exit, answers.values().stream()
                            .flatMap(List::stream).collect(Collectors.groupingBy(Answer::status,
                                    Collectors.counting())));
        } finally {
            clients.shutdownNow();
        }

        for (PayRequest request : requests) {
            List<Answer> got = answers.get(request.requestNo());
            Set<String> paid = got.stream().filter(a -> a.status() == 200).map(Answer::body)
                    .collect(Collectors.toSet());
            assertEquals(1, paid.size(), () -> request.requestNo() + " answered 200 once and alike: " + got);
            assertNull(got.stream().filter(a -> a.status() != 200 && !toBeRetried(a)).findFirst().orElse(null),
                    () -> "every answer but the payment's own tells the client to send it again: " + got);
            PayClient.Books books = books(request);
            assertEquals("SUCCEEDED", books.paymentStatus(request.requestNo()), books.toString());
            assertEquals(1, books.charges(), books.toString());
        }
    }

    /**
     * An answer that tells the client to send the same request again: 202, 409 or 503 with Retry-After (an
     * instance in its shutdown refuses so), or no answer at all.
     */
    private static boolean toBeRetried(Answer answer) {
        return !answer.answered() || answer.status() == 202 || answer.isRetryable()
                || (answer.status() == 503 && answer.retryAfter() != null);
    }

    /** The service's books and the channel's ledger, read from the first container. */
    private static PayClient.Books books(PayRequest request) {
        return first.books(request.orderNo());
    }

    private static boolean running(String name) throws IOException, InterruptedException {
        return "true".equals(podman("inspect", "--format", "{{.State.Running}}", name).strip());
    }

    private static String podman(String... arguments) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("podman"));
        command.addAll(List.of(arguments));
        return run(command);
    }

    private static String script(String... arguments) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("scripts/container.sh"));
        command.addAll(List.of(arguments));
        return run(command);
    }

    /** Runs {@code command} within {@link #COMMAND_BOUND}, answering its output; fails with it otherwise. */
    private static String run(List<String> command) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        CompletableFuture<String> output = CompletableFuture.supplyAsync(() -> {
            try {
                return new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                return e.toString();
            }
        });
        if (!process.waitFor(COMMAND_BOUND.toSeconds(), TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError(String.join(" ", command) + " did not end within " + COMMAND_BOUND);
        }
        String text = output.join();
        if (process.exitValue() != 0) {
            throw new AssertionError(String.join(" ", command) + " exited " + process.exitValue() + ": " + text);
        }
        return text;
    }
}
