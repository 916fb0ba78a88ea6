package io.payonce.api;

import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;

import jakarta.enterprise.context.ApplicationScoped;

import org.eclipse.microprofile.openapi.annotations.media.Schema;

import io.payonce.idempotency.StoredResponse;
import io.payonce.payment.OutcomeRenderer;
import io.payonce.payment.PayOutcome;
import io.quarkus.runtime.annotations.RegisterForReflection;

/** The HTTP answer to each pay or refund outcome: what is stored with the token and replayed byte for byte. */
@ApplicationScoped
public class PayResponses implements OutcomeRenderer {

    private final Problems problems;

    PayResponses(Problems problems) {
        this.problems = problems;
    }

    /** The body of a paid request. */
    @RegisterForReflection
    @Schema(name = "Paid")
    record PaidBody(
            @Schema(required = true) String orderNo,
            @Schema(required = true) String requestNo,
            @Schema(required = true, description = "minor units (cents)") long amount,
            @Schema(required = true) String currency,
            @Schema(required = true, enumeration = "PAID") String status,
            @Schema(required = true, description = "the channel's transaction") String channelTxnId,
            @Schema(required = true) Instant paidAt) {
    }

    /** The body of a request whose outcome the channel has not told yet. */
    @RegisterForReflection
    @Schema(name = "Processing")
    record ProcessingBody(
            @Schema(required = true) String orderNo,
            @Schema(required = true) String requestNo,
            @Schema(required = true, enumeration = "PROCESSING") String status) {
    }

    /** The body of a refund that succeeded. */
    @RegisterForReflection
    @Schema(name = "Refunded")
    record RefundedBody(
            @Schema(required = true) String refundNo,
            @Schema(required = true) String orderNo,
            @Schema(required = true, description = "minor units (cents)") long amount,
            @Schema(required = true) String currency,
            @Schema(required = true, enumeration = "REFUNDED") String status,
            @Schema(required = true, description = "the channel's refund") String channelRefundId,
            @Schema(required = true) Instant refundedAt) {
    }

    /** The body of a refund whose outcome the channel has not told yet. */
    @RegisterForReflection
    @Schema(name = "RefundProcessing")
    record RefundProcessingBody(
            @Schema(required = true) String orderNo,
            @Schema(required = true) String refundNo,
            @Schema(required = true, enumeration = "PROCESSING") String status) {
    }

    @Override
    public StoredResponse render(PayOutcome outcome) {
        return switch (outcome) {
            case PayOutcome.Paid paid -> new StoredResponse(200, problems.write(new PaidBody(paid.orderNo(),
                    paid.requestNo(), paid.amount(), paid.currency(), "PAID", paid.channelTxnId(), paid.paidAt())));
            case PayOutcome.Processing processing -> new StoredResponse(202,
                    problems.write(new ProcessingBody(outcome.orderNo(), outcome.requestNo(), "PROCESSING")));
            case PayOutcome.OrderNotFound notFound -> problem(outcome, 404, "order_not_found", "Order not found",
                    "no order " + outcome.orderNo() + " for this merchant");
            case PayOutcome.AmountMismatch mismatch -> problem(outcome, 422, "amount_mismatch", "Amount mismatch",
                    "amount or currency differs from order " + outcome.orderNo());
            case PayOutcome.OrderNotPayable notPayable -> problem(outcome, 409, "order_not_payable",
                    "Order not payable", "order " + outcome.orderNo() + " is paid, or being paid under another request");
            case PayOutcome.RequestNoConflict conflict -> problem(outcome, 409, "request_no_conflict",
                    "Request number conflict", conflict.holderSettled()
                            ? "request_no " + outcome.requestNo() + " is already used by another request"
                            : "request_no " + outcome.requestNo() + " is held by another request still in flight;"
                                    + " retryable: send this request again after Retry-After, and it pays if that"
                                    + " request is taken back");
            case PayOutcome.Declined declined -> problem(outcome, 402, "payment_declined", "Payment declined",
                    "the channel declined the charge; the order can be paid with a new token and request_no");
            case PayOutcome.NotCompleted notCompleted -> problem(outcome, 402, "payment_not_completed",
                    "Payment not completed", "the channel never completed the charge and it was closed: nothing was"
                            + " charged; pay with a new token and request_no");
            case PayOutcome.Refunded refunded -> new StoredResponse(200, problems.write(new RefundedBody(
                    refunded.requestNo(), refunded.orderNo(), refunded.amount(), refunded.currency(), "REFUNDED",
                    refunded.channelRefundId(), refunded.refundedAt())));
            case PayOutcome.RefundProcessing processing -> new StoredResponse(202,
                    problems.write(new RefundProcessingBody(outcome.orderNo(), outcome.requestNo(), "PROCESSING")));
            case PayOutcome.RefundOrderNotFound notFound -> refundProblem(outcome, 404, "order_not_found",
                    "Order not found", "no order " + outcome.orderNo() + " for this merchant");
            case PayOutcome.OrderNotRefundable notRefundable -> refundProblem(outcome, 409, "order_not_refundable",
                    "Order not refundable", "order " + outcome.orderNo() + " is not paid, or refunded in full");
            case PayOutcome.RefundExceedsPayment exceeds -> refundProblem(outcome, 422, "refund_exceeds_payment",
                    "Refund exceeds payment", "this refund, with the refunds of order " + outcome.orderNo()
                            + " that succeeded or are in flight, would exceed what was paid");
            case PayOutcome.RefundNoConflict conflict -> refundProblem(outcome, 409, "refund_no_conflict",
                    "Refund number conflict", conflict.holderSettled()
                            ? "refund_no " + outcome.requestNo() + " is already used by another request"
                            : "refund_no " + outcome.requestNo() + " is held by another request still in flight;"
                                    + " retryable: send this request again after Retry-After, and it refunds if that"
                                    + " request is taken back");
            case PayOutcome.RefundDeclined declined -> refundProblem(outcome, 402, "refund_declined", "Refund declined",
                    "the channel declined the refund; nothing was refunded");
            case PayOutcome.RefundNotCompleted notCompleted -> refundProblem(outcome, 402, "refund_not_completed",
                    "Refund not completed", "the channel never completed the refund and it was closed: nothing was"
                            + " refunded; refund with a new token and refund_no");
        };
    }

    private StoredResponse problem(PayOutcome outcome, int status, String code, String title, String detail) {
        return problem(outcome, "request_no", status, code, title, detail);
    }

    private StoredResponse refundProblem(PayOutcome outcome, int status, String code, String title, String detail) {
        return problem(outcome, "refund_no", status, code, title, detail);
    }

    private StoredResponse problem(PayOutcome outcome, String numberMember, int status, String code, String title,
            String detail) {
        Map<String, Object> extra = new LinkedHashMap<>();
        extra.put("order_no", outcome.orderNo());
        extra.put(numberMember, outcome.requestNo());
        return new StoredResponse(status, problems.body(status, code, title, detail, extra));
    }
}
