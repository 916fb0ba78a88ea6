package io.payonce.payment;

/** Thrown when an owner's settlement finds the payment settled already (by reconciliation): its answer stands. */
public class AlreadySettledException extends RuntimeException {
    public AlreadySettledException() {
        super("payment settled by another process", null, false, false);
    }
}
