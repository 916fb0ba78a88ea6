package io.payonce.order;

/** Thrown when the merchant has no order of that number. */
public class OrderNotFoundException extends RuntimeException {
    public OrderNotFoundException(String orderNo) {
        super("order " + orderNo + " not found", null, false, false);
    }
}
