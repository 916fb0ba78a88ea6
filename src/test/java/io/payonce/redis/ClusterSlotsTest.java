package io.payonce.redis;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

import org.junit.jupiter.api.Test;

import io.vertx.core.buffer.Buffer;
import io.vertx.mutiny.redis.client.Command;
import io.vertx.mutiny.redis.client.Response;
import io.vertx.redis.client.impl.types.BulkType;
import io.vertx.redis.client.impl.types.MultiType;
import io.vertx.redis.client.impl.types.NumberType;

/** The slot table routes a key to the master of its slot, as CLUSTER SLOTS and a redirection name it. */
class ClusterSlotsTest {

    private static final String HOSTS = "redis://:secret@10.0.0.1:7000,redis://:secret@10.0.0.2:7001";

    @Test
    void key_goesToTheMasterOfItsSlot_andKeysOfOneTagShareIt() {
        ClusterSlots slots = new ClusterSlots(HOSTS);
        // slots as CLUSTER KEYSLOT gives them: hello 866, somekey 11058, foo 12182
        assertTrue(slots.read("redis://:secret@10.0.0.1:7000", reply(
                range(0, 5460, "10.0.0.1", 7000), range(5461, 11058, "10.0.0.2", 7001), range(11059, 16383, "", 7002))));

        assertAll(
                () -> assertEquals("redis://:secret@10.0.0.1:7000", slots.masterOf("hello")),
                () -> assertEquals("redis://:secret@10.0.0.2:7001", slots.masterOf("somekey")),
                () -> assertEquals("redis://:secret@10.0.0.1:7002", slots.masterOf("foo"), "an empty host is the node asked"),
                () -> assertEquals(slots.masterOf("po:{m:tok}:own"), slots.masterOf("po:{m:tok}:res")),
                () -> assertEquals(slots.masterOf("m:tok"), slots.masterOf("po:{m:tok}:done")));
    }

    @Test
    void slot_isTheCrc16OfTheKey_orOfItsFirstNonEmptyHashTag() {
        assertAll(
                // the check value of CRC16-XMODEM, 0x31C3, and slots as CLUSTER KEYSLOT gives them
                () -> assertEquals(0x31C3, ClusterSlots.slotOf("123456789")),
                () -> assertEquals(12182, ClusterSlots.slotOf("foo")),
                () -> assertEquals(866, ClusterSlots.slotOf("hello")),
                () -> assertEquals(ClusterSlots.slotOf("user1000"), ClusterSlots.slotOf("{user1000}.following")),
                () -> assertEquals(ClusterSlots.slotOf("bar"), ClusterSlots.slotOf("foo{bar}{zap}"), "the first tag"),
                () -> assertEquals(ClusterSlots.slotOf("{bar"), ClusterSlots.slotOf("foo{{bar}}zap"), "up to the first '}'"),
                () -> assertNotEquals(ClusterSlots.slotOf("bar"), ClusterSlots.slotOf("foo{}{bar}"), "an empty tag: the whole key"),
                () -> assertNotEquals(ClusterSlots.slotOf("bar"), ClusterSlots.slotOf("foo}bar{"), "no '}' after the '{'"),
                () -> assertEquals(ClusterSlots.slotOf("tâg"), ClusterSlots.slotOf("ключ{tâg}"), "non-ASCII, as UTF-8"));
    }

    @Test
    void slotTable_usesNoVertxInternals_whichAnyReleaseMayChange() throws IOException {
        String classFile;
        try (InputStream in = ClusterSlots.class.getResourceAsStream("ClusterSlots.class")) {
            classFile = new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
        }

        assertFalse(classFile.contains("io/vertx/redis/client/impl/"), "ClusterSlots refers to a Vert.x internal class");
    }

    @Test
    void nodes_areTheKnownMastersThenTheConfiguredOnes() {
        ClusterSlots slots = new ClusterSlots(HOSTS);
        assertEquals(List.of("redis://:secret@10.0.0.1:7000", "redis://:secret@10.0.0.2:7001"), slots.nodes());

        slots.read("redis://:secret@10.0.0.1:7000", reply(range(0, 16383, "10.0.0.3", 7003)));

        assertEquals(List.of("redis://:secret@10.0.0.3:7003", "redis://:secret@10.0.0.1:7000",
                "redis://:secret@10.0.0.2:7001"), slots.nodes());
    }

    @Test
    void beforeAnyRead_orFromANodeWithoutSlots_noMasterIsKnown() {
        ClusterSlots slots = new ClusterSlots(HOSTS);

        assertFalse(slots.read("redis://:secret@10.0.0.1:7000", reply()));
        assertNull(slots.masterOf("foo"));
    }

    @Test
    void redirection_namesItsNode_withTheAnsweringHostWhenItGivesNone() {
        ClusterSlots slots = new ClusterSlots(HOSTS);

        assertAll(
                () -> assertEquals("redis://:secret@10.0.0.9:7009",
                        slots.redirectedTo("MOVED 3999 10.0.0.9:7009", "redis://:secret@10.0.0.1:7000")),
                () -> assertEquals("redis://:secret@10.0.0.1:7005",
                        slots.redirectedTo("ASK 3999 :7005", "redis://:secret@10.0.0.1:7000")),
                () -> assertNull(slots.redirectedTo("MOVED 3999", "redis://:secret@10.0.0.1:7000")));
    }

    @Test
    void routingKey_isAScriptsFirstKey_orTheFirstArgument() {
        assertAll(
                () -> assertEquals("k1", LoopLocalRedis.routingKey(Command.EVAL, "return 1", "2", "k1", "k2", "arg")),
                () -> assertEquals("k", LoopLocalRedis.routingKey(Command.SET, "k", "v", "NX")),
                () -> assertEquals("po:{m:t}:done", LoopLocalRedis.routingKey(Command.PUBLISH, "po:{m:t}:done", "-")));
    }

    private static Response reply(io.vertx.redis.client.Response... ranges) {
        MultiType reply = MultiType.create(ranges.length, false);
        for (io.vertx.redis.client.Response range : ranges) {
            reply.add(range);
        }
        return Response.newInstance(reply);
    }

    /** One entry of CLUSTER SLOTS: the range and its master, {@code [host, port, id]}. */
    private static io.vertx.redis.client.Response range(int start, int end, String host, int port) {
        MultiType master = MultiType.create(3, false);
        master.add(BulkType.create(Buffer.buffer(host), false));
        master.add(NumberType.create(port));
        master.add(BulkType.create(Buffer.buffer("id" + port), false));
        MultiType range = MultiType.create(3, false);
        range.add(NumberType.create(start));
        range.add(NumberType.create(end));
        range.add(master);
        return range;
    }
}
