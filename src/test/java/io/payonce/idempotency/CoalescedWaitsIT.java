package io.payonce.idempotency;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.payonce.support.Answer;
import io.payonce.support.AppProcess;
import io.payonce.support.Await;
import io.payonce.support.MysqlProxy;
import io.payonce.support.PayClient;
import io.payonce.support.PayRequest;

/**
 * Copies of one request waiting on one instance cost one watch, not one each: with Redis down (so every
 * wait polls MySQL), 200 copies waiting on one key read the token's row a bounded number of times per
 * poll interval, counted at a MySQL-protocol proxy in front of the instance, and other merchants' payments
 * meanwhile are served as usual.
 */
class CoalescedWaitsIT {

    private static final String MERCHANT = "merchant_waits";
    private static final String OTHER_MERCHANT = "merchant_waits_other";
    private static final int COPIES = 200;
    /** The first execution's charge takes this long at the channel, under the channel timeout. */
    private static final long SLOW_CHARGE_MS = 8_000;
    private static final Duration WINDOW = Duration.ofSeconds(2);
    /**
     * Token-row reads allowed in the window: one watch polls at most every 250 ms without Redis, so about
     * eight; the bound leaves room for a late copy's own first look. Each copy polling alone, as before,
     * read it about eight times per copy.
     */
    private static final int MAX_READS_IN_WINDOW = 40;
    private static final Pattern WAITERS = Pattern.compile("(?m)^payonce_idempotency_waiters(?:\\{[^}]*\\})? (\\S+)$");

    private AppProcess app;
    private MysqlProxy database;

    @AfterEach
    void stop() throws InterruptedException {
        AppProcess.closeAll(app);
        if (database != null) {
            database.close();
        }
    }

    @Test
    void copiesWaitingOnOneKey_readTheRowOncePerPoll_andOtherMerchantsAreServed() throws Exception {
        // given: an instance whose Redis is unreachable, its database behind the counting proxy
        database = new MysqlProxy(3306);
        app = AppProcess.named("coalesced-waits")
                .env("QUARKUS_DATASOURCE_REACTIVE_URL", "mysql://127.0.0.1:" + database.port() + "/test")
                .env("QUARKUS_REDIS_HOSTS", "redis://127.0.0.1:1")
                .env("PAYONCE_CHANNEL_TIMEOUT", "10s")
                .env("PAYONCE_IDEMPOTENCY_LEASE", "13s")
                .env("PAYONCE_RECONCILE_MIN_AGE", "11s")
                .env("PAYONCE_IDEMPOTENCY_WAIT_TIMEOUT", "20s");
        app.start().awaitReady();
        PayClient client = new PayClient(app, MERCHANT);
        PayClient other = new PayClient(app, OTHER_MERCHANT);
        other.sandbox("ok", 0, 0);
        client.sandbox("ok", SLOW_CHARGE_MS, 1);
        PayRequest request = client.newRequest();
        CompletableFuture<Answer> first = CompletableFuture.supplyAsync(() -> client.pay(request));
        Await.until("the first execution's charge at the channel", Duration.ofSeconds(10),
                () -> client.ledger(request.orderNo()).attempts(), attempts -> attempts == 1);

        // when: 200 copies wait on its key
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        String body = new ObjectMapper().writeValueAsString(request.body());
        List<CompletableFuture<HttpResponse<String>>> copies = new ArrayList<>();
        for (int i = 0; i < COPIES; i++) {
            copies.add(http.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + app.port() + "/pay"))
                    .timeout(Duration.ofSeconds(40)).header("Content-Type", "application/json")
                    .header("X-Merchant-Id", MERCHANT).header("Idempotency-Key", request.token())
                    .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString()));
        }
        // every copy waiting, as the instance counts them; a few seconds at most, whatever it counts
        Await.upTo(Duration.ofSeconds(5), () -> waiters(http), n -> n >= COPIES);
        MysqlProxy.StatementCount reads = database.count("(?is)^\\s*SELECT\\b.*\\bFROM\\s+idempotency_tokens\\b");
        List<Answer> otherPayments = new ArrayList<>();
        long windowEnds = System.nanoTime() + WINDOW.toNanos();
        while (System.nanoTime() < windowEnds) {
            otherPayments.add(other.pay(other.newRequest()));
        }
        int readsInWindow = reads.runs();
        Answer firstAnswer = first.get(30, TimeUnit.SECONDS);
        List<HttpResponse<String>> answers = new ArrayList<>();
        for (CompletableFuture<HttpResponse<String>> copy : copies) {
            answers.add(copy.get(40, TimeUnit.SECONDS));
        }

        // then
        assertAll(
                () -> assertTrue(readsInWindow <= MAX_READS_IN_WINDOW,
                        "token-row reads in " + WINDOW + " with " + COPIES + " copies waiting: " + readsInWindow),
                () -> assertEquals(List.of(), database.lostTrack(), "the proxy followed every connection"),
                () -> assertTrue(!otherPayments.isEmpty() && otherPayments.stream().allMatch(a -> a.status() == 200),
                        "other merchants' payments meanwhile: " + otherPayments),
                () -> assertEquals(200, firstAnswer.status(), "the first execution: " + firstAnswer),
                () -> assertTrue(answers.stream().allMatch(a -> a.statusCode() == 200 && a.body().equals(firstAnswer.body())),
                        "every copy gets the first answer: " + statuses(answers)),
                () -> assertEquals(1, client.ledger(request.orderNo()).charges()));
    }

    /** The instance's gauge of waiting copies. */
    private double waiters(HttpClient http) throws Exception {
        String metrics = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + app.managementPort() + "/q/metrics"))
                .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString()).body();
        Matcher m = WAITERS.matcher(metrics);
        return m.find() ? Double.parseDouble(m.group(1)) : 0;
    }

    private static Map<Integer, Long> statuses(List<HttpResponse<String>> answers) {
        return answers.stream().collect(java.util.stream.Collectors.groupingBy(HttpResponse::statusCode,
                java.util.stream.Collectors.counting()));
    }
}
