package io.payonce.idempotency;

import java.time.Instant;

import jakarta.enterprise.context.ApplicationScoped;

import io.payonce.PayOnceConfig;
import io.payonce.mysql.MysqlErrors;
import io.payonce.mysql.UtcTime;
import io.smallrye.mutiny.Uni;

/** Layer 1: issuing tokens and claiming them atomically on the authoritative MySQL row. */
@ApplicationScoped
public class TokenService {

    /** A claim can lose a race with a release; a few tries settle it, more would hide a bug. */
    private static final int CLAIM_TRIES = 3;

    private final TokenRepository tokens;
    private final PayOnceConfig config;

    TokenService(TokenRepository tokens, PayOnceConfig config) {
        this.tokens = tokens;
        this.config = config;
    }

    public record Issued(String token, Instant expiresAt) {
    }

    public Uni<Issued> issue(String merchantId) {
        Instant now = UtcTime.now();
        Instant expiresAt = now.plus(config.token().ttl());
        String token = TokenFormat.newToken();
        return tokens.insert(merchantId, token, expiresAt, now).replaceWith(new Issued(token, expiresAt));
    }

    /**
     * Claims the token for the request with this fingerprint. Fails with
     * {@link InvalidIdempotencyTokenException} or {@link IdempotencyKeyReusedException}; otherwise tells
     * whether this caller owns it, or what the first execution left.
     */
    public Uni<Claim> claim(String merchantId, String token, String fingerprint, String requestNo) {
        return claim(merchantId, token, fingerprint, requestNo, CLAIM_TRIES);
    }

    /** Refuses a value that cannot be a token, before anything is looked up. */
    public void checkFormat(String token) {
        if (!TokenFormat.isIssued(token) && !(config.idempotency().acceptClientKeys() && TokenFormat.isClientKey(token))) {
            throw new InvalidIdempotencyTokenException();
        }
    }

    /** When the token expires; what Redis caches of it must not outlive it. */
    public Uni<Instant> expiresAt(String merchantId, String token) {
        return tokens.find(merchantId, token).map(row -> row == null ? UtcTime.now() : row.expiresAt());
    }

    private Uni<Claim> claim(String merchantId, String token, String fingerprint, String requestNo, int triesLeft) {
        Instant now = UtcTime.now();
        return tokens.claim(merchantId, token, fingerprint, requestNo, now.plus(config.idempotency().lease()), now)
                .flatMap(owned -> owned
                        ? Uni.createFrom().item((Claim) new Claim.Owned())
                        : tokens.find(merchantId, token).flatMap(row -> {
                            if (row == null && config.idempotency().acceptClientKeys() && triesLeft > 0) {
                                return register(merchantId, token, now)
                                        .flatMap(v -> claim(merchantId, token, fingerprint, requestNo, triesLeft - 1));
                            }
                            if (row == null || row.expiredAt(now)) {
                                throw new InvalidIdempotencyTokenException();
                            }
                            if (row.boundToOtherThan(fingerprint)) {
                                throw new IdempotencyKeyReusedException();
                            }
                            return switch (row.state()) {
                                case COMPLETED -> Uni.createFrom().item(new Claim.Finished(row.response()));
                                case IN_PROGRESS -> Uni.createFrom().item(new Claim.Running());
                                // released between our claim and our read: try again
                                case AVAILABLE -> triesLeft > 0
                                        ? claim(merchantId, token, fingerprint, requestNo, triesLeft - 1)
                                        : Uni.createFrom().item(new Claim.Running());
                            };
                        }));
    }

    /** A client-generated key is registered on first use and lives as long as an issued token. */
    private Uni<Void> register(String merchantId, String key, Instant now) {
        return tokens.insert(merchantId, key, now.plus(config.token().ttl()), now)
                .onFailure(MysqlErrors::isDuplicateKey).recoverWithNull();
    }

    public Uni<Boolean> complete(String merchantId, String token, StoredResponse response) {
        return tokens.complete(merchantId, token, response, UtcTime.now());
    }

    public Uni<Boolean> release(String merchantId, String token) {
        return tokens.release(merchantId, token, UtcTime.now());
    }

    public Uni<Boolean> recordInterim(String merchantId, String token, StoredResponse response) {
        return tokens.recordInterim(merchantId, token, response, UtcTime.now());
    }
}
