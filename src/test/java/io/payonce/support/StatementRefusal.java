package io.payonce.support;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;

import io.payonce.support.TcpProxy.Piece;

/**
 * Statements a {@link MysqlProxy} refuses ({@link MysqlProxy#refuse}): a statement whose text has a match for
 * the pattern is not passed on; the server is sent in its place a query that fails at once with the refusal's
 * error ({@code SIGNAL}), so the client gets a MySQL error packet where the statement's answer would have
 * been, in its place among the connection's answers, and the conversation goes on as usual. The statement
 * never runs: it changes nothing, takes no lock and leaves its transaction as it was.
 *
 * <p>An execution of a prepared statement may carry its parameters' types, which the server keeps for the
 * executions after it (a client sends them once, with its first execution on the connection). The server never
 * sees a refused execution, so the proxy adds the types it carried to the next execution of the same statement
 * that is let through ({@link #retyped}); without them the server would refuse that one (error 1210).
 */
final class StatementRefusal {

    private static final int COM_QUERY = 0x03;
    /** Where an execution's null bitmap begins: after the command, the statement id, the flags, the iteration count. */
    private static final int NULL_BITMAP = 10;

    private final Pattern pattern;
    private final byte[] payload;
    private final AtomicInteger refused = new AtomicInteger();

    /** Refuses statements matching {@code regex} with the error {@code code} (SQLSTATE HY000). */
    StatementRefusal(String regex, int code) {
        this.pattern = Pattern.compile(regex);
        String signal = "SIGNAL SQLSTATE 'HY000' SET MYSQL_ERRNO = " + code
                + ", MESSAGE_TEXT = 'refused by the test proxy in place of a statement it was told to refuse'";
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(COM_QUERY);
        out.writeBytes(signal.getBytes(StandardCharsets.US_ASCII));
        this.payload = out.toByteArray();
    }

    /** One packet of a read, bytes {@code from} to {@code to}, written as {@code packet}. */
    record Substitution(int from, int to, byte[] packet) {
    }

    /**
     * The substitution for the statement whose packet ({@code payload}, sequence id 0) begins at {@code start}
     * of {@code read}, if its text matches; null when it does not, or when the packet is not whole in this read
     * (its first bytes may have been passed on already: it is let through, not counted as refused).
     */
    Substitution of(String sql, byte[] read, int start, byte[] payload) {
        int end = start + 4 + payload.length;
        if (!pattern.matcher(sql).find() || end > read.length || length(read, start) != payload.length
                || read[start + 3] != 0) {
            return null;
        }
        refused.incrementAndGet();
        return new Substitution(start, end, packet(this.payload));
    }

    /**
     * The parameter types an execution's {@code payload} of a statement of {@code parameters} parameters carries
     * (its new-params-bound flag set), or null when it carries none.
     */
    static byte[] typesCarried(byte[] payload, int parameters) {
        int flag = NULL_BITMAP + (parameters + 7) / 8;
        if (parameters == 0 || payload.length <= flag || payload[flag] != 1) {
            return null;
        }
        return Arrays.copyOfRange(payload, flag + 1, flag + 1 + 2 * parameters);
    }

    /**
     * The substitution that gives an execution without types ({@code payload}, its packet at {@code start} of
     * {@code read}) the {@code types} a refused one carried; null when it carries types of its own, or its packet
     * is not whole in this read.
     */
    static Substitution retyped(byte[] read, int start, byte[] payload, int parameters, byte[] types) {
        int flag = NULL_BITMAP + (parameters + 7) / 8;
        int end = start + 4 + payload.length;
        if (payload.length <= flag || payload[flag] != 0 || end > read.length || length(read, start) != payload.length) {
            return null;
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream(payload.length + types.length);
        out.write(payload, 0, flag);
        out.write(1);
        out.writeBytes(types);
        out.write(payload, flag + 1, payload.length - flag - 1);
        return new Substitution(start, end, packet(out.toByteArray()));
    }

    /** A command packet of {@code payload}: its 3-byte little-endian length, sequence id 0, the payload. */
    private static byte[] packet(byte[] payload) {
        byte[] packet = new byte[4 + payload.length];
        packet[0] = (byte) payload.length;
        packet[1] = (byte) (payload.length >>> 8);
        packet[2] = (byte) (payload.length >>> 16);
        System.arraycopy(payload, 0, packet, 4, payload.length);
        return packet;
    }

    /** The payload length in the packet header at {@code at}. */
    private static int length(byte[] bytes, int at) {
        return (bytes[at] & 0xff) | (bytes[at + 1] & 0xff) << 8 | (bytes[at + 2] & 0xff) << 16;
    }

    /** Statements refused so far. */
    int refused() {
        return refused.get();
    }

    /**
     * {@code pieces}, one read cut where a hold begins (at a packet's start, so no packet straddles two), with
     * every substitution's bytes written in place of the packet they replace.
     */
    static List<Piece> substitute(List<Piece> pieces, List<Substitution> substitutions) {
        if (substitutions.isEmpty()) {
            return pieces;
        }
        List<Piece> out = new ArrayList<>(pieces.size());
        int offset = 0;
        for (Piece piece : pieces) {
            byte[] bytes = piece.bytes();
            ByteArrayOutputStream written = new ByteArrayOutputStream(bytes.length);
            int at = 0;
            for (Substitution s : substitutions) {
                if (s.from() >= offset && s.to() <= offset + bytes.length) {
                    written.write(bytes, at, s.from() - offset - at);
                    written.writeBytes(s.packet());
                    at = s.to() - offset;
                }
            }
            written.write(bytes, at, bytes.length - at);
            out.add(new Piece(written.toByteArray(), piece.holdNanos(), piece.written()));
            offset += bytes.length;
        }
        return out;
    }
}
