package io.payonce.redis;

import java.time.Duration;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

import jakarta.inject.Singleton;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.payonce.PayOnceConfig;
import io.quarkus.runtime.Startup;
import io.quarkus.scheduler.Scheduled;
import io.smallrye.mutiny.Uni;
import io.vertx.mutiny.redis.client.Command;
import org.jboss.logging.Logger;

/**
 * The Redis fast path: cached answers, a short ownership key per token, and wake-ups for waiters, in
 * neutral types (a token is named by merchant and key, an answer is an opaque payload). Only an
 * optimisation: every call here has a timeout and a fallback that leads to the MySQL path, and nothing read
 * here decides a payment. When Redis fails its health probe, the calls are
 * skipped altogether until it answers again, so a Redis outage costs no timeouts per request.
 */
@Startup
@Singleton
public class RedisFastPath {

    private static final Logger LOG = Logger.getLogger(RedisFastPath.class);

    private final PayOnceConfig.Redis config;
    private final Duration tokenTtl;
    /** Fallbacks by the call that fell back, each counted from the start. */
    private final Map<Op, Counter> fallbacks = new EnumMap<>(Op.class);
    private final WakeUps wakeUps;
    private final LoopLocalRedis loopLocal;
    /** Unknown until the first probe answers: until then every copy takes the MySQL path. */
    private volatile boolean healthy;

    RedisFastPath(PayOnceConfig config, MeterRegistry meters, WakeUps wakeUps, LoopLocalRedis loopLocal) {
        this.config = config.redis();
        this.tokenTtl = config.token().ttl();
        this.wakeUps = wakeUps;
        this.loopLocal = loopLocal;
        // created at start, so the gauge is there before the first request; readiness says the same
        Gauge.builder("payonce.redis.degraded", this, r -> r.enabled() && !r.available() ? 1 : 0)
                .description("1 while Redis is enabled and failed its last probe (the MySQL path serves alone), else 0")
                .strongReference(true).register(meters);
        for (Op op : Op.values()) {
            fallbacks.put(op, meters.counter("payonce.redis.fallbacks", "op", op.name().toLowerCase(Locale.ROOT)));
        }
    }

    /** The calls to Redis, as the fallbacks counter's {@code op} tag names them. */
    private enum Op {
        GET, ACQUIRE, OWNED, FINISH, RELEASE, DISOWN
    }

    public boolean enabled() {
        return config.enabled();
    }

    /** True while Redis is enabled and answered its last probe. */
    public boolean available() {
        return config.enabled() && healthy;
    }

    /** The answer cached for the token; empty when there is none or Redis cannot tell. */
    public Uni<Optional<String>> cached(String merchantId, String token) {
        return guarded(Op.GET, () -> loopLocal.send(Command.GET, RedisKeys.of(merchantId, token).result())
                .map(r -> Optional.ofNullable(r == null ? null : r.toString())), Optional.empty());
    }

    /** What a copy learned from the token's ownership key. */
    public enum OwnershipKey {
        /** This copy set it: no other copy held it. */
        HELD,
        /** Another copy holds it. */
        TAKEN,
        /** Redis could not tell: the MySQL claim decides, as always. */
        UNKNOWN
    }

    /**
     * Takes the token's ownership key ({@code SET NX PX}). {@link OwnershipKey#TAKEN} only when another copy
     * holds it; the caller goes to the MySQL claim otherwise, which decides.
     */
    public Uni<OwnershipKey> acquire(String merchantId, String token) {
        // SET answers OK when it set the key, nil when NX found it taken
        return guarded(Op.ACQUIRE, () -> loopLocal.send(Command.SET, RedisKeys.of(merchantId, token).ownership(), "1",
                "NX", "PX", Long.toString(config.ownershipTtl().toMillis()))
                .map(r -> r != null ? OwnershipKey.HELD : OwnershipKey.TAKEN), OwnershipKey.UNKNOWN);
    }

    /** Whether some copy holds the token's ownership key; false when Redis cannot tell. */
    public Uni<Boolean> owned(String merchantId, String token) {
        return guarded(Op.OWNED, () -> loopLocal.send(Command.EXISTS, RedisKeys.of(merchantId, token).ownership())
                .map(r -> r != null && r.toInteger() == 1), false);
    }

    /**
     * The owner's hand-over as one script, so one round trip: caches the answer (unless ARGV[2] is 0),
     * publishes it to the waiters, gives up ownership. In this order, atomically: a copy that takes the
     * freed ownership key finds the answer cached already.
     */
    private static final String FINISH = """
            if ARGV[2] ~= '0' then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) end
            redis.call('PUBLISH', ARGV[3], ARGV[1])
            redis.call('DEL', KEYS[2])
            return 1""";

    /**
     * After MySQL stored the owner's answer: caches it for {@code cacheFor} (not at all when zero or
     * negative), wakes the waiters of every instance with it, and gives up ownership.
     */
    public Uni<Void> handOver(String merchantId, String token, String payload, Duration cacheFor) {
        RedisKeys keys = RedisKeys.of(merchantId, token);
        long cacheMs = cacheFor.isNegative() || cacheFor.isZero() || cacheFor.compareTo(tokenTtl) > 0 ? 0
                : Math.max(1, cacheFor.toMillis());
        return guarded(Op.FINISH, () -> loopLocal.send(Command.EVAL, FINISH, "2", keys.result(), keys.ownership(),
                payload, Long.toString(cacheMs), keys.channel()).replaceWithVoid(), null);
    }

    /** Gives up ownership without an answer and tells waiters to look again (the token was released). */
    public Uni<Void> released(String merchantId, String token) {
        RedisKeys keys = RedisKeys.of(merchantId, token);
        return guarded(Op.RELEASE, () -> loopLocal.send(Command.DEL, keys.ownership())
                .flatMap(v -> loopLocal.send(Command.PUBLISH, keys.channel(), WakeUps.LOOK_AGAIN))
                .replaceWithVoid(), null);
    }

    /** Gives up ownership while the token stays in progress (the channel outcome is unknown). */
    public Uni<Void> disown(String merchantId, String token) {
        return guarded(Op.DISOWN, () -> loopLocal.send(Command.DEL, RedisKeys.of(merchantId, token).ownership())
                .replaceWithVoid(), null);
    }

    /**
     * Probes Redis (on a cluster: whether any node answers, as a dead master fails only the calls for its
     * own keys); a failed probe also drops the subscription, which reconnects once Redis answers.
     */
    @Scheduled(every = "1s", concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    Uni<Void> probe() {
        if (!config.enabled()) {
            return Uni.createFrom().voidItem();
        }
        return loopLocal.probe()
                .ifNoItem().after(config.probeTimeout()).fail()
                .map(ok -> true)
                .onFailure().recoverWithItem(false)
                .invoke(up -> {
                    if (up != healthy) {
                        LOG.infof("Redis %s", up ? "answers: fast path on" : "unavailable: MySQL path only");
                    }
                    healthy = up;
                    wakeUps.ensure(up);
                })
                .replaceWithVoid();
    }

    /** Runs a Redis call with the timeout; any failure counts as a fallback and yields {@code fallback}. */
    private <T> Uni<T> guarded(Op op, Supplier<Uni<? extends T>> call, T fallback) {
        if (!available()) {
            return Uni.createFrom().item(fallback);
        }
        return Uni.createFrom().<T>deferred(call)
                .ifNoItem().after(config.timeout()).fail()
                .onFailure().recoverWithItem(failure -> {
                    fallbacks.get(op).increment();
                    LOG.debugf("Redis %s fell back: %s", op, failure);
                    return fallback;
                });
    }

}
