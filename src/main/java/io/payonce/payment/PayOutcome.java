package io.payonce.payment;

import java.time.Instant;

/**
 * Every business result of a money-moving request: a payment, or a refund (the records named Refund...,
 * whose {@link #requestNo()} is the refund's number). Each is a value that is stored with the token and
 * replayed, except the processing ones, which stand only until reconciliation settles the movement.
 */
public sealed interface PayOutcome {

    String orderNo();

    /** The movement's number: the request number of a payment, the refund number of a refund. */
    String requestNo();

    /** The order is paid: this request's charge succeeded. */
    record Paid(String orderNo, String requestNo, long amount, String currency, String channelTxnId, Instant paidAt)
            implements PayOutcome {
    }

    /** The merchant has no such order. */
    record OrderNotFound(String orderNo, String requestNo) implements PayOutcome {
    }

    /** The request's amount or currency is not the order's. */
    record AmountMismatch(String orderNo, String requestNo) implements PayOutcome {
    }

    /** The order is PAID, or PAYING under another request. */
    record OrderNotPayable(String orderNo, String requestNo) implements PayOutcome {
    }

    /**
     * Another payment record holds this request number (layer 2 stopped it). Final once that record is
     * settled; while it is still PROCESSING its opener may yet undo it and free the number, so the answer is
     * not stored and a retry decides again.
     */
    record RequestNoConflict(String orderNo, String requestNo, boolean holderSettled) implements PayOutcome {
    }

    /** The channel declined the charge; the order is payable again under a new request. */
    record Declined(String orderNo, String requestNo) implements PayOutcome {
    }

    /**
     * The channel never completed the charge and the number was closed there, so nothing was charged; the
     * order is payable again under a new request.
     */
    record NotCompleted(String orderNo, String requestNo) implements PayOutcome {
    }

    /** The channel's outcome is unknown; reconciliation will settle it with the same request number. */
    record Processing(String orderNo, String requestNo) implements PayOutcome {
    }

    /** The refund succeeded at the channel: {@code amount} went back to the customer. */
    record Refunded(String orderNo, String requestNo, long amount, String currency, String channelRefundId,
            Instant refundedAt) implements PayOutcome {
    }

    /** A refund's order does not exist for this merchant. */
    record RefundOrderNotFound(String orderNo, String requestNo) implements PayOutcome {
    }

    /** The order is not paid, or refunded in full already. */
    record OrderNotRefundable(String orderNo, String requestNo) implements PayOutcome {
    }

    /** This refund, with those that succeeded or are in flight, would give back more than was paid. */
    record RefundExceedsPayment(String orderNo, String requestNo) implements PayOutcome {
    }

    /** Another refund record holds this refund number; final once that one is settled. */
    record RefundNoConflict(String orderNo, String requestNo, boolean holderSettled) implements PayOutcome {
    }

    /** The channel declined the refund; nothing went back, and its amount may be refunded again. */
    record RefundDeclined(String orderNo, String requestNo) implements PayOutcome {
    }

    /** The channel never completed the refund and the number was closed there: nothing went back. */
    record RefundNotCompleted(String orderNo, String requestNo) implements PayOutcome {
    }

    /** The channel's outcome of the refund is unknown; reconciliation settles it with the same number. */
    record RefundProcessing(String orderNo, String requestNo) implements PayOutcome {
    }

    default boolean isFinal() {
        return switch (this) {
            case Processing processing -> false;
            case RefundProcessing processing -> false;
            case RequestNoConflict conflict -> conflict.holderSettled();
            case RefundNoConflict conflict -> conflict.holderSettled();
            default -> true;
        };
    }
}
