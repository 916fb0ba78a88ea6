package io.payonce.sandbox;

import java.time.Duration;
import java.util.Optional;
import java.util.UUID;

import jakarta.enterprise.context.ApplicationScoped;

import io.payonce.PayOnceConfig;
import io.smallrye.mutiny.Uni;

/**
 * What the sandbox does with a charge or a refund: idempotent by its number, recorded on arrival with the outcome
 * it will have, and, per merchant and operation, slow, declined, refused before accepting or answered too late.
 * Both operations run this one path. The HTTP side is {@link SandboxResource}.
 */
@ApplicationScoped
public class SandboxChannel {

    /** The answer to a late call comes this long after the client gave up. */
    private static final Duration PAST_CLIENT_TIMEOUT = Duration.ofSeconds(1);
    private static final Duration SETTLE_CHECK_EVERY = Duration.ofMillis(10);
    private static final int SETTLE_CHECKS = 50;

    private final SandboxLedger ledger;
    private final SandboxBehavior behavior;
    private final PayOnceConfig config;

    SandboxChannel(SandboxLedger ledger, SandboxBehavior behavior, PayOnceConfig config) {
        this.ledger = ledger;
        this.behavior = behavior;
        this.config = config;
    }

    /** A charge or a refund as the channel's client sends it: {@code number} is its request or refund number. */
    public record Call(SandboxOperation operation, String merchantId, String orderNo, String number, long amount,
            String currency) {
    }

    /** How a call ends. */
    public sealed interface Answer {
        /** Refused before anything was recorded: nothing was charged or refunded. */
        record NotAccepted() implements Answer {
        }

        /** The entry as recorded: pending, or its final outcome. */
        record Recorded(SandboxEntry entry) implements Answer {
        }

        /** The record vanished while the call waited (only when the ledger is emptied by hand, as tests do). */
        record Gone() implements Answer {
        }
    }

    /**
     * Charges or refunds once per number. Every call is counted: by its entry when it records one, on its own
     * otherwise. With no behaviour set, an entry is recorded at once, so the insert alone tells a fresh
     * number from a repeat; a set behaviour is taken by fresh numbers only.
     */
    public Uni<Answer> call(Call request) {
        String merchantId = request.merchantId();
        SandboxOperation operation = request.operation();
        if (behavior.isNormal(merchantId, operation)) {
            return fresh(request, SandboxBehavior.Setting.normal(operation));
        }
        return ledger.find(operation, merchantId, request.number())
                .flatMap(existing -> existing.isPresent() ? repeat(request, existing)
                        : fresh(request, behavior.next(merchantId, operation)));
    }

    /**
     * A number not seen before takes {@code step}: refused before anything is recorded, or recorded at once
     * with the outcome it will have after the step's latency and answered then, as the record stands (a
     * close in between turned it CLOSED); a late answer comes after the client has given up.
     */
    private Uni<Answer> fresh(Call request, SandboxBehavior.Setting step) {
        SandboxOperation operation = request.operation();
        if (step.mode() == SandboxMode.FAIL_BEFORE_ACCEPT) {
            return after(Duration.ofMillis(step.latencyMs()))
                    .flatMap(v -> ledger.countAttempt(operation, request.merchantId(), request.orderNo()))
                    .replaceWith(new Answer.NotAccepted());
        }
        String outcome = step.mode() == SandboxMode.DECLINE ? "DECLINED" : "SUCCEEDED";
        Duration answerAfter = Duration.ofMillis(step.latencyMs());
        if (step.mode() == SandboxMode.TIMEOUT_AFTER_ACCEPT) {
            Duration late = config.channel().timeout().plus(PAST_CLIENT_TIMEOUT);
            answerAfter = late.compareTo(answerAfter) > 0 ? late : answerAfter;
        }
        Duration wait = answerAfter;
        String id = operation.idPrefix + UUID.randomUUID().toString().replace("-", "");
        return ledger.record(operation, request.merchantId(), request.number(), request.orderNo(), request.amount(),
                request.currency(), outcome, id, step.latencyMs())
                .flatMap(recorded -> recorded
                        ? after(wait).flatMap(v -> settled(request, SETTLE_CHECKS)).map(SandboxChannel::answer)
                        // recorded already (a concurrent call with the same number, or a fence): a repeat
                        : ledger.find(operation, request.merchantId(), request.number())
                                .flatMap(existing -> repeat(request, existing)));
    }

    /**
     * The record once it has taken effect: its time is on the database's clock, which the wait on this
     * process's clock may be a few milliseconds short of.
     */
    private Uni<Optional<SandboxEntry>> settled(Call request, int checksLeft) {
        return ledger.find(request.operation(), request.merchantId(), request.number())
                .flatMap(entry -> entry.isPresent() && entry.get().isPending() && checksLeft > 0
                        ? after(SETTLE_CHECK_EVERY).flatMap(v -> settled(request, checksLeft - 1))
                        : Uni.createFrom().item(entry));
    }

    /** A call for a number already recorded: counted, never run again, answered with the record. */
    private Uni<Answer> repeat(Call request, Optional<SandboxEntry> existing) {
        return ledger.countAttempt(request.operation(), request.merchantId(), request.orderNo())
                .replaceWith(answer(existing));
    }

    private static Answer answer(Optional<SandboxEntry> entry) {
        return entry.<Answer>map(Answer.Recorded::new).orElseGet(Answer.Gone::new);
    }

    private static Uni<Void> after(Duration delay) {
        Uni<Void> now = Uni.createFrom().voidItem();
        return delay.isZero() ? now : now.onItem().delayIt().by(delay);
    }
}
