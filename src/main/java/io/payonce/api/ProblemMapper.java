package io.payonce.api;

import java.io.IOException;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeoutException;

import jakarta.ws.rs.WebApplicationException;
import jakarta.ws.rs.core.Response;

import io.payonce.PayOnceConfig;
import io.payonce.database.Database;
import io.payonce.idempotency.IdempotencyKeyMissingException;
import io.payonce.idempotency.IdempotencyKeyReusedException;
import io.payonce.idempotency.InvalidIdempotencyTokenException;
import io.payonce.idempotency.Reply;
import io.payonce.idempotency.RequestInProgressException;
import io.payonce.idempotency.StoredResponse;
import io.payonce.order.OrderConflictException;
import io.payonce.order.OrderNotFoundException;
import io.payonce.payment.PaymentNotFoundException;
import io.payonce.idempotency.TemporarilyUnavailableException;
import io.payonce.refund.RefundNotFoundException;
import io.vertx.mysqlclient.MySQLException;
import org.jboss.logging.Logger;
import org.jboss.resteasy.reactive.server.ServerExceptionMapper;

/** The one place where a refusal becomes a status, a {@code code} and a kind of answer. */
public class ProblemMapper {

    private static final Logger LOG = Logger.getLogger(ProblemMapper.class);
    /** Lock wait timeout, deadlock, too many connections, server shutdown, server gone, connection lost. */
    private static final Set<Integer> TRANSIENT_SQL_ERRORS = Set.of(1205, 1213, 1040, 1053, 2006, 2013);

    /**
     * Where a valid key comes from, for a client that sent its own (a UUID, as Stripe's clients do): one text
     * for any refused key, unknown, expired, another merchant's or malformed alike, so it tells nothing of
     * whether the key exists anywhere; only the service's setting decides which text.
     */
    static final String ISSUED_KEYS_ONLY = "the key is not an unexpired token of this merchant: keys are issued by"
            + " POST /tokens; a key the client makes up itself (a UUID, say) is accepted only where the operator"
            + " turns on payonce.idempotency.accept-client-keys";
    static final String CLIENT_KEYS_TOO = "the key is neither an unexpired token of this merchant (issued by"
            + " POST /tokens) nor an unexpired client key of 16 to 255 printable ASCII characters";

    private final Problems problems;
    private final String invalidKeyDetail;

    ProblemMapper(Problems problems, PayOnceConfig config) {
        this.problems = problems;
        this.invalidKeyDetail = config.idempotency().acceptClientKeys() ? CLIENT_KEYS_TOO : ISSUED_KEYS_ONLY;
    }

    /**
     * The answer to {@code e}, for every entrance: its status, {@code code} and kind decided here, in one
     * place. The REST layer renders it through the one mapper below; the queue entrance settles a delivery by
     * its kind.
     */
    public Reply answer(Throwable e) {
        return switch (e) {
            case InvalidRequestException x -> rejected(400, x.code(), "Invalid request", x.getMessage());
            case MerchantRequiredException x -> rejected(401, "merchant_required", "Merchant not identified",
                    x.getMessage());
            case IdempotencyKeyMissingException x -> rejected(400, "idempotency_key_missing", "Idempotency key missing",
                    "send the token in the Idempotency-Key header (or the body field token)");
            case InvalidIdempotencyTokenException x -> rejected(400, "invalid_idempotency_token",
                    "Invalid idempotency token", invalidKeyDetail);
            case IdempotencyKeyReusedException x -> refusal(Reply.Kind.FINAL, 422, "idempotency_key_reused",
                    "Idempotency key reused", "this token was first used for a request with other parameters");
            case RequestInProgressException x -> refusal(Reply.Kind.RETRYABLE, 409, "request_in_progress",
                    "Request in progress", "the first request with this token is still running; retry with the same token");
            case TemporarilyUnavailableException x -> {
                LOG.warnf("temporarily unavailable: %s (%s)", x.getMessage(), x.getCause());
                String notDone = switch (x.movement()) {
                    case CHARGE -> "nothing was charged";
                    case REFUND -> "nothing was refunded";
                };
                yield refusal(Reply.Kind.RETRYABLE, 503, "temporarily_unavailable", "Temporarily unavailable",
                        notDone + "; retry the same request with the same token");
            }
            case OrderNotFoundException x -> refusal(Reply.Kind.FINAL, 404, "order_not_found", "Order not found",
                    x.getMessage());
            case OrderConflictException x -> refusal(Reply.Kind.FINAL, 409, "order_conflict", "Order conflict",
                    x.getMessage());
            case PaymentNotFoundException x -> refusal(Reply.Kind.FINAL, 404, "payment_not_found", "Payment not found",
                    x.getMessage());
            case RefundNotFoundException x -> refusal(Reply.Kind.FINAL, 404, "refund_not_found", "Refund not found",
                    x.getMessage());
            case WebApplicationException x -> framework(x);
            default -> fault(e);
        };
    }

    /** Every refusal the REST layer meets, the framework's own included, as the one answer rendered for HTTP. */
    @ServerExceptionMapper
    public Response map(Throwable e) {
        return PayResource.answer(answer(e));
    }

    private Reply rejected(int status, String code, String title, String detail) {
        return refusal(Reply.Kind.REJECTED, status, code, title, detail);
    }

    private Reply refusal(Reply.Kind kind, int status, String code, String title, String detail) {
        return Reply.of(new StoredResponse(status, problems.body(status, code, title, detail, Map.of())), false, kind);
    }

    /** Routing and negotiation refusals of the framework, in the same shape. */
    private Reply framework(WebApplicationException e) {
        int status = e.getResponse().getStatus();
        String code = switch (status) {
            case 404 -> "not_found";
            case 405 -> "method_not_allowed";
            case 406 -> "not_acceptable";
            case 413 -> "body_too_large";
            case 415 -> "unsupported_media_type";
            default -> status < 500 ? "invalid_request" : "internal_error";
        };
        return refusal(status < 500 ? Reply.Kind.REJECTED : Reply.Kind.IN_DOUBT, status, code,
                Response.Status.fromStatusCode(status) != null ? Response.Status.fromStatusCode(status).getReasonPhrase()
                        : "Error", e.getMessage());
    }

    /**
     * Anything else is a fault: logged with its stack here, answered without it. A passing infrastructure
     * fault is retryable; any other may have struck anywhere, so what it left behind is in doubt.
     */
    private Reply fault(Throwable e) {
        if (isInfrastructure(e)) {
            LOG.warnf("infrastructure fault: %s", e.toString());
            return refusal(Reply.Kind.RETRYABLE, 503, "temporarily_unavailable", "Temporarily unavailable",
                    "a backing service is unavailable; retry later");
        }
        LOG.error("unexpected fault", e);
        return refusal(Reply.Kind.IN_DOUBT, 500, "internal_error", "Internal error", "an unexpected error occurred");
    }

    /**
     * Database and network failures are passing, so the client is told to retry; an SQL error the server
     * reports is a bug unless it is one of the transient ones (lock wait, deadlock, overload, shutdown).
     */
    private static boolean isInfrastructure(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof MySQLException sql) {
                return TRANSIENT_SQL_ERRORS.contains(sql.getErrorCode());
            }
            if (t.getClass().getName().startsWith("io.vertx.") || t instanceof IOException
                    || t instanceof TimeoutException || t instanceof Database.NoAnswerException) {
                return true;
            }
        }
        return false;
    }
}
