package io.payonce.api;

import java.time.Instant;
import java.util.List;

import jakarta.validation.constraints.NotNull;
import jakarta.validation.constraints.Pattern;
import jakarta.validation.constraints.Positive;
import jakarta.validation.constraints.Size;

import com.fasterxml.jackson.annotation.JsonInclude;

import io.payonce.order.Order;
import io.payonce.payment.Payment;
import io.quarkus.runtime.annotations.RegisterForReflection;

/** The request and response bodies of the API. */
public final class ApiModels {

    private static final String ID = Identifiers.REGEX;
    private static final String ISO_4217 = "[A-Z]{3}";

    private ApiModels() {
    }

    @RegisterForReflection
    public record CreateOrderRequest(
            @NotNull @Pattern(regexp = ID) String orderNo,
            @NotNull @Positive Long amount,
            @NotNull @Pattern(regexp = ISO_4217) String currency) {
    }

    @RegisterForReflection
    public record PayRequest(
            @NotNull @Pattern(regexp = ID) String orderNo,
            @NotNull @Pattern(regexp = ID) String requestNo,
            @NotNull @Positive Long amount,
            @Pattern(regexp = ISO_4217) String currency,
            @Size(min = 1, max = 255) String token) {
    }

    public record TokenView(String token, Instant expiresAt) {
    }

    public record OrderPaymentView(String requestNo, String status) {
    }

    public record OrderView(String orderNo, long amount, String currency, String status, int version,
            Instant createdAt, Instant updatedAt, List<OrderPaymentView> payments) {

        static OrderView of(Order order, List<Payment> payments) {
            return new OrderView(order.orderNo(), order.amount(), order.currency(), order.status().name(),
                    order.version(), order.createdAt(), order.updatedAt(), payments.stream()
                            .map(p -> new OrderPaymentView(p.requestNo(), p.status().name()))
                            .toList());
        }
    }

    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record PaymentView(String requestNo, String orderNo, long amount, String currency, String status,
            String channelTxnId, Instant createdAt, Instant updatedAt) {

        static PaymentView of(Payment p) {
            return new PaymentView(p.requestNo(), p.orderNo(), p.amount(), p.currency(), p.status().name(),
                    p.channelTxnId(), p.createdAt(), p.updatedAt());
        }
    }
}
