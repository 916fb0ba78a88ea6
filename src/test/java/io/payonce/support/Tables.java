package io.payonce.support;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * Reads the service's tables directly, for what the API does not show: the state of a token. The
 * database is the one the instances under test use (the build's {@code QUARKUS_DATASOURCE_JDBC_URL}),
 * reached directly, never through a test proxy.
 */
public final class Tables {

    private static final String URL = System.getenv().getOrDefault("QUARKUS_DATASOURCE_JDBC_URL",
            "jdbc:mariadb://127.0.0.1:3306/test");
    private static final String USER = System.getenv().getOrDefault("QUARKUS_DATASOURCE_USERNAME", "root");
    private static final String PASSWORD = System.getenv().getOrDefault("QUARKUS_DATASOURCE_PASSWORD", "");

    private Tables() {
    }

    /** AVAILABLE, IN_PROGRESS or COMPLETED; null when there is no such token. */
    public static String tokenState(String merchantId, String token) {
        try (Connection c = DriverManager.getConnection(URL, USER, PASSWORD);
                PreparedStatement s = c.prepareStatement(
                        "SELECT state FROM idempotency_tokens WHERE merchant_id = ? AND token = ?")) {
            s.setQueryTimeout(5);
            s.setString(1, merchantId);
            s.setString(2, token);
            try (ResultSet rows = s.executeQuery()) {
                return rows.next() ? rows.getString(1) : null;
            }
        } catch (SQLException e) {
            throw new AssertionError("reading the token table failed: " + e, e);
        }
    }
}
