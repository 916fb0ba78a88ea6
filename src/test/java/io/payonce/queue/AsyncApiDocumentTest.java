package io.payonce.queue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;

import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;

/**
 * The queue entrance's AsyncAPI document (src/main/asyncapi/payonce-queue.yaml) names what the code uses: the
 * queues it declares, the command's headers it reads and the answer's headers it writes. A rename in the code
 * without the document (or the other way round) fails here.
 */
class AsyncApiDocumentTest {

    private static final Path DOCUMENT = Path.of("src/main/asyncapi/payonce-queue.yaml");

    @Test
    void channels_areTheQueuesTheEntranceDeclares_andTheReplyQueue() throws IOException {
        JsonNode document = read();

        assertEquals("2.6.0", document.path("asyncapi").asText());
        assertEquals(Set.of(Topology.PAY, Topology.REFUNDS, Topology.DEAD, "reply_to"),
                names(document.path("channels")));
        for (String queue : Set.of(Topology.PAY, Topology.REFUNDS, Topology.DEAD)) {
            assertEquals(queue, document.path("channels").path(queue).path("bindings").path("amqp").path("queue")
                    .path("name").asText(), queue + "'s binding names it");
        }
    }

    @Test
    void eachCommandQueue_carriesItsCommand_andItsAnswerGoesToReplyTo() throws IOException {
        JsonNode channels = read().path("channels");

        assertEquals("#/components/messages/PayCommand",
                channels.path(Topology.PAY).path("publish").path("message").path("$ref").asText());
        assertEquals("#/components/messages/RefundCommand",
                channels.path(Topology.REFUNDS).path("publish").path("message").path("$ref").asText());
        Set<String> answers = new TreeSet<>();
        channels.path("reply_to").path("subscribe").path("message").path("oneOf")
                .forEach(message -> answers.add(message.path("$ref").asText()));
        assertEquals(Set.of("#/components/messages/PayAnswer", "#/components/messages/RefundAnswer"), answers);
    }

    @Test
    void commandHeaders_areTheOnesTheEntranceReads() throws IOException {
        for (String message : Set.of("PayCommand", "RefundCommand")) {
            JsonNode command = read().path("components").path("messages").path(message);

            assertEquals(Set.of(QueueEntrance.IDEMPOTENCY_KEY, QueueEntrance.MERCHANT_ID),
                    names(command.path("headers").path("properties")), message);
            assertTrue(command.path("payload").path("description").asText().contains(QueueEntrance.BODY_MERCHANT),
                    message + ": the document says a body naming the merchant is refused");
        }
    }

    @Test
    void answerHeaders_areTheOnesTheEntranceWrites() throws IOException {
        for (String message : Set.of("PayAnswer", "RefundAnswer")) {
            JsonNode answer = read().path("components").path("messages").path(message);

            assertEquals(Set.of(Answers.STATUS, Answers.CODE, Answers.REPLAYED, Answers.FINAL),
                    names(answer.path("headers").path("properties")), message);
        }
    }

    private static JsonNode read() throws IOException {
        return new ObjectMapper(new YAMLFactory()).readTree(DOCUMENT.toFile());
    }

    private static Set<String> names(JsonNode object) {
        Set<String> names = new TreeSet<>();
        object.fieldNames().forEachRemaining(names::add);
        return names;
    }
}
