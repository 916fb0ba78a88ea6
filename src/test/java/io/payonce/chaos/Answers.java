package io.payonce.chaos;

import java.util.Set;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.payonce.support.Answer;
import io.payonce.support.PayClient;

/**
 * What an answer to {@code POST /pay} means to a client, as contract section 4 says. Bodies are read with
 * Jackson: a run reads tens of thousands of them, too many for REST Assured's Groovy JsonPath.
 */
final class Answers {

    private static final ObjectMapper JSON = new ObjectMapper();

    /** The final refusals a valid request of a client's own order may get. */
    private static final Set<String> FINAL_CONFLICTS = Set.of("order_not_payable", "request_no_conflict");
    /** The 4xx codes no request of this run should ever get: each is a final answer, and a wrong one. */
    private static final Set<Integer> REFUSALS = Set.of(400, 401, 403, 404, 405, 408, 411, 413, 415, 422);

    private Answers() {
    }

    /**
     * Final: replayed to every later copy. 200 PAID, 402, a 409 of the order or the request number, and any
     * refusal (4xx) other than 409 request_in_progress. Not final: no answer, 202, 409 request_in_progress and
     * every 5xx (503 from the service, 502 or 504 from the gateway), which a client retries with the same key.
     */
    static boolean isFinal(Answer answer) {
        return isFinal(answer, "PAID", FINAL_CONFLICTS);
    }

    /** A 200 of the status {@code done}, a 402, a 409 of one of {@code conflicts}, or a refusal. */
    private static boolean isFinal(Answer answer, String done, Set<String> conflicts) {
        int status = answer.status();
        if (status == 200) {
            return done.equals(field(answer, "status"));
        }
        if (status == 402) {
            return true;
        }
        if (status == 409) {
            return conflicts.contains(code(answer));
        }
        return REFUSALS.contains(status);
    }

    /** The final refusals of a refund that the order's state or amounts may give a client's own refund. */
    private static final Set<String> REFUND_FINAL_CONFLICTS = Set.of("order_not_refundable", "refund_no_conflict");

    /**
     * Final for a refund (contract section 10), as {@link #isFinal} for a payment: 200 REFUNDED, 402
     * refund_declined or refund_not_completed, a 409 of the order or the refund number, and any other refusal
     * (a 422 refund_exceeds_payment among them); not final: no answer, 202, 409 request_in_progress, every 5xx.
     */
    static boolean isRefundFinal(Answer answer) {
        return isFinal(answer, "REFUNDED", REFUND_FINAL_CONFLICTS);
    }

    static boolean isRefunded(Answer answer) {
        return answer.status() == 200 && "REFUNDED".equals(field(answer, "status"));
    }

    static boolean isRefundDeclined(Answer answer) {
        return answer.status() == 402 && "refund_declined".equals(code(answer));
    }

    static boolean isRefundNotCompleted(Answer answer) {
        return answer.status() == 402 && "refund_not_completed".equals(code(answer));
    }

    /** A final 422 or 409 of a refund: it was refused, so no refund record of it may exist. */
    static boolean isRefundRefused(Answer answer) {
        return answer.status() == 422 || (answer.status() == 409 && REFUND_FINAL_CONFLICTS.contains(code(answer)));
    }

    /** A final answer the contract gives no valid request of a client's own order (a 404, a 422, a 400 ...). */
    static boolean isRefusal(Answer answer) {
        return REFUSALS.contains(answer.status());
    }

    static boolean isInProgress(Answer answer) {
        return answer.status() == 409 && "request_in_progress".equals(code(answer));
    }

    static boolean isDeclined(Answer answer) {
        return answer.status() == 402 && "payment_declined".equals(code(answer));
    }

    static boolean isNotCompleted(Answer answer) {
        return answer.status() == 402 && "payment_not_completed".equals(code(answer));
    }

    static boolean isPaid(Answer answer) {
        return answer.status() == 200 && "PAID".equals(field(answer, "status"));
    }

    /** The line an answer counts under in the summary. */
    static String kind(Answer answer, boolean hangUp) {
        if (!answer.answered()) {
            return hangUp ? "no answer (client hung up)" : "no answer (" + transport(answer.transportError()) + ")";
        }
        String code = code(answer);
        if (code == null && answer.status() >= 400 && answer.status() != 402) {
            code = "(not the service's)";
        }
        return answer.status() + (code == null ? "" : " " + code);
    }

    static String describe(Answer answer) {
        if (!answer.answered()) {
            return "no answer (" + answer.transportError() + ") after " + answer.elapsedMs() + " ms";
        }
        String body = answer.body() == null ? "" : answer.body().replaceAll("\\s+", " ");
        if (body.length() > 220) {
            body = body.substring(0, 220) + "...";
        }
        return answer.status() + (answer.isReplay() ? " (replayed)" : "") + " after " + answer.elapsedMs() + " ms: "
                + body;
    }

    private static String transport(String error) {
        if (error == null) {
            return "?";
        }
        if (error.contains("SocketTimeout") || error.contains("timed out")) {
            return "client timeout";
        }
        if (error.contains("Connection refused") || error.contains("ConnectException")
                || error.contains("HttpHostConnect")) {
            return "connection refused";
        }
        return "connection broken";
    }

    /** A problem's {@code code}, or null. */
    static String code(Answer answer) {
        return answer.status() >= 400 ? field(answer, "code") : null;
    }

    /** A text member of the JSON body, or null when there is none (or no JSON body). */
    static String field(Answer answer, String name) {
        String body = answer.body();
        if (body == null || !body.startsWith("{")) {
            return null;
        }
        try {
            JsonNode value = JSON.readTree(body).get(name);
            return value != null && value.isTextual() ? value.asText() : null;
        } catch (java.io.IOException notJson) {
            return null;
        }
    }

    static boolean clientTimedOut(Answer answer) {
        return !answer.answered() && "client timeout".equals(transport(answer.transportError()));
    }
}
