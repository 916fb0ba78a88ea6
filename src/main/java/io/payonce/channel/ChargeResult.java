package io.payonce.channel;

/**
 * What the channel said of a charge or a refund (to the call, a query or a close), or what follows when it
 * said nothing clear. For a refund, "charged" reads "refunded" and the transaction id is the refund's.
 */
public sealed interface ChargeResult {

    /** The channel charged the money under this transaction id (null when the id it gave was unusable). */
    record Succeeded(String txnId) implements ChargeResult {
    }

    /** The channel refused to charge; nothing was taken. */
    record Declined(String txnId) implements ChargeResult {
    }

    /** The charge provably did not reach the point of acceptance: safe to release and retry. */
    record NotAccepted(String reason) implements ChargeResult {
    }

    /** The charge arrived and is still being processed; it will succeed or be declined later. */
    record Pending() implements ChargeResult {
    }

    /** The number was closed at the channel: nothing was charged under it, and nothing ever will be. */
    record Closed() implements ChargeResult {
    }

    /** The channel says, in so many words, that no charge with that number ever arrived. */
    record NotFound() implements ChargeResult {
    }

    /**
     * No clear answer (a timeout, a 5xx, a 404 without the channel's code, a body that is not the
     * channel's): the charge may or may not have been taken; only asking again can tell.
     */
    record Unknown(String reason) implements ChargeResult {
    }

    /** The channel's final word on the number: a settlement may rest on it. */
    default boolean isFinal() {
        return this instanceof Succeeded || this instanceof Declined || this instanceof Closed;
    }
}
