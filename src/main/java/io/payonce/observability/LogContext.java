package io.payonce.observability;

import org.jboss.logging.MDC;

/**
 * The keys every log line of a request carries, set once where each is known: the request id and the merchant
 * at the HTTP entrance, the merchant and the request number where the pay use case starts. Quarkus keeps the
 * MDC in the request's Vert.x duplicated context, which each reactive step of the request runs on (a Mutiny
 * timer's step included: Quarkus' executor restores the context that scheduled it), so a value set here stays
 * with the request and with nothing else. Off a Vert.x context (a test calling a service directly) it is the
 * thread's.
 */
public final class LogContext {

    public static final String REQUEST_ID = "request_id";
    public static final String MERCHANT = "merchant_id";
    public static final String REQUEST_NO = "request_no";

    private LogContext() {
    }

    public static void requestId(String requestId) {
        MDC.put(REQUEST_ID, requestId);
    }

    public static void merchant(String merchantId) {
        MDC.put(MERCHANT, merchantId);
    }

    /** The request a log line is about: whose it is and its business number. */
    public static void request(String merchantId, String requestNo) {
        MDC.put(MERCHANT, merchantId);
        MDC.put(REQUEST_NO, requestNo);
    }
}
