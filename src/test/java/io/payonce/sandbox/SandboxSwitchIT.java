package io.payonce.sandbox;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ThreadLocalRandom;

import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;

import io.payonce.support.AppProcess;
import io.restassured.specification.RequestSpecification;

/**
 * One packaged application, the sandbox switched at start (contract section 8), on databases made for each test
 * and dropped after: fresh ones, and ones the service migrated before the sandbox had migrations of its own
 * (made here by Flyway from the migrations as they landed, kept in {@code db/moved}). Off, the
 * sandbox leaves no trace: no endpoint, no table, no part of the API document; on, later, for the same database,
 * its tables are made; and a database that has them already keeps them, and its history, either way.
 */
class SandboxSwitchIT {

    private static final String MERCHANT = "m_switch";
    private static final List<String> SANDBOX_TABLES = List.of("sandbox_attempts", "sandbox_charges",
            "sandbox_schema_history");
    private static final Path COMMITTED_DOCUMENT = Path.of("src/test/openapi/openapi.yaml");
    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
    private static final Map<String, Object> CHARGE = Map.of("merchant_id", MERCHANT, "order_no", "ord_1",
            "request_no", "req_1", "amount", 100, "currency", "EUR");
    private static final Map<String, Object> REFUND = Map.of("merchant_id", MERCHANT, "order_no", "ord_1",
            "refund_no", "rfd_1", "amount", 100, "currency", "EUR");
    private static final Map<String, Object> DECLINE_NEXT = Map.of("mode", "decline", "count", 1);
    /** The service's own tables, which the sandbox's migrations never touch. */
    private static final List<String> SERVICE_TABLES = List.of("idempotency_tokens", "orders", "payments");

    @Test
    void freshDatabase_sandboxOff_leavesNoTrace_thenOn_makesItsTables() throws Exception {
        try (ScratchDatabase db = ScratchDatabase.create("fresh_off");
                AppProcess app = db.app("switch-fresh").unset("PAYONCE_SANDBOX_ENABLED")) {
            // given: the prod profile's default, with a channel URL
            app.start().awaitReady();

            // then: its endpoints answer as unknown paths do
            assertAll(
                    () -> assertNotFound(as(app).queryParam("order_no", "ord_1").get("/sandbox/charges")),
                    () -> assertNotFound(as(app).get("/sandbox/charges/req_1")),
                    () -> assertNotFound(as(app).body(CHARGE).post("/sandbox/charges")),
                    () -> assertNotFound(as(app).body(Map.of()).post("/sandbox/charges/req_1/close")),
                    () -> assertNotFound(as(app).get("/sandbox/refunds/rfd_1")),
                    () -> assertNotFound(as(app).body(REFUND).post("/sandbox/refunds")),
                    () -> assertNotFound(as(app).body(Map.of()).post("/sandbox/refunds/rfd_1/close")),
                    () -> assertNotFound(as(app).body(DECLINE_NEXT).put("/sandbox/behavior")));
            // and: no table of its was made, the service's were
            Set<String> tables = db.tables();
            assertTrue(tables.containsAll(List.of("orders", "payments", "idempotency_tokens")), tables::toString);
            assertEquals(Set.of(), intersection(tables, SANDBOX_TABLES), "the sandbox's tables");
            // and: the API document is the committed one without the sandbox
            assertDocumentWithoutSandbox(served(app));

            // when: the same database, the sandbox turned on
            app.close();
            app.env("PAYONCE_SANDBOX_ENABLED", "true").start().awaitReady();

            // then: its tables are made and it serves
            Set<String> withSandbox = db.tables();
            assertTrue(withSandbox.containsAll(SANDBOX_TABLES), withSandbox::toString);
            as(app).body(DECLINE_NEXT).put("/sandbox/behavior").then().statusCode(200);
            as(app).queryParam("order_no", "ord_1").get("/sandbox/charges").then().statusCode(200)
                    .body("charges", equalTo(0));
            assertEquals(Files.readString(COMMITTED_DOCUMENT), served(app), "the document with the sandbox on");
        }
    }

    /**
     * A database the service migrated before the sandbox had migrations of its own ends, once the sandbox is turned
     * on there, with a fresh database's tables: its sandbox tables are brought up to date, not only kept.
     */
    @Test
    void freshDatabase_sandboxOn_hasTheTablesAndHistoriesOfAnExistingOneTurnedOn() throws Exception {
        try (ScratchDatabase fresh = ScratchDatabase.create("fresh_on");
                ScratchDatabase existing = ScratchDatabase.create("existing_ref");
                AppProcess app = fresh.app("switch-fresh-on").env("PAYONCE_SANDBOX_ENABLED", "true");
                AppProcess existingApp = existing.app("switch-existing-on").env("PAYONCE_SANDBOX_ENABLED", "true")) {
            // given
            existing.migrateAsLanded(null);
            existingApp.start().awaitReady();
            existingApp.close();

            // when
            app.start().awaitReady();

            // then
            assertAll(
                    () -> assertEquals(existing.schema(), fresh.schema(), "the schema"),
                    () -> assertEquals(existing.history(), fresh.history(), "the service's schema history"),
                    () -> assertEquals(existing.history("sandbox_schema_history"),
                            fresh.history("sandbox_schema_history"), "the sandbox's schema history"));
        }
    }

    @Test
    void existingDatabase_startsWithTheSandboxOffAndThenOn_keepingItsTablesRowsAndHistory() throws Exception {
        try (ScratchDatabase db = ScratchDatabase.create("existing");
                AppProcess app = db.app("switch-existing").unset("PAYONCE_SANDBOX_ENABLED")) {
            // given: a database as the service left it before, with a charge in its sandbox's ledger
            db.migrateAsLanded(null);
            db.execute("INSERT INTO sandbox_charges (merchant_id, request_no, order_no, amount, currency, status, txn_id,"
                    + " effective_at) VALUES ('" + MERCHANT + "', 'req_old', 'ord_old', 100, 'EUR', 'SUCCEEDED', 'sbx_old',"
                    + " UTC_TIMESTAMP(3))");
            Map<String, String> schema = db.schema();
            List<String> history = db.history();

            // when: off
            app.start().awaitReady();

            // then: nothing of it dropped, nothing added to the history
            assertAll(
                    () -> assertEquals(schema, db.schema(), "the schema"),
                    () -> assertEquals(history, db.history(), "the service's schema history"),
                    () -> assertNotFound(as(app).get("/sandbox/charges/req_old")));

            // when: on
            app.close();
            app.env("PAYONCE_SANDBOX_ENABLED", "true").start().awaitReady();

            // then: the sandbox's history starts, the service's tables as they were, the sandbox's brought up to
            // date with their rows: the old charge is a charge, and its number is free for a refund
            assertAll(
                    () -> assertEquals(only(schema, SERVICE_TABLES), only(db.schema(), SERVICE_TABLES), "the schema"),
                    () -> assertEquals(history, db.history(), "the service's schema history"),
                    () -> assertTrue(db.tables().contains("sandbox_schema_history"), "the sandbox's history"),
                    () -> as(app).get("/sandbox/charges/req_old").then().statusCode(200)
                            .body("txn_id", equalTo("sbx_old")),
                    () -> as(app).get("/sandbox/refunds/req_old").then().statusCode(404)
                            .body("code", equalTo("refund_not_found")),
                    () -> as(app).queryParam("order_no", "ord_old").get("/sandbox/charges").then().statusCode(200)
                            .body("charges", equalTo(1)).body("refunds", equalTo(0)));
        }
    }

    /**
     * A database the service left before its migration 9 (possible for one not started since): migration 9 still
     * changes both tables as it did, so the result is the schema of every other existing database.
     */
    @Test
    void databaseMigratedUpTo8_sandboxOff_isMigratedToTheSchemaOfAnExistingOne() throws Exception {
        try (ScratchDatabase old = ScratchDatabase.create("up_to_8");
                ScratchDatabase existing = ScratchDatabase.create("existing_ref9");
                AppProcess app = old.app("switch-up-to-8").unset("PAYONCE_SANDBOX_ENABLED")) {
            // given
            old.migrateAsLanded("8");
            existing.migrateAsLanded(null);

            // when
            app.start().awaitReady();

            // then
            assertAll(
                    () -> assertEquals(existing.schema(), old.schema(), "the schema"),
                    () -> assertEquals(existing.history(), old.history(), "the service's schema history"));
        }
    }

    private static RequestSpecification as(AppProcess app) {
        return given().baseUri("http://127.0.0.1").port(app.port()).header("X-Merchant-Id", MERCHANT)
                .contentType("application/json");
    }

    private static void assertNotFound(io.restassured.response.Response response) {
        response.then().statusCode(404).contentType("application/problem+json").body("code", equalTo("not_found"));
    }

    private static String served(AppProcess app) {
        return app.management().get("/q/openapi").then().statusCode(200).extract().asString();
    }

    /**
     * Every path but the sandbox's as committed, and of the components exactly those that what is left refers to,
     * each as committed: nothing dangling, nothing only the sandbox used.
     */
    private static void assertDocumentWithoutSandbox(String served) throws IOException {
        JsonNode committed = YAML.readTree(Files.readString(COMMITTED_DOCUMENT));
        JsonNode off = YAML.readTree(served);
        List<String> paths = new ArrayList<>();
        committed.path("paths").fieldNames().forEachRemaining(path -> {
            if (!path.startsWith("/sandbox")) {
                paths.add(path);
            }
        });
        Map<String, JsonNode> expected = new TreeMap<>();
        for (String ref : reachable(off)) {
            expected.put(ref, committed.at(ref.substring(1)));
        }
        Map<String, JsonNode> components = new TreeMap<>();
        off.path("components").fields().forEachRemaining(kind -> kind.getValue().fields().forEachRemaining(
                member -> components.put("#/components/" + kind.getKey() + "/" + member.getKey(), member.getValue())));
        components.keySet().removeIf(ref -> ref.startsWith("#/components/securitySchemes/"));
        List<String> tags = new ArrayList<>();
        off.path("tags").forEach(tag -> tags.add(tag.path("name").asText()));
        assertAll(
                () -> assertEquals(paths, fieldNames(off.path("paths")), "the paths"),
                () -> paths.forEach(path -> assertEquals(committed.path("paths").path(path),
                        off.path("paths").path(path), path)),
                () -> assertEquals(expected, components, "the components"),
                () -> assertFalse(tags.contains("Sandbox"), () -> "tags: " + tags),
                () -> assertFalse(components.containsKey("#/components/schemas/SandboxCharge"), "SandboxCharge"),
                () -> assertFalse(components.containsKey("#/components/examples/charge_not_found"), "charge_not_found"));
    }

    /** The component references the document makes outside its components, and those they make in turn. */
    private static Set<String> reachable(JsonNode document) {
        Set<String> reached = new TreeSet<>();
        List<String> pending = new ArrayList<>();
        document.fields().forEachRemaining(field -> {
            if (!field.getKey().equals("components")) {
                references(field.getValue(), pending);
            }
        });
        while (!pending.isEmpty()) {
            String ref = pending.removeLast();
            if (reached.add(ref)) {
                references(document.at(ref.substring(1)), pending);
            }
        }
        return reached;
    }

    private static void references(JsonNode node, List<String> found) {
        if (node.has("$ref")) {
            found.add(node.get("$ref").asText());
        }
        node.forEach(child -> references(child, found));
    }

    private static List<String> fieldNames(JsonNode node) {
        List<String> names = new ArrayList<>();
        node.fieldNames().forEachRemaining(names::add);
        return names;
    }

    private static Map<String, String> only(Map<String, String> schema, List<String> tables) {
        Map<String, String> kept = new TreeMap<>(schema);
        kept.keySet().retainAll(tables);
        return kept;
    }

    private static Set<String> intersection(Set<String> a, List<String> b) {
        Set<String> both = new TreeSet<>(a);
        both.retainAll(b);
        return both;
    }

    /** A database of its own on the test server, dropped at the end. */
    private record ScratchDatabase(String name, String server, String user, String password) implements AutoCloseable {

        static ScratchDatabase create(String purpose) throws SQLException {
            URI configured = URI.create(System.getenv().getOrDefault("QUARKUS_DATASOURCE_JDBC_URL",
                    "jdbc:mariadb://127.0.0.1:3306/test").substring("jdbc:".length()));
            ScratchDatabase db = new ScratchDatabase(
                    "payonce_switch_" + purpose + "_" + Integer.toHexString(ThreadLocalRandom.current().nextInt()),
                    configured.getHost() + ":" + configured.getPort(),
                    System.getenv().getOrDefault("QUARKUS_DATASOURCE_USERNAME", "root"),
                    System.getenv().getOrDefault("QUARKUS_DATASOURCE_PASSWORD", ""));
            db.onServer("CREATE DATABASE `" + db.name + "`");
            return db;
        }

        String jdbcUrl() {
            return "jdbc:mariadb://" + server + "/" + name;
        }

        AppProcess app(String appName) throws IOException {
            return AppProcess.named(appName).env("QUARKUS_DATASOURCE_JDBC_URL", jdbcUrl())
                    .env("QUARKUS_DATASOURCE_REACTIVE_URL", "mysql://" + server + "/" + name);
        }

        /** The service's migrations as they were before the sandbox had its own: up to {@code target}, or all. */
        void migrateAsLanded(String target) {
            var flyway = Flyway.configure().dataSource(jdbcUrl(), user, password)
                    .locations("classpath:db/migration", "classpath:db/moved");
            if (target != null) {
                flyway.target(target);
            }
            flyway.load().migrate();
        }

        Set<String> tables() throws SQLException {
            Set<String> tables = new TreeSet<>();
            query("SHOW TABLES", row -> tables.add(row.getString(1)));
            return tables;
        }

        /** Each table's definition, without the counter of its next id. */
        Map<String, String> schema() throws SQLException {
            Map<String, String> schema = new TreeMap<>();
            for (String table : tables()) {
                query("SHOW CREATE TABLE `" + table + "`", row -> schema.put(table,
                        row.getString(2).replaceAll(" AUTO_INCREMENT=\\d+", "")));
            }
            schema.remove("flyway_schema_history");
            return schema;
        }

        /** The service's schema history as validation reads it: version, description, type, checksum, success. */
        List<String> history() throws SQLException {
            return history("flyway_schema_history");
        }

        /** A schema history as validation reads it. */
        List<String> history(String table) throws SQLException {
            List<String> history = new ArrayList<>();
            query("SELECT version, description, type, checksum, success FROM " + table
                    + " ORDER BY installed_rank", row -> history.add(row.getString(1) + " " + row.getString(2) + " "
                            + row.getString(3) + " " + row.getString(4) + " " + row.getString(5)));
            return history;
        }

        void execute(String sql) throws SQLException {
            try (Connection c = DriverManager.getConnection(jdbcUrl(), user, password);
                    Statement s = c.createStatement()) {
                s.execute(sql);
            }
        }

        private void query(String sql, RowReader reader) throws SQLException {
            try (Connection c = DriverManager.getConnection(jdbcUrl(), user, password);
                    Statement s = c.createStatement(); ResultSet rows = s.executeQuery(sql)) {
                while (rows.next()) {
                    reader.read(rows);
                }
            }
        }

        private void onServer(String sql) throws SQLException {
            try (Connection c = DriverManager.getConnection("jdbc:mariadb://" + server + "/", user, password);
                    Statement s = c.createStatement()) {
                s.execute(sql);
            }
        }

        @Override
        public void close() throws SQLException {
            onServer("DROP DATABASE IF EXISTS `" + name + "`");
        }

        @FunctionalInterface
        interface RowReader {
            void read(ResultSet row) throws SQLException;
        }
    }
}
