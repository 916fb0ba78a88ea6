package io.payonce.redis;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import io.vertx.mutiny.redis.client.Response;

/**
 * Which master of a Redis Cluster serves each hash slot, as {@code CLUSTER SLOTS} last told, so that a
 * command goes straight to the one node that holds its key. A dead master makes only its own slots fail
 * until a replica takes them over; the table is read again then (and on every health probe), so the
 * promoted replica is found without waiting on a schedule.
 */
final class ClusterSlots {

    static final int SLOTS = 16_384;
    /** CRC16-XMODEM (polynomial 0x1021, initial value 0) of each byte value, the checksum Redis Cluster hashes keys with. */
    private static final int[] CRC16 = crc16Table();
    /** Failed commands ask for a new read at most this often: one node's failure fails many commands at once. */
    private static final long MIN_GAP_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

    /** The master of each slot (null where none serves it) and the masters, in the order CLUSTER SLOTS gave them. */
    private record Table(String[] masterBySlot, List<String> masters) {
    }

    private final List<String> seeds;
    private final String scheme;
    private final String userInfo;
    private final AtomicBoolean reading = new AtomicBoolean();
    private volatile Table table;
    private volatile long lastReadNanos = System.nanoTime() - MIN_GAP_NANOS;

    /** {@code hosts}: the configured node URLs, {@code redis://[user:password@]host:port}, comma-separated. */
    ClusterSlots(String hosts) {
        Set<String> nodes = new LinkedHashSet<>();
        for (String host : hosts.split(",")) {
            if (!host.isBlank()) {
                nodes.add(host.trim());
            }
        }
        this.seeds = List.copyOf(nodes);
        URI first = URI.create(seeds.get(0));
        this.scheme = first.getScheme();
        this.userInfo = first.getRawUserInfo();
    }

    /** The endpoint of the master serving the key's slot; null before the first read or where no master serves it. */
    String masterOf(String key) {
        Table current = table;
        return current == null ? null : current.masterBySlot()[slotOf(key)];
    }

    /**
     * The hash slot of a key, as Redis Cluster defines it: the CRC16 of its hash tag modulo 16384. The tag is
     * what lies between the first {@code '{'} and the first {@code '}'} after it, when that is not empty;
     * otherwise the whole key is hashed. The key's bytes are those sent, UTF-8; no byte of a multi-byte UTF-8
     * character is a brace, so the braces found are the key's own.
     */
    static int slotOf(String key) {
        byte[] bytes = key.getBytes(StandardCharsets.UTF_8);
        int from = 0;
        int to = bytes.length;
        int open = indexOf(bytes, (byte) '{', 0);
        if (open >= 0) {
            int close = indexOf(bytes, (byte) '}', open + 1);
            if (close > open + 1) {
                from = open + 1;
                to = close;
            }
        }
        int crc = 0;
        for (int i = from; i < to; i++) {
            crc = (crc << 8 ^ CRC16[(crc >>> 8 ^ bytes[i]) & 0xFF]) & 0xFFFF;
        }
        return crc & (SLOTS - 1);
    }

    private static int indexOf(byte[] bytes, byte wanted, int from) {
        for (int i = from; i < bytes.length; i++) {
            if (bytes[i] == wanted) {
                return i;
            }
        }
        return -1;
    }

    private static int[] crc16Table() {
        int[] table = new int[256];
        for (int value = 0; value < 256; value++) {
            int crc = value << 8;
            for (int bit = 0; bit < 8; bit++) {
                crc = (crc & 0x8000) != 0 ? crc << 1 ^ 0x1021 : crc << 1;
            }
            table[value] = crc & 0xFFFF;
        }
        return table;
    }

    /** The nodes to ask for the table or to subscribe on: the known masters first, then the configured nodes. */
    List<String> nodes() {
        Set<String> nodes = new LinkedHashSet<>();
        Table current = table;
        if (current != null) {
            nodes.addAll(current.masters());
        }
        nodes.addAll(seeds);
        return List.copyOf(nodes);
    }

    /** Claims a read; false while one is under way or the last began less than the minimum gap ago. */
    boolean claimRead() {
        if (System.nanoTime() - lastReadNanos < MIN_GAP_NANOS || !reading.compareAndSet(false, true)) {
            return false;
        }
        lastReadNanos = System.nanoTime();
        return true;
    }

    void readDone() {
        reading.set(false);
    }

    /**
     * Takes a {@code CLUSTER SLOTS} answer from {@code node}: one entry a range of slots, {@code [start, end,
     * master, replicas...]}, each node as {@code [host, port, id, ...]}; an empty host means the node asked.
     * False when it names no master (a node not yet in a formed cluster).
     */
    boolean read(String node, Response reply) {
        String askedHost = URI.create(node).getHost();
        String[] masterBySlot = new String[SLOTS];
        Set<String> masters = new LinkedHashSet<>();
        for (Response range : reply) {
            Response master = range.get(2);
            String host = master.get(0) == null || master.get(0).toString().isEmpty() ? askedHost : master.get(0).toString();
            String endpoint = endpoint(host, master.get(1).toInteger());
            masters.add(endpoint);
            for (int slot = range.get(0).toInteger(); slot <= range.get(1).toInteger(); slot++) {
                masterBySlot[slot] = endpoint;
            }
        }
        if (masters.isEmpty()) {
            return false;
        }
        table = new Table(masterBySlot, new ArrayList<>(masters));
        return true;
    }

    /**
     * The endpoint a redirection ({@code MOVED 3999 127.0.0.1:6381}, {@code ASK ...}) names; a bare
     * {@code :port} means the host of the node that answered.
     */
    String redirectedTo(String error, String answeredBy) {
        String[] parts = error.split(" ");
        if (parts.length < 3) {
            return null;
        }
        String address = parts[2];
        int colon = address.lastIndexOf(':');
        if (colon < 0) {
            return null;
        }
        String host = colon == 0 ? URI.create(answeredBy).getHost() : address.substring(0, colon);
        try {
            return endpoint(host, Integer.parseInt(address.substring(colon + 1)));
        } catch (NumberFormatException notAPort) {
            return null;
        }
    }

    private String endpoint(String host, int port) {
        String bracketed = host.contains(":") && !host.startsWith("[") ? "[" + host + "]" : host;
        return scheme + "://" + (userInfo == null ? "" : userInfo + "@") + bracketed + ":" + port;
    }
}
