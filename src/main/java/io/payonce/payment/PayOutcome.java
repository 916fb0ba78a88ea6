package io.payonce.payment;

import java.time.Instant;

/**
 * Every business result of a pay request. Each is a value that is stored with the token and replayed,
 * except {@link Processing}, which stands only until reconciliation settles the payment.
 */
public sealed interface PayOutcome {

    String orderNo();

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

    default boolean isFinal() {
        return switch (this) {
            case Processing processing -> false;
            case RequestNoConflict conflict -> conflict.holderSettled();
            default -> true;
        };
    }
}
