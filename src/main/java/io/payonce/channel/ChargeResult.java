package io.payonce.channel;

/** What the channel said of a charge, or what can be concluded when it said nothing. */
public sealed interface ChargeResult {

    /** The channel charged the money under this transaction id. */
    record Succeeded(String txnId) implements ChargeResult {
    }

    /** The channel refused to charge; nothing was taken. */
    record Declined(String txnId) implements ChargeResult {
    }

    /** The charge provably did not reach the point of acceptance: safe to release and retry. */
    record NotAccepted(String reason) implements ChargeResult {
    }

    /** The charge may or may not have been taken; only a query with the same request number can tell. */
    record Unknown(String reason) implements ChargeResult {
    }

    /** A query found no charge under that request number. */
    record NotFound() implements ChargeResult {
    }
}
