package io.payonce.order;

/** Thrown when an order number is created again with another amount or currency. */
public class OrderConflictException extends RuntimeException {
    public OrderConflictException(String orderNo) {
        super("order " + orderNo + " exists with other terms", null, false, false);
    }
}
