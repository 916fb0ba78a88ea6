package io.payonce.database;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
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
 * type, description and checksum, so these three are still resolved here, with the checksums their files had.
 * What they do now, where they are still pending: 4 and 7 (the sandbox's tables alone) nothing; 9 its half on
 * {@code payments}, and its half on {@code sandbox_charges} only where the old 4 made that table.
 */
@Singleton
public class MovedMigrations implements FlywayConfigurationCustomizer, MigrationResolver {

    /** Migration 9's statement on the service's own table, the one its file had. */
    private static final String LEASE_PAYMENTS = """
            ALTER TABLE payments
                -- the owner's lease on its payment: until then the process that inserted the record may still be
                -- waiting for the channel, and reconciliation leaves the payment alone (the database's clock)
                ADD COLUMN lease_until DATETIME(3) NULL,
                -- why a FAILED payment failed, in the channel's words: DECLINED, or CLOSED (closed at the channel
                -- before any charge of it succeeded); NULL otherwise, and for payments failed before this column
                ADD COLUMN failure VARCHAR(16) NULL,
                -- a provider's transaction id may be longer than the 64 characters first allowed
                MODIFY channel_txn_id VARCHAR(255) NULL""";

    /** Migration 9's statement on the sandbox table the old migration 4 made, the one its file had. */
    private static final String FENCE_SANDBOX_CHARGES = """
            ALTER TABLE sandbox_charges
                MODIFY status VARCHAR(16) NOT NULL,
                ADD COLUMN effective_at DATETIME(3) NOT NULL DEFAULT '1970-01-02 00:00:00.000',
                MODIFY order_no VARCHAR(64) NULL,
                MODIFY amount BIGINT NULL,
                MODIFY currency CHAR(3) NULL,
                MODIFY txn_id VARCHAR(64) NULL""";

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

    private static void fenceChargesAndLeasePayments(Connection connection) throws SQLException {
        try (Statement statement = connection.createStatement()) {
            statement.execute(LEASE_PAYMENTS);
            boolean oldSandboxTable;
            try (ResultSet found = statement.executeQuery(OLD_SANDBOX_CHARGES)) {
                oldSandboxTable = found.next() && found.getInt(1) > 0;
            }
            if (oldSandboxTable) {
                statement.execute(FENCE_SANDBOX_CHARGES);
            }
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
