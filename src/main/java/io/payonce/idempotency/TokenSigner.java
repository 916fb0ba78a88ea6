package io.payonce.idempotency;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Instant;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.concurrent.atomic.AtomicReference;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import jakarta.enterprise.event.Observes;
import jakarta.inject.Singleton;

import io.payonce.PayOnceConfig;
import io.payonce.database.Database;
import io.quarkus.runtime.StartupEvent;
import io.smallrye.mutiny.Uni;
import org.jboss.logging.Logger;

/**
 * Signs and checks issued tokens: HMAC-SHA256 over the merchant, the random part and the expiry. A
 * token signed for one merchant fails the check for every other, so it can be neither used nor probed
 * across merchants, and a made-up token is refused before anything is looked up.
 */
@Singleton
public class TokenSigner {

    private static final Logger LOG = Logger.getLogger(TokenSigner.class);
    private static final String ALGORITHM = "HmacSHA256";
    private static final byte[] DOMAIN = "payonce-token-v1".getBytes(StandardCharsets.US_ASCII);
    private static final int MIN_SECRET_CHARS = 32;

    private final PayOnceConfig config;
    private final TokenRepository tokens;
    private final Database db;
    /** The random part of every token; made with the bean, at run time (see TokenFormat#newSignedPart). */
    private final SecureRandom random = new SecureRandom();
    /** Null until loaded; never changes once set. */
    private final AtomicReference<SecretKeySpec> key = new AtomicReference<>();
    /** Mac objects are not thread-safe; one per event-loop thread, made for the loaded key. */
    private final ThreadLocal<Mac> macs = ThreadLocal.withInitial(this::newMac);

    TokenSigner(PayOnceConfig config, TokenRepository tokens, Database db) {
        this.config = config;
        this.tokens = tokens;
        this.db = db;
        config.token().secret().ifPresent(secret -> {
            if (secret.length() < MIN_SECRET_CHARS) {
                throw new IllegalArgumentException("payonce.token.secret needs at least " + MIN_SECRET_CHARS + " characters");
            }
            key.set(new SecretKeySpec(secret.getBytes(StandardCharsets.UTF_8), ALGORITHM));
        });
    }

    /** Loads the shared key at start, so the first request does not wait for it. */
    void onStart(@Observes StartupEvent event) {
        ready().subscribe().with(k -> {
        }, failure -> LOG.warnf("token signing key not loaded yet (%s); the first token request retries", failure.toString()));
    }

    public Uni<String> sign(String merchantId, Instant expiresAt) {
        return ready().map(k -> {
            byte[] signed = TokenFormat.newSignedPart(random, expiresAt);
            return TokenFormat.compose(signed, mac(merchantId, signed, 0, signed.length));
        });
    }

    /** The expiry the token carries when it was signed by this service for this merchant, else null. */
    public Uni<Instant> verify(String merchantId, String token) {
        byte[] decoded = TokenFormat.decode(token);
        if (decoded == null) {
            return Uni.createFrom().nullItem();
        }
        return ready().map(k -> {
            byte[] expected = mac(merchantId, decoded, 0, TokenFormat.SIGNED_BYTES);
            byte[] given = Arrays.copyOfRange(decoded, TokenFormat.SIGNED_BYTES, decoded.length);
            return MessageDigest.isEqual(expected, given) ? TokenFormat.expiryOf(decoded) : null;
        });
    }

    private Uni<SecretKeySpec> ready() {
        SecretKeySpec loaded = key.get();
        if (loaded != null) {
            return Uni.createFrom().item(loaded);
        }
        byte[] candidate = new byte[32];
        random.nextBytes(candidate);
        // the first instance to start stores its candidate; every instance then uses the stored one
        return db.bounded(tokens.signingKey(HexFormat.of().formatHex(candidate))).map(hex -> {
            key.compareAndSet(null, new SecretKeySpec(HexFormat.of().parseHex(hex), ALGORITHM));
            return key.get();
        });
    }

    private byte[] mac(String merchantId, byte[] signed, int offset, int length) {
        Mac mac = macs.get();
        mac.update(DOMAIN);
        mac.update(merchantId.getBytes(StandardCharsets.US_ASCII));
        mac.update((byte) 0);
        mac.update(signed, offset, length);
        return Arrays.copyOf(mac.doFinal(), TokenFormat.MAC_BYTES);
    }

    private Mac newMac() {
        try {
            Mac mac = Mac.getInstance(ALGORITHM);
            mac.init(key.get());
            return mac;
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 unavailable", e);
        }
    }
}
