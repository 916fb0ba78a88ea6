package io.payonce.support;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * {@code rabbitmqctl} (or {@code rabbitmq-queues}, {@link #queues}) aimed at one node, each call bounded by
 * {@link #BOUND} and its output kept for the failure's message. The shared node is reached through the
 * packaged wrapper, which runs the CLI as the {@code rabbitmq} user with that user's Erlang cookie; a
 * {@link RabbitNode} (a {@link PrivateRabbit}, a {@link RabbitCluster}'s node) through the CLI itself, run
 * with the node's home (its cluster's), whose cookie no other node has, so no call made for it can reach
 * the shared node. A cluster's calls that any of its nodes may answer go to whichever node runs
 * at the time of the call ({@link #following}).
 */
final class RabbitmqCtl {

    /** A call takes under a second here (the CLI is an Erlang VM of its own); a busy machine may make that many. */
    static final Duration BOUND = Duration.ofSeconds(30);
    static final String SHARED_NODE = "rabbit@localhost";
    private static final String WRAPPER = "/usr/sbin/rabbitmqctl";
    private static final String CLI = "/usr/lib/rabbitmq/bin/rabbitmqctl";
    /** The CLI for quorum queues, next to {@link #CLI}: a private node's only, like every call it makes. */
    private static final String QUEUES_CLI = "/usr/lib/rabbitmq/bin/rabbitmq-queues";

    /** What one call did: its exit code ({@code -1} when it outlived its bound) and its output, stderr included. */
    record Outcome(int exit, String output) {

        boolean ok() {
            return exit == 0;
        }
    }

    private final Supplier<String> node;
    private final String executable;
    private final Map<String, String> environment;

    private RabbitmqCtl(Supplier<String> node, String executable, Map<String, String> environment) {
        this.node = node;
        this.executable = executable;
        this.environment = environment;
    }

    /** The shared broker's node, as root may reach it: through the packaged wrapper. */
    static RabbitmqCtl sharedNode() {
        return new RabbitmqCtl(() -> SHARED_NODE, WRAPPER, Map.of());
    }

    /** A private node, the CLI run with {@code environment} (its home, hence its cookie) over the JVM's. */
    static RabbitmqCtl privateNode(String node, Map<String, String> environment) {
        return new RabbitmqCtl(() -> node, CLI, Map.copyOf(environment));
    }

    /** This CLI, run with this environment, aimed at the node {@code node} names at each call. */
    RabbitmqCtl following(Supplier<String> node) {
        return new RabbitmqCtl(node, executable, environment);
    }

    String node() {
        return node.get();
    }

    /**
     * {@code rabbitmq-queues} (quorum queues' status, members), run as this CLI is and aimed at the same
     * node: for a private node only.
     */
    RabbitmqCtl queues() {
        if (!executable.equals(CLI)) {
            throw new IllegalStateException("rabbitmq-queues is run on the tests' own nodes only");
        }
        return new RabbitmqCtl(node, QUEUES_CLI, environment);
    }

    /** Runs {@code args} on the node and answers its output; fails with the output unless it exited 0 in time. */
    String run(String... args) {
        String node = node();
        Outcome outcome = attempt(node, args);
        if (!outcome.ok()) {
            throw new AssertionError(Path.of(executable).getFileName() + " -n " + node + " "
                    + String.join(" ", redacted(args))
                    + (outcome.exit() < 0 ? " took over " + BOUND : " exited " + outcome.exit()) + ":\n"
                    + outcome.output());
        }
        return outcome.output();
    }

    /** Runs {@code args} on the node and answers what happened, without judging it. */
    Outcome attempt(String... args) {
        return attempt(node(), args);
    }

    private Outcome attempt(String node, String[] args) {
        List<String> command = new ArrayList<>(List.of(executable, "-n", node));
        command.addAll(List.of(args));
        File output = null;
        try {
            output = File.createTempFile("rabbitmqctl-", ".out");
            ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(output);
            builder.environment().putAll(environment);
            Process process = builder.start();
            if (!process.waitFor(BOUND.toMillis(), TimeUnit.MILLISECONDS)) {
                process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
                return new Outcome(-1, read(output));
            }
            return new Outcome(process.exitValue(), read(output));
        } catch (IOException e) {
            return new Outcome(-2, "cannot run " + executable + ": " + e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while running " + executable + " "
                    + String.join(" ", redacted(args)), e);
        } finally {
            if (output != null) {
                output.delete();
            }
        }
    }

    private static String read(File output) throws IOException {
        return Files.readString(output.toPath(), StandardCharsets.UTF_8);
    }

    /** The arguments as a failure may quote them: a password given to add_user is left out. */
    private static List<String> redacted(String[] args) {
        List<String> shown = new ArrayList<>(List.of(args));
        if (shown.size() == 3 && shown.get(0).equals("add_user")) {
            shown.set(2, "<password>");
        }
        return shown;
    }
}
