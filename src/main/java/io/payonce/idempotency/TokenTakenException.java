package io.payonce.idempotency;

/**
 * Thrown inside a claim's transaction when the token's row exists already, or is not claimable:
 * the transaction rolls back untouched and the copy looks at what the row holds ({@link Claim}).
 */
public class TokenTakenException extends RuntimeException {

    public TokenTakenException() {
        super("the token is taken", null, false, false);
    }
}
