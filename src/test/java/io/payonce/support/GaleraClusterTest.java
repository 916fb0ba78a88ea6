package io.payonce.support;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

class GaleraClusterTest {

    /**
     * A CI clone under /root, in a {@code mktemp -d} directory or made under umask 077: the tests run as
     * root, the nodes as {@code mysql}, which cannot enter it.
     */
    @Test
    void checkoutTheServersUserCannotEnter_everyNodeInstalls() throws Exception {
        Assumptions.assumeTrue(GaleraCluster.missingTools() == null, GaleraCluster.missingTools());
        Assumptions.assumeTrue("root".equals(System.getProperty("user.name")), "the nodes run as the test's user");
        Path closed = Files.createDirectories(Path.of("target/closed-to-others"));
        Files.setPosixFilePermissions(closed, PosixFilePermissions.fromString("rwx------"));
        File build = closed.resolve("checkout/target").toFile();
        GaleraCluster cluster = GaleraCluster.under(build, "closed");
        try {
            cluster.installNodes();

            for (int node = 1; node <= GaleraCluster.NODES; node++) {
                File systemTables = new File(build, "galera/closed/node" + node + "/data/mysql");
                assertTrue(systemTables.isDirectory(), systemTables + " holds node " + node + "'s system tables");
            }
        } finally {
            cluster.deleteFiles();
        }
    }
}
