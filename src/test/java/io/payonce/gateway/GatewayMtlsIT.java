package io.payonce.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;

import javax.net.ssl.SSLContext;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.payonce.support.AppProcess;
import io.payonce.support.DevCa;
import io.payonce.support.Gateway;
import io.restassured.http.ContentType;
import io.restassured.response.Response;

/**
 * Only the gateway gets in to an instance under {@code payonce.gateway.client-auth=mtls} (its business port
 * reachable by anyone who can reach the machine): a caller without the gateway's client certificate is
 * refused in the TLS handshake and one speaking plain HTTP gets no answer, so neither ever names a merchant
 * the instance would believe; the gateway, rendered for mtls by the shipped renderer, is served, and the
 * instance charges its own sandbox over the same TLS, presenting its own certificate.
 */
class GatewayMtlsIT {

    private static final String MERCHANT = "merchant_gw_mtls";
    private static final Duration CALL_BOUND = Duration.ofSeconds(10);

    private static AppProcess app;
    private static Gateway gateway;

    @BeforeAll
    static void start() throws Exception {
        Gateway.assumeInstalled();
        app = AppProcess.named("gateway-mtls").mtls(DevCa.directory());
        AppProcess.startAll(app);
        gateway = Gateway.start(app, app, MERCHANT);
    }

    @AfterAll
    static void stop() throws InterruptedException {
        if (gateway != null) {
            gateway.close();
        }
        AppProcess.closeAll(app);
    }

    @Test
    void directOverTls_withoutTheGatewaysCertificate_isRefusedInTheHandshake() throws Exception {
        HttpClient client = client(DevCa.client(false));

        IOException refused = assertThrows(IOException.class,
                () -> client.send(ordersOf("https"), HttpResponse.BodyHandlers.ofString()));

        // TLS 1.3 says so in an alert; 1.2 ends the handshake with a certificate alert of its own
        assertTrue(String.valueOf(refused).matches("(?s).*(certificate_required|bad_certificate).*"),
                () -> "refused for want of a client certificate: " + refused);
    }

    @Test
    void directOverPlainHttp_getsNoAnswer() {
        HttpClient client = HttpClient.newBuilder().connectTimeout(CALL_BOUND).version(HttpClient.Version.HTTP_1_1)
                .build();

        assertThrows(IOException.class, () -> client.send(ordersOf("http"), HttpResponse.BodyHandlers.ofString()),
                "the business port speaks TLS only");
    }

    /** The control: the refusals above are of the caller, not of the instance, which serves the gateway's certificate. */
    @Test
    void directOverTls_withTheGatewaysCertificate_isServed() throws Exception {
        HttpClient client = client(DevCa.client(true));

        HttpResponse<String> answer = client.send(ordersOf("https"), HttpResponse.BodyHandlers.ofString());

        assertEquals(404, answer.statusCode(), answer.body());
        assertTrue(answer.body().contains("\"order_not_found\""), answer.body());
    }

    @Test
    void throughTheGateway_aPaymentIsPaid_chargedAtTheInstancesOwnSandboxOverMtls() {
        String orderNo = "ord_" + UUID.randomUUID().toString().substring(0, 12);
        gateway.as(MERCHANT).contentType(ContentType.JSON)
                .body(Map.of("order_no", orderNo, "amount", 700, "currency", "EUR")).post("/orders")
                .then().statusCode(201);
        String token = gateway.as(MERCHANT).post("/tokens").then().statusCode(201).extract().path("token");

        Response paid = gateway.as(MERCHANT).header("Idempotency-Key", token).contentType(ContentType.JSON)
                .body(Map.of("order_no", orderNo, "request_no", "req_" + orderNo, "amount", 700)).post("/pay");

        assertEquals(200, paid.statusCode(), paid.asString());
        assertEquals("PAID", paid.path("status"));
        assertEquals("PAID", gateway.as(MERCHANT).get("/orders/" + orderNo).then().statusCode(200).extract()
                .path("status"));
    }

    private static HttpClient client(SSLContext tls) {
        return HttpClient.newBuilder().sslContext(tls).connectTimeout(CALL_BOUND).version(HttpClient.Version.HTTP_1_1)
                .build();
    }

    /** A merchant's read, sent straight to the instance's business port as anyone on the network could. */
    private static HttpRequest ordersOf(String scheme) {
        return HttpRequest.newBuilder(URI.create(scheme + "://127.0.0.1:" + app.port() + "/orders/ord_x"))
                .header("X-Merchant-Id", MERCHANT).timeout(CALL_BOUND).GET().build();
    }
}
