package io.payonce.support;

import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * A virtual host of one test class's own on a RabbitMQ node (the shared broker on 127.0.0.1:5672, a
 * {@link PrivateRabbit}) or on a {@link RabbitCluster}, so its queues, messages and permissions meet no
 * other class's: named {@code payonce-test-<class>-<random>}, guest given every permission on it, and
 * broker users made for it on demand, one a merchant, each with a random password and every permission on
 * this vhost only. {@link #close} deletes the users it made and the vhost, with whatever is in it.
 *
 * <p>Users, unlike queues, are broker-wide: a name made here is taken on the broker until close. Tests of
 * different classes, or of builds of other checkouts sharing the broker, that may run at the same time
 * name their merchants uniquely ({@link Fixtures#id}); {@link #user} fails on a name already taken rather
 * than reuse or delete a user some other test may hold.
 */
public final class RabbitVhost implements AutoCloseable {

    public static final String SHARED_HOST = "127.0.0.1";
    public static final int SHARED_PORT = 5672;
    /** The broker's user names PayOnce may meet as merchants: the merchant id's format (CONTRACT section 2). */
    private static final Pattern USER_NAME = Pattern.compile("[A-Za-z0-9_-]{1,64}");
    private static final String ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";
    private static final SecureRandom RANDOM = new SecureRandom();

    /** A broker user's name and password. */
    public record Credentials(String username, String password) {

        /** The broker's default user, which RabbitMQ lets in from loopback only (what the tests use). */
        public static final Credentials GUEST = new Credentials("guest", "guest");

        @Override
        public String toString() {
            return username; // the password stays out of assertion messages
        }
    }

    private final RabbitmqCtl ctl;
    private final String host;
    private final int port;
    private final String name;
    /** A cluster's AMQP listeners as {@code rabbitmq-addresses} takes them; null for a single node. */
    private final String addresses;
    private final List<String> users = new ArrayList<>();
    private boolean closed;

    private RabbitVhost(RabbitmqCtl ctl, String host, int port, String addresses, String name) {
        this.ctl = ctl;
        this.host = host;
        this.port = port;
        this.addresses = addresses;
        this.name = name;
    }

    /** A fresh vhost on the shared broker for {@code testClass}. */
    public static RabbitVhost create(Class<?> testClass) {
        return on(RabbitmqCtl.sharedNode(), SHARED_HOST, SHARED_PORT, testClass);
    }

    /** A fresh vhost for {@code testClass} on the node {@code ctl} reaches, whose AMQP listener is host:port. */
    static RabbitVhost on(RabbitmqCtl ctl, String host, int port, Class<?> testClass) {
        return on(ctl, host, port, null, testClass);
    }

    /**
     * A fresh vhost for {@code testClass} on the cluster {@code ctl} reaches, whose AMQP listeners are
     * {@code addresses} ({@code host:port,...}), host:port being the first of them.
     */
    static RabbitVhost on(RabbitmqCtl ctl, String host, int port, String addresses, Class<?> testClass) {
        String name = "payonce-test-" + testClass.getSimpleName().toLowerCase(Locale.ROOT) + "-" + random(8);
        ctl.run("add_vhost", name);
        RabbitVhost vhost = new RabbitVhost(ctl, host, port, addresses, name);
        try {
            vhost.grantAll(Credentials.GUEST.username());
        } catch (RuntimeException | Error e) {
            vhost.close();
            throw e;
        }
        return vhost;
    }

    public String host() {
        return host;
    }

    public int port() {
        return port;
    }

    /** The vhost's name, as {@code rabbitmq-virtual-host} wants it. */
    public String name() {
        return name;
    }

    /**
     * Makes the broker user {@code name} with a random password and every permission on this vhost, and
     * answers its credentials; fails if the name is taken on the broker.
     */
    public synchronized Credentials user(String name) {
        if (!USER_NAME.matcher(name).matches()) {
            throw new IllegalArgumentException("a merchant's user name is [A-Za-z0-9_-]{1,64}, not " + name);
        }
        if (closed) {
            throw new IllegalStateException("vhost " + this.name + " is closed");
        }
        String password = random(24);
        try {
            ctl.run("add_user", name, password);
        } catch (AssertionError e) {
            throw new AssertionError("cannot make broker user " + name + " (users are broker-wide: is the name"
                    + " taken by another test, or left by a run that did not close its vhost?)", e);
        }
        users.add(name);
        grantAll(name);
        return new Credentials(name, password);
    }

    /** The environment an application process needs to reach this vhost as guest. */
    public Map<String, String> appEnv() {
        return appEnv(Credentials.GUEST);
    }

    /**
     * The environment an application process needs to reach this vhost as {@code as}: Quarkus' own
     * RabbitMQ keys, as environment variables.
     */
    public Map<String, String> appEnv(Credentials as) {
        Map<String, String> env = new LinkedHashMap<>();
        properties(as).forEach((key, value) -> env.put(key.toUpperCase(Locale.ROOT).replace('-', '_'), value));
        return env;
    }

    /**
     * The same settings as configuration properties, for a {@code QuarkusTestResourceLifecycleManager}; on a
     * cluster {@code rabbitmq-addresses} too, which the connector takes over host and port.
     */
    public Map<String, String> properties(Credentials as) {
        Map<String, String> properties = new LinkedHashMap<>();
        properties.put("rabbitmq-host", host);
        properties.put("rabbitmq-port", String.valueOf(port));
        if (addresses != null) {
            properties.put("rabbitmq-addresses", addresses);
        }
        properties.put("rabbitmq-username", as.username());
        properties.put("rabbitmq-password", as.password());
        properties.put("rabbitmq-virtual-host", name);
        return properties;
    }

    /** Whether the broker has this vhost now: true from creation until {@link #close}. */
    public boolean exists() {
        return ctl.run("-s", "list_vhosts", "name").lines().anyMatch(name::equals);
    }

    /** Whether the broker has a user of {@code name} now. */
    public boolean userExists(String name) {
        return ctl.run("-s", "list_users").lines().anyMatch(line -> line.split("\t", 2)[0].equals(name));
    }

    /** Deletes the users this vhost made and the vhost; tries each, and fails naming each that failed. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        List<String> failures = new ArrayList<>();
        for (String user : users) {
            RabbitmqCtl.Outcome deleted = ctl.attempt("delete_user", user);
            if (!deleted.ok()) {
                failures.add("delete_user " + user + " (exit " + deleted.exit() + "): " + deleted.output());
            }
        }
        RabbitmqCtl.Outcome deleted = ctl.attempt("delete_vhost", name);
        if (!deleted.ok()) {
            failures.add("delete_vhost " + name + " (exit " + deleted.exit() + "): " + deleted.output());
        }
        if (!failures.isEmpty()) {
            throw new AssertionError("cleaning up vhost " + name + " on " + ctl.node() + " failed:\n"
                    + String.join("\n", failures));
        }
    }

    private void grantAll(String user) {
        ctl.run("set_permissions", "-p", name, user, ".*", ".*", ".*");
    }

    /** Lower-case letters and digits only: the shared node's wrapper passes arguments through a shell. */
    static String random(int length) {
        StringBuilder out = new StringBuilder(length);
        for (int i = 0; i < length; i++) {
            out.append(ALPHABET.charAt(RANDOM.nextInt(ALPHABET.length())));
        }
        return out.toString();
    }
}
