package io.payonce.idempotency;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

import jakarta.inject.Singleton;

import io.payonce.PayOnceConfig;
import io.payonce.database.MysqlErrors;
import io.payonce.database.UtcTime;
import io.smallrye.mutiny.Uni;
import io.vertx.mutiny.sqlclient.SqlClient;

/**
 * Layer 1. Issuing a token writes nothing (it is signed, see {@link TokenSigner}); its row is created
 * by its first claim, inside the transaction that also inserts the payment record, so a payment costs no
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
     * (when enabled) lives {@code payonce.token.ttl} from its first claim.
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
    public Uni<Void> claimIn(SqlClient tx, String merchantId, TokenClaim claim) {
        Instant now = UtcTime.now();
        Duration lease = config.idempotency().lease();
        if (claim.firstClaim()) {
            return tokens.insertClaimed(tx, merchantId, claim.token(), claim.fingerprint(), claim.requestNo(), lease,
                    claim.expiresAt(), now)
                    .onFailure(MysqlErrors::isDuplicateKey).transform(dup -> new TokenTakenException());
        }
        return tokens.claim(tx, merchantId, claim.token(), claim.fingerprint(), claim.requestNo(), lease, now)
                .map(owned -> {
                    if (!owned) {
                        throw new TokenTakenException();
                    }
                    return null;
                });
    }

    /**
     * What the token's row means to a request with {@code fingerprint} (see {@link TokenFinding#of}).
     * Fails with {@link InvalidIdempotencyTokenException} (expired) or {@link IdempotencyKeyReusedException}.
     */
    public Uni<TokenFinding> find(String merchantId, String token, String fingerprint) {
        return tokens.find(merchantId, token).map(row -> TokenFinding.of(row, fingerprint, UtcTime.now()));
    }

    /** When the token's row says it expires; empty when it has no row. */
    public Uni<Optional<Instant>> storedExpiry(String merchantId, String token) {
        return tokens.find(merchantId, token).map(row -> row.map(TokenRow::expiresAt));
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
