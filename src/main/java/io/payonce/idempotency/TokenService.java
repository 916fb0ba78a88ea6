package io.payonce.idempotency;

import java.time.Duration;
import java.time.Instant;

import jakarta.inject.Singleton;

import io.payonce.PayOnceConfig;
import io.payonce.database.MysqlErrors;
import io.payonce.database.UtcTime;
import io.smallrye.mutiny.Uni;
import io.vertx.mutiny.sqlclient.SqlClient;

/**
 * Layer 1. Issuing a token writes nothing (it is signed, see {@link TokenSigner}); its row is created
 * by its first use, inside the transaction that also inserts the payment record, so a payment costs no
 * commit of its own for the token. The row's unique key and conditional updates decide who owns it.
 */
@Singleton
public class TokenService {

    private final TokenRepository tokens;
    private final TokenSigner signer;
    private final PayOnceConfig config;

    TokenService(TokenRepository tokens, TokenSigner signer, PayOnceConfig config) {
        this.tokens = tokens;
        this.signer = signer;
        this.config = config;
    }

    public record Issued(String token, Instant expiresAt) {
    }

    public Uni<Issued> issue(String merchantId) {
        return issue(merchantId, UtcTime.now().plus(config.token().ttl()));
    }

    /** A token that expires at {@code expiresAt} (tests make expired ones with it). */
    public Uni<Issued> issue(String merchantId, Instant expiresAt) {
        return signer.sign(merchantId, expiresAt).map(token -> new Issued(token, expiresAt));
    }

    /**
     * When the token expires, if the merchant may use it; fails with {@link InvalidIdempotencyTokenException}
     * for a value that is not this merchant's unexpired token, before anything is looked up. A client key
     * (when enabled) lives {@code payonce.token.ttl} from its first use.
     */
    public Uni<Instant> check(String merchantId, String token) {
        Instant now = UtcTime.now();
        if (TokenFormat.isIssued(token)) {
            return signer.verify(merchantId, token).map(expiresAt -> {
                if (expiresAt == null || !expiresAt.isAfter(now)) {
                    throw new InvalidIdempotencyTokenException();
                }
                return expiresAt;
            });
        }
        if (config.idempotency().acceptClientKeys() && TokenFormat.isClientKey(token)) {
            return Uni.createFrom().item(now.plus(config.token().ttl()));
        }
        return Uni.createFrom().failure(new InvalidIdempotencyTokenException());
    }

    /**
     * Claims the token inside the caller's transaction; fails with {@link TokenTakenException} when
     * another copy has it (or had it), so that the transaction rolls back having done nothing.
     */
    public Uni<Void> claimIn(SqlClient tx, String merchantId, TokenUse use) {
        Instant now = UtcTime.now();
        Duration lease = config.idempotency().lease();
        if (use.firstUse()) {
            return tokens.insertClaimed(tx, merchantId, use.token(), use.fingerprint(), use.requestNo(), lease,
                    use.expiresAt(), now)
                    .onFailure(MysqlErrors::isDuplicateKey).transform(dup -> new TokenTakenException());
        }
        return tokens.claim(tx, merchantId, use.token(), use.fingerprint(), use.requestNo(), lease, now)
                .map(owned -> {
                    if (!owned) {
                        throw new TokenTakenException();
                    }
                    return null;
                });
    }

    /**
     * What a copy that could not claim the token finds in its row. Fails with
     * {@link InvalidIdempotencyTokenException} (expired) or {@link IdempotencyKeyReusedException}.
     */
    public Uni<Claim> inspect(String merchantId, TokenUse use) {
        return tokens.find(merchantId, use.token()).map(row -> {
            if (row == null) {
                return new Claim.Vacant();
            }
            if (row.expiredAt(UtcTime.now())) {
                throw new InvalidIdempotencyTokenException();
            }
            if (row.boundToOtherThan(use.fingerprint())) {
                throw new IdempotencyKeyReusedException();
            }
            return switch (row.state()) {
                case COMPLETED -> new Claim.Finished(row.response());
                case IN_PROGRESS -> new Claim.Running();
                case AVAILABLE -> new Claim.Vacant();
            };
        });
    }

    /** When the token's row says it expires, or null when it has none. */
    public Uni<Instant> storedExpiry(String merchantId, String token) {
        return tokens.find(merchantId, token).map(row -> row == null ? null : row.expiresAt());
    }

    public Uni<Boolean> complete(SqlClient tx, String merchantId, String token, StoredResponse response) {
        return tokens.complete(tx, merchantId, token, response, UtcTime.now());
    }

    public Uni<Boolean> release(SqlClient tx, String merchantId, String token) {
        return tokens.release(tx, merchantId, token, UtcTime.now());
    }

    public Uni<Boolean> recordInterim(SqlClient client, String merchantId, String token, StoredResponse response) {
        return tokens.recordInterim(client, merchantId, token, response, UtcTime.now());
    }
}
