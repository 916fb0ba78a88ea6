package io.payonce.database;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;

import jakarta.inject.Singleton;

import org.flywaydb.core.api.CoreMigrationType;
import org.flywaydb.core.api.MigrationVersion;
import org.flywaydb.core.api.configuration.FluentConfiguration;
import org.flywaydb.core.api.executor.MigrationExecutor;
import org.flywaydb.core.api.resolver.MigrationResolver;
import org.flywaydb.core.api.resolver.ResolvedMigration;
import org.flywaydb.core.extensibility.MigrationType;
import org.flywaydb.core.internal.jdbc.Results;

import io.quarkus.flyway.FlywayConfigurationCustomizer;

/**
 * The service's migrations 4, 7 and 9 as every schema history made before the sandbox had migrations of its own
 * records them. Their SQL files made and changed the sandbox's tables in every database, sandbox or not; those
 * tables are now made by {@code db/sandbox}, in a history of their own, only while the sandbox is on
 * (sandbox/SandboxSwitch). Flyway validates each applied migration against one resolved locally, of the same
 * type, description and checksum, so these three are still resolved here, with the checksums of their files
 * (kept in {@code db/moved}, where Flyway does not look). What they do now, where they are still pending: 4 and 7
 * (the sandbox's tables alone) nothing; 9 its statement on {@code payments}, and its statement on
 * {@code sandbox_charges} only where the old 4 made that table.
 */
@Singleton
public class MovedMigrations implements FlywayConfigurationCustomizer, MigrationResolver {

    /**
     * The three files, kept byte for byte as they landed: what the histories record (the checksums below are of
     * these bytes), and migration 9's statements, which it still runs.
     */
    static final String FILES = "db/moved/";

    /** A sandbox_charges table of the old migration 4's shape: one migration 9 has not changed yet. */
    private static final String OLD_SANDBOX_CHARGES = """
            SELECT COUNT(*) FROM information_schema.TABLES t
            WHERE t.TABLE_SCHEMA = DATABASE() AND t.TABLE_NAME = 'sandbox_charges'
              AND NOT EXISTS (SELECT 1 FROM information_schema.COLUMNS c
                              WHERE c.TABLE_SCHEMA = t.TABLE_SCHEMA AND c.TABLE_NAME = t.TABLE_NAME
                                AND c.COLUMN_NAME = 'effective_at')""";

    /** Each as its SQL file was recorded, with the checksum Flyway computed of that file. */
    static final List<Moved> MOVED = List.of(
            new Moved("4", "create sandbox ledger", "V4__create_sandbox_ledger.sql", -866778217,
                    connection -> {
                    }),
            new Moved("7", "count sandbox attempts apart from charges",
                    "V7__count_sandbox_attempts_apart_from_charges.sql", -473262019, connection -> {
                    }),
            new Moved("9", "fence charges and lease payments", "V9__fence_charges_and_lease_payments.sql",
                    -1135727833, MovedMigrations::fenceChargesAndLeasePayments));

    /** The main schema history only: the sandbox's has no such past. */
    @Override
    public void customize(FluentConfiguration configuration) {
        configuration.resolvers(this);
    }

    @Override
    public Collection<ResolvedMigration> resolveMigrations(Context context) {
        return List.copyOf(MOVED);
    }

    /** Migration 9's first statement changes payments; its second, the sandbox table the old 4 made. */
    private static void fenceChargesAndLeasePayments(Connection connection) throws SQLException {
        List<String> statements = statements(FILES + "V9__fence_charges_and_lease_payments.sql");
        try (Statement statement = connection.createStatement()) {
            statement.execute(statements.get(0));
            boolean oldSandboxTable;
            try (ResultSet found = statement.executeQuery(OLD_SANDBOX_CHARGES)) {
                oldSandboxTable = found.next() && found.getInt(1) > 0;
            }
            if (oldSandboxTable) {
                statement.execute(statements.get(1));
            }
        }
    }

    /** A file's statements: its comment lines left out, each statement ending with the line that ends in ';'. */
    static List<String> statements(String resource) {
        try (InputStream in = Thread.currentThread().getContextClassLoader().getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("missing " + resource);
            }
            List<String> statements = new ArrayList<>();
            StringBuilder statement = new StringBuilder();
            for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\\R")) {
                if (line.strip().startsWith("--") || line.isBlank()) {
                    continue;
                }
                statement.append(line).append('\n');
                if (line.stripTrailing().endsWith(";")) {
                    statements.add(statement.substring(0, statement.lastIndexOf(";")));
                    statement.setLength(0);
                }
            }
            return statements;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** What a moved migration does now to the database it is pending in. */
    @FunctionalInterface
    interface Work {
        void apply(Connection connection) throws SQLException;
    }

    /** One moved migration, resolved as the SQL migration it was. */
    record Moved(String number, String description, String file, int checksum, Work work)
            implements ResolvedMigration, MigrationExecutor {

        @Override
        public MigrationVersion getVersion() {
            return MigrationVersion.fromVersion(number);
        }

        @Override
        public String getDescription() {
            return description;
        }

        @Override
        public String getScript() {
            return "db/migration/" + file;
        }

        @Override
        public Integer getChecksum() {
            return checksum;
        }

        @Override
        public MigrationType getType() {
            return CoreMigrationType.SQL;
        }

        @Override
        public String getPhysicalLocation() {
            return MovedMigrations.class.getName() + " (" + file + ")";
        }

        @Override
        public MigrationExecutor getExecutor() {
            return this;
        }

        @Override
        public boolean checksumMatches(Integer recorded) {
            return Objects.equals(recorded, checksum);
        }

        @Override
        public boolean checksumMatchesWithoutBeingIdentical(Integer recorded) {
            return false;
        }

        @Override
        public List<Results> execute(org.flywaydb.core.api.executor.Context context) throws SQLException {
            work.apply(context.getConnection());
            return List.of();
        }

        @Override
        public boolean canExecuteInTransaction() {
            return true;
        }

        @Override
        public boolean shouldExecute() {
            return true;
        }
    }
}
