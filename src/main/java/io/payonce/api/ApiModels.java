package io.payonce.api;

import java.time.Instant;
import java.util.List;

import jakarta.validation.constraints.NotNull;
import jakarta.validation.constraints.Pattern;
import jakarta.validation.constraints.Positive;
import jakarta.validation.constraints.Size;

import com.fasterxml.jackson.annotation.JsonInclude;

import org.eclipse.microprofile.openapi.annotations.media.Schema;

import io.payonce.order.Order;
import io.payonce.payment.Payment;
import io.payonce.payment.PaymentKind;
import io.quarkus.runtime.annotations.RegisterForReflection;

/** The request and response bodies of the API. */
public final class ApiModels {

    private static final String ID = Identifiers.REGEX;
    private static final String ISO_4217 = "[A-Z]{3}";

    private ApiModels() {
    }

    @RegisterForReflection
    @Schema(name = "CreateOrderRequest")
    public record CreateOrderRequest(
            @Schema(description = "the merchant's order number", examples = "ord_1")
            @NotNull @Pattern(regexp = ID) String orderNo,
            @Schema(description = "minor units (cents)", examples = "1999") @NotNull @Positive Long amount,
            @Schema(description = "ISO 4217", examples = "USD") @NotNull @Pattern(regexp = ISO_4217) String currency) {
    }

    @RegisterForReflection
    @Schema(name = "PayRequest")
    public record PayRequest(
            @Schema(description = "the order to pay", examples = "ord_1") @NotNull @Pattern(regexp = ID) String orderNo,
            @Schema(description = "the merchant's number for this payment attempt, unique per merchant; the channel"
                    + " charges it at most once", examples = "req_1") @NotNull @Pattern(regexp = ID) String requestNo,
            @Schema(description = "minor units (cents); must equal the order's", examples = "1999")
            @NotNull @Positive Long amount,
            @Schema(description = "ISO 4217; when given, must equal the order's (and is part of the request:"
                    + " the same request without it is another one)", examples = "USD")
            @Pattern(regexp = ISO_4217) String currency,
            @Schema(description = "the idempotency key, for clients that cannot set the Idempotency-Key header;"
                    + " both given and different: 400 conflicting_idempotency_key")
            @Size(min = 1, max = 255) String token) {
    }

    @RegisterForReflection
    @Schema(name = "RefundRequest")
    public record RefundRequest(
            @Schema(description = "the paid order to refund", examples = "ord_1") @NotNull @Pattern(regexp = ID) String orderNo,
            @Schema(description = "the merchant's number for this refund, unique per merchant; the channel refunds it"
                    + " at most once", examples = "rfd_1") @NotNull @Pattern(regexp = ID) String refundNo,
            @Schema(description = "minor units (cents), in the order's currency; with the order's refunds that"
                    + " succeeded or are in flight, at most what was paid", examples = "500")
            @NotNull @Positive Long amount) {
    }

    @Schema(name = "Token")
    public record TokenView(
            @Schema(required = true, description = "the idempotency key for one payment attempt: URL-safe, at most"
                    + " 80 characters") String token,
            @Schema(required = true, description = "after this the token is refused") Instant expiresAt) {
    }

    @Schema(name = "OrderPayment")
    public record OrderPaymentView(
            @Schema(required = true) String requestNo,
            @Schema(required = true, enumeration = { "PROCESSING", "SUCCEEDED", "FAILED" }) String status) {
    }

    @Schema(name = "OrderRefund")
    public record OrderRefundView(
            @Schema(required = true) String refundNo,
            @Schema(required = true, description = "minor units (cents)") long amount,
            @Schema(required = true, enumeration = { "PROCESSING", "SUCCEEDED", "FAILED" }) String status) {
    }

    @Schema(name = "Order")
    public record OrderView(
            @Schema(required = true) String orderNo,
            @Schema(required = true, description = "minor units (cents)") long amount,
            @Schema(required = true) String currency,
            @Schema(required = true, enumeration = { "PENDING", "PAYING", "PAID", "PARTIALLY_REFUNDED",
                    "REFUNDED" }) String status,
            @Schema(required = true, description = "incremented by every change of status") int version,
            @Schema(required = true, description = "what refunds that succeeded gave back, minor units (cents)")
            long refundedAmount,
            @Schema(required = true) Instant createdAt,
            @Schema(required = true) Instant updatedAt,
            @Schema(required = true, description = "the order's payment attempts") List<OrderPaymentView> payments,
            @Schema(required = true, description = "the order's refunds") List<OrderRefundView> refunds) {

        /** The order with its records: its payment attempts and its refunds, oldest first. */
        static OrderView of(Order order, List<Payment> records) {
            return new OrderView(order.orderNo(), order.amount(), order.currency(), order.status().name(),
                    order.version(), order.refundedAmount(), order.createdAt(), order.updatedAt(), records.stream()
                            .filter(p -> p.kind() == PaymentKind.CHARGE)
                            .map(p -> new OrderPaymentView(p.requestNo(), p.status().name()))
                            .toList(),
                    records.stream()
                            .filter(p -> p.kind() == PaymentKind.REFUND)
                            .map(p -> new OrderRefundView(p.requestNo(), p.amount(), p.status().name()))
                            .toList());
        }
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    @Schema(name = "Payment")
    public record PaymentView(
            @Schema(required = true) String requestNo,
            @Schema(required = true) String orderNo,
            @Schema(required = true, description = "minor units (cents)") long amount,
            @Schema(required = true) String currency,
            @Schema(required = true, description = "PROCESSING until the channel's word settles it",
                    enumeration = { "PROCESSING", "SUCCEEDED", "FAILED" }) String status,
            @Schema(description = "the channel's transaction, once known") String channelTxnId,
            @Schema(required = true) Instant createdAt,
            @Schema(required = true) Instant updatedAt) {

        static PaymentView of(Payment p) {
            return new PaymentView(p.requestNo(), p.orderNo(), p.amount(), p.currency(), p.status().name(),
                    p.channelTxnId(), p.createdAt(), p.updatedAt());
        }
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    @Schema(name = "Refund")
    public record RefundView(
            @Schema(required = true) String refundNo,
            @Schema(required = true) String orderNo,
            @Schema(required = true, description = "minor units (cents)") long amount,
            @Schema(required = true) String currency,
            @Schema(required = true, description = "PROCESSING until the channel's word settles it",
                    enumeration = { "PROCESSING", "SUCCEEDED", "FAILED" }) String status,
            @Schema(description = "the channel's refund, once known") String channelRefundId,
            @Schema(required = true) Instant createdAt,
            @Schema(required = true) Instant updatedAt) {

        static RefundView of(Payment p) {
            return new RefundView(p.requestNo(), p.orderNo(), p.amount(), p.currency(), p.status().name(),
                    p.channelTxnId(), p.createdAt(), p.updatedAt());
        }
    }
}
