package io.payonce.support;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.Map;

import org.junit.jupiter.api.Test;

import com.rabbitmq.client.Connection;

import io.payonce.support.RabbitVhost.Credentials;

/** Vhosts and merchant users on the shared broker, made and cleaned up. */
class RabbitVhostTest {

    @Test
    void merchantUser_connectsToItsVhostAndNoOther() throws Exception {
        try (RabbitVhost vhost = RabbitVhost.create(RabbitVhostTest.class)) {
            Credentials merchant = vhost.user(Fixtures.id("merchant"));
            assertTrue(vhost.name().startsWith("payonce-test-rabbitvhosttest-"), vhost.name());
            assertEquals(Map.of("RABBITMQ_HOST", "127.0.0.1", "RABBITMQ_PORT", "5672",
                    "RABBITMQ_USERNAME", merchant.username(), "RABBITMQ_PASSWORD", merchant.password(),
                    "RABBITMQ_VIRTUAL_HOST", vhost.name()), vhost.appEnv(merchant));

            try (Connection connection = QueueClient.factory(vhost.host(), vhost.port(), vhost.name(), merchant)
                    .newConnection()) {
                assertTrue(connection.isOpen());
            }
            assertThrows(IOException.class,
                    () -> QueueClient.factory(vhost.host(), vhost.port(), "/", merchant).newConnection().close(),
                    "the merchant has no permission on the default vhost");
        }
    }

    @Test
    void closedVhost_isGoneWithTheUsersItMade() {
        RabbitVhost vhost = RabbitVhost.create(RabbitVhostTest.class);
        String merchant = vhost.user(Fixtures.id("merchant")).username();
        assertTrue(vhost.exists());
        assertTrue(vhost.userExists(merchant));

        vhost.close();

        assertFalse(vhost.exists());
        assertFalse(vhost.userExists(merchant));
    }
}
