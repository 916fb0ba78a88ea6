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
        assertEquals(Set.of(Topology.PAY, Topology.DEAD, "reply_to"), names(document.path("channels")));
        for (String queue : Set.of(Topology.PAY, Topology.DEAD)) {
            assertEquals(queue, document.path("channels").path(queue).path("bindings").path("amqp").path("queue")
                    .path("name").asText(), queue + "'s binding names it");
        }
    }

    @Test
    void commandHeaders_areTheOnesTheEntranceReads() throws IOException {
        JsonNode command = read().path("components").path("messages").path("PayCommand");

        assertEquals(Set.of(QueueEntrance.IDEMPOTENCY_KEY, QueueEntrance.MERCHANT_ID),
                names(command.path("headers").path("properties")));
        assertTrue(command.path("payload").path("description").asText().contains(QueueEntrance.BODY_MERCHANT),
                "the document says a body naming the merchant is refused");
    }

    @Test
    void answerHeaders_areTheOnesTheEntranceWrites() throws IOException {
        JsonNode answer = read().path("components").path("messages").path("PayAnswer");

        assertEquals(Set.of(Answers.STATUS, Answers.CODE, Answers.REPLAYED),
                names(answer.path("headers").path("properties")));
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
