package io.payonce;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;

/** Every setting of PayOnce's own, with the reason for each default. */
@ConfigMapping(prefix = "payonce")
public interface PayOnceConfig {

    /** The gateway authenticates the caller and names the merchant in this header. */
    @WithDefault("X-Merchant-Id")
    String merchantHeader();

    Token token();

    Idempotency idempotency();

    Channel channel();

    Sandbox sandbox();

    Reconcile reconcile();

    Redis redis();

    Database database();

    Http http();

    Gateway gateway();

    Queue queue();

    interface Token {
        /** A day covers every client retry policy we know of (mobile apps retry for hours at most). */
        @WithDefault("24h")
        Duration ttl();

        /**
         * The key that signs issued tokens (at least 32 characters). Unset, every instance on one database
         * shares a random key that the first of them stores there, so tokens work across instances with no
         * secret to distribute; set it to keep the key out of the database.
         */
        Optional<String> secret();
    }

    interface Idempotency {
        /**
         * How long a duplicate waits for the first execution. Longer than the channel timeout, so a
         * duplicate of a normal payment always receives the first response rather than a 409.
         */
        @WithDefault("10s")
        Duration waitTimeout();

        /** Stripe/IETF-style client-generated keys; off because issued tokens bind merchants safely. */
        @WithDefault("false")
        boolean acceptClientKeys();

        /**
         * How long an owner holds a token in progress, and its payment, before it counts as dead. Longer
         * than the channel timeout plus the database work of one payment, so a live owner never loses it
         * (the service refuses to start with one not above the channel timeout).
         */
        @WithDefault("30s")
        Duration lease();
    }

    interface Channel {
        /**
         * The payment channel's base URL. No default: unset, charges go to this instance's own sandbox while it
         * is on, and the service refuses to start while it is off, so that a production deployment never marks
         * real orders paid against a test channel because a key was forgotten.
         */
        Optional<String> url();

        /** Providers answer in well under a second; five covers their slow tail without holding clients long. */
        @WithDefault("5s")
        Duration timeout();

        /**
         * Connections to the channel. Each payment holds one for the channel's whole latency, so this caps
         * payments in flight: 256 lets 256 concurrent payments through a provider answering in 100 ms
         * reach 2,560 a second (the REST client's own default, 50, would cap them at 500).
         */
        @WithDefault("256")
        int maxConnections();
    }

    interface Sandbox {
        /**
         * Off, as a provider's test mode is off unless chosen: the dev and test profiles and the run script turn
         * it on. Off, its endpoints answer 404 like any unknown path and leave the API document, and its tables
         * are not created (sandbox/SandboxSwitch).
         */
        @WithDefault("false")
        boolean enabled();
    }

    interface Reconcile {
        /** Short enough that an uncertain payment is settled within seconds of becoming eligible. */
        @WithDefault("5s")
        Duration interval();

        /**
         * Well past the channel timeout, so reconciliation never races a live owner's channel call (the
         * service refuses to start with one not above the channel timeout).
         */
        @WithDefault("30s")
        Duration minAge();

        /**
         * How long reconciliation keeps completing a payment the channel cannot settle before it closes the
         * number at the channel and reports the payment not completed. An hour rides out a provider's
         * outage; a customer told "processing" should not wait much longer to learn nothing was charged.
         */
        @WithDefault("1h")
        Duration giveUpAfter();
    }

    interface Redis {
        /** The fast path is on by default; off, every duplicate takes the MySQL path (same answers, slower). */
        @WithDefault("true")
        boolean enabled();

        /**
         * Every Redis call gives up after this and falls back to MySQL. A local Redis answers in well
         * under a millisecond; a call this slow means Redis is in trouble, and waiting longer only adds
         * latency to a path that is correct without it.
         */
        @WithDefault("100ms")
        Duration timeout();

        /**
         * How long a copy holds the ownership key. Longer than the channel timeout plus the database
         * work of a payment, so an owner rarely outlives it; short, so a crashed owner blocks nothing long.
         */
        @WithDefault("10s")
        Duration ownershipTtl();

        /**
         * The health probe's own bound, longer than a call's: under a burst its PING queues behind request
         * calls, and a busy Redis is not a down one.
         */
        @WithDefault("1s")
        Duration probeTimeout();
    }

    interface Http {
        /**
         * A request's body must have arrived in full this long after its headers, or the request is
         * answered 408 and its connection closed. A payment body is a few hundred bytes: ten seconds is
         * generous for any client that means to send one, and short for one that holds a connection open.
         */
        @WithDefault("10s")
        Duration bodyTimeout();
    }

    interface Gateway {

        /**
         * The TLS registry's configuration ({@code quarkus.tls.payonce.*}) that the business port serves and
         * the channel client presents to the sandbox under {@link ClientAuth#MTLS}.
         */
        String TLS_CONFIGURATION = "payonce";

        /**
         * Who may call the business API. {@code mtls} in production: the service believes its merchant header
         * as it comes, so only a caller with a client certificate of the operator's CA (the gateway) may
         * reach it; {@code none} where the operator vouches for the network (dev, test, a sidecar).
         */
        @WithDefault("mtls")
        ClientAuth clientAuth();

        /**
         * The PEM files of {@link ClientAuth#MTLS}, none by default: they belong to the deployment, never to
         * the package. GatewayTlsKeys hands them to the TLS registry.
         */
        Tls tls();

        interface Tls {
            /** The instance's certificate: served on the business port, presented by the channel client to the sandbox. */
            Optional<Path> certificate();

            /** The certificate's private key (PKCS#8 or PKCS#1). */
            Optional<Path> key();

            /** The operator's CA: the gateway's client certificate must chain to it, and so must the sandbox's. */
            Optional<Path> ca();
        }

        enum ClientAuth {
            /** The business API over TLS only, a client certificate of the operator's CA required. */
            MTLS,
            /** Plain HTTP, the merchant header trusted as sent. */
            NONE
        }
    }

    interface Database {
        /**
         * Every statement or transaction gives up after this. A database that stops answering without
         * closing the connection (a partition, a failover leaving half-open sockets) would otherwise hold
         * a request for ever; a payment's statements take milliseconds, and two seconds also covers a
         * queue for a pooled connection under load.
         */
        @WithDefault("2s")
        Duration timeout();
    }

    /**
     * The queue entrance (contract section 9): pay commands from RabbitMQ. The broker is named by the
     * connector's own keys ({@code rabbitmq-host}, {@code rabbitmq-port}, {@code rabbitmq-username},
     * {@code rabbitmq-password}, {@code rabbitmq-virtual-host}).
     */
    interface Queue {
        /** Off unless an operator turns it on: a service that takes no commands needs no broker. */
        @WithDefault("false")
        boolean enabled();

        /** Where a command's merchant comes from. */
        @WithDefault("user-id")
        MerchantFrom merchantFrom();

        /**
         * Broker users whose messages may name their merchant in the {@code merchant-id} header (with
         * {@code merchant-from=header}): producer services acting for many merchants.
         */
        Optional<List<String>> trustedUsers();

        /**
         * Deliveries in progress at once on one instance. Each holds a database connection for a few
         * milliseconds and a channel call for up to the channel timeout; more than the pool could serve
         * would only queue inside the instance instead of in the broker, where other instances can take them.
         */
        @WithDefault("16")
        int prefetch();

        /**
         * Deliveries of one command after its first, counted by PayOnce, past which a command whose token shows
         * it never executed is answered 503 and dead-lettered (it kept meeting a passing failure, or kept
         * killing the instances that took it). A command that executed is never dead-lettered, whatever the
         * count.
         */
        @WithDefault("5")
        int retries();

        /**
         * How long a delivery that cannot be settled yet (a passing failure, a first execution still running,
         * the database not answering) is held before it is returned to its queue to run again: long enough for
         * a restarting database or channel to answer again. Held deliveries count against the broker's
         * {@code consumer_timeout} (30 minutes by default), which this must stay far below.
         */
        @WithDefault("2s")
        Duration hold();

        /** A publish (an answer, a retry) not confirmed by the broker within this is tried again later. */
        @WithDefault("5s")
        Duration confirmTimeout();

        /** How often the outbox is looked at when nothing wakes it; an answer written here wakes it at once. */
        @WithDefault("500ms")
        Duration outboxInterval();

        enum MerchantFrom {
            /** The message's {@code user_id}, which the broker checks against the publishing connection's user. */
            USER_ID,
            /** The {@code merchant-id} header, from {@link #trustedUsers()} only. */
            HEADER
        }
    }
}
