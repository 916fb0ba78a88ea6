package io.payonce.support;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import java.util.concurrent.TimeUnit;

import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * The development CA and certificates of {@code scripts/dev-ca.sh}, made (or kept, as the script keeps them)
 * in {@code target/dev-ca}, and TLS contexts of a client of an instance under client-auth mtls: one that
 * trusts the CA and presents the gateway's certificate, or one that trusts it and presents nothing.
 */
public final class DevCa {

    private static final Path DIR = Path.of("target/dev-ca").toAbsolutePath();
    private static final char[] NO_PASSWORD = new char[0];
    private static boolean made;

    private DevCa() {
    }

    /** The directory holding ca.crt, service.crt/.key and gateway.crt/.key, made on the first call. */
    public static synchronized Path directory() throws IOException, InterruptedException {
        if (!made) {
            Process script = new ProcessBuilder("scripts/dev-ca.sh", DIR.toString()).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            if (!script.waitFor(60, TimeUnit.SECONDS) || script.exitValue() != 0) {
                script.destroyForcibly();
                throw new IllegalStateException("scripts/dev-ca.sh " + DIR + " failed");
            }
            made = true;
        }
        return DIR;
    }

    /** A client that trusts the CA, presenting the gateway's client certificate or none. */
    public static SSLContext client(boolean presentGatewayCertificate) throws IOException, InterruptedException,
            GeneralSecurityException {
        Path dir = directory();
        KeyStore trusted = KeyStore.getInstance("PKCS12");
        trusted.load(null, null);
        trusted.setCertificateEntry("ca", certificate(dir.resolve("ca.crt")));
        TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        trust.init(trusted);
        KeyManagerFactory keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        KeyStore own = KeyStore.getInstance("PKCS12");
        own.load(null, null);
        if (presentGatewayCertificate) {
            own.setKeyEntry("gateway", privateKey(dir.resolve("gateway.key")), NO_PASSWORD,
                    new Certificate[] { certificate(dir.resolve("gateway.crt")) });
        }
        keys.init(own, NO_PASSWORD);
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(keys.getKeyManagers(), trust.getTrustManagers(), null);
        return context;
    }

    private static Certificate certificate(Path pem) throws IOException, GeneralSecurityException {
        try (InputStream in = Files.newInputStream(pem)) {
            return CertificateFactory.getInstance("X.509").generateCertificate(in);
        }
    }

    /** A PKCS#8 PEM key of the elliptic curve the script uses. */
    private static PrivateKey privateKey(Path pem) throws IOException, GeneralSecurityException {
        String base64 = Files.readString(pem, StandardCharsets.US_ASCII).replaceAll("-----[A-Z ]+-----", "")
                .replaceAll("\\s", "");
        return KeyFactory.getInstance("EC").generatePrivate(new PKCS8EncodedKeySpec(Base64.getDecoder().decode(base64)));
    }
}
