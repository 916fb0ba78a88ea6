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
     * Claims the token inside the caller's transaction and answers what the caller then holds; fails with
     * {@link TokenTakenException} when another copy has it (or had it), so that the transaction rolls back
     * having done nothing.
     */
    public Uni<Ownership> claimIn(SqlClient tx, String merchantId, TokenClaim claim) {
        Instant now = UtcTime.now();
        Duration lease = config.idempotency().lease();
        Uni<Integer> epoch = claim.firstClaim()
                ? tokens.insertClaimed(tx, merchantId, claim.token(), claim.fingerprint(), claim.requestNo(), lease,
                        claim.expiresAt(), now)
                        .onFailure(MysqlErrors::isDuplicateKey).transform(dup -> new TokenTakenException())
                        .replaceWith(1)
                : tokens.claim(tx, merchantId, claim.token(), claim.fingerprint(), claim.requestNo(), lease, now)
                        .map(owned -> owned.orElseThrow(TokenTakenException::new));
        return epoch.map(e -> new Ownership(merchantId, claim.token(), claim.fingerprint(), claim.requestNo(),
                claim.expiresAt(), e));
    }

    /**
     * What the token's row means to a request with {@code fingerprint} (see {@link TokenFinding#of}).
     * Fails with {@link InvalidIdempotencyTokenException} (expired) or {@link IdempotencyKeyReusedException}.
     */
    public Uni<TokenFinding> find(String merchantId, String token, String fingerprint) {
        return tokens.find(merchantId, token).map(row -> TokenFinding.of(row, fingerprint, UtcTime.now()));
    }

    /**
     * As {@link #find}, once no claim of the token is in flight: a claim not yet committed is waited for (up to
     * the caller's bound), not read around.
     */
    public Uni<TokenFinding> findLatest(String merchantId, String token, String fingerprint) {
        return tokens.findLatest(merchantId, token).map(row -> TokenFinding.of(row, fingerprint, UtcTime.now()));
    }

    /** The token's row; empty when it has none. */
    public Uni<Optional<TokenRow>> row(String merchantId, String token) {
        return tokens.find(merchantId, token);
    }

    /** When the token's row says it expires; empty when it has no row. */
    public Uni<Optional<Instant>> storedExpiry(String merchantId, String token) {
        return tokens.find(merchantId, token).map(row -> row.map(TokenRow::expiresAt));
    }

    /** Stores the owner's final answer; false when its epoch no longer holds the token in progress. */
    public Uni<Boolean> complete(SqlClient tx, Ownership owner, StoredResponse response) {
        return tokens.complete(tx, owner.merchantId(), owner.token(), owner.epoch(), response, UtcTime.now());
    }

    /** Gives the token back for a retry; false when the owner's epoch no longer holds it in progress. */
    public Uni<Boolean> release(SqlClient tx, Ownership owner) {
        return tokens.release(tx, owner.merchantId(), owner.token(), owner.epoch(), UtcTime.now());
    }
}
