package io.payonce.support;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

/**
 * A loopback TCP proxy in front of one upstream port, to put a network fault between the service and a
 * server it depends on, or to be the one address a failover moves ({@link #pointAt(int)}, as a virtual
 * IP or a database proxy): {@link #cut()} (connections reset, new ones refused), {@link #hang()} (nothing
 * forwarded, as in a partition; what was held is delivered on {@link #restore()}), {@link #delay(long)}
 * (latency added to every forwarded chunk, order kept), {@link #cutAfterNext(String)} (a statement
 * reaches the server, its answer never comes back) and {@link #cutInsteadOfNext(String)} (a statement
 * and whatever came with it are lost on the way). A proxy that understands the protocol it carries
 * ({@link MysqlProxy}) watches each connection through an {@link Inspector} and holds chosen bytes back.
 */
public final class TcpProxy implements AutoCloseable {

    private enum Mode {
        OPEN, CUT, HUNG
    }

    private volatile int upstreamPort;
    private final Supplier<? extends Inspector> inspectors;
    private final ServerSocket server;
    private final Thread acceptor;
    private final Set<Link> links = ConcurrentHashMap.newKeySet();
    private volatile Mode mode = Mode.OPEN;
    private volatile long delayMs;
    private volatile boolean closed;
    private final AtomicReference<Marker> cutAt = new AtomicReference<>();

    public TcpProxy(int upstreamPort) throws IOException {
        this(upstreamPort, () -> Inspector.PASS);
    }

    /** A proxy that shows each connection's bytes to an inspector of its own, made by {@code inspectors}. */
    TcpProxy(int upstreamPort, Supplier<? extends Inspector> inspectors) throws IOException {
        this.upstreamPort = upstreamPort;
        this.inspectors = inspectors;
        this.server = new ServerSocket(0, 128, InetAddress.getLoopbackAddress());
        this.acceptor = daemon("proxy-accept-" + server.getLocalPort(), this::acceptLoop);
        acceptor.start();
    }

    public int port() {
        return server.getLocalPort();
    }

    /**
     * New connections go to {@code port} from now on, and the open ones are reset, as when a virtual IP
     * moves to another server or its server dies.
     */
    public void pointAt(int port) {
        upstreamPort = port;
        links.forEach(Link::close);
    }

    /** Resets every open connection; new connections are accepted and closed at once. */
    public void cut() {
        mode = Mode.CUT;
        links.forEach(Link::close);
    }

    /** Forwards nothing, in either direction, on old and new connections, until {@link #restore()}. */
    public void hang() {
        mode = Mode.HUNG;
    }

    /** Back to forwarding; a hang's held bytes are delivered now, in order. */
    public void restore() {
        mode = Mode.OPEN;
    }

    /**
     * Forwards the next chunk sent towards the server that contains {@code marker} (say the text of a
     * {@code COMMIT}), then cuts at once: the server executes it, the client never hears the answer.
     */
    public void cutAfterNext(String marker) {
        cutAt.set(new Marker(marker.getBytes(StandardCharsets.US_ASCII), true));
    }

    /**
     * Drops the next chunk sent towards the server that contains {@code marker}, then cuts: the
     * statement, and any sent in the same chunk, never reach the server; nothing sent after it does.
     */
    public void cutInsteadOfNext(String marker) {
        cutAt.set(new Marker(marker.getBytes(StandardCharsets.US_ASCII), false));
    }

    /** Every chunk read from either side is written to the other {@code ms} later. */
    public void delay(long ms) {
        delayMs = ms;
    }

    @Override
    public void close() {
        closed = true;
        try {
            server.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        links.forEach(Link::close);
    }

    private void acceptLoop() {
        while (!closed) {
            Socket client;
            try {
                client = server.accept();
            } catch (IOException e) {
                return; // closed
            }
            if (mode == Mode.CUT) {
                quietly(client);
                continue;
            }
            try {
                Socket upstream = new Socket();
                upstream.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), upstreamPort), 2_000);
                Link link = new Link(client, upstream, inspectors.get());
                links.add(link);
                link.start();
            } catch (IOException e) {
                quietly(client);
            }
        }
    }

    /** One proxied connection: two directions, each a reader and an in-order delayed writer. */
    private final class Link {
        private final Socket client;
        private final Socket upstream;
        private final Inspector inspector;
        private volatile boolean open = true;

        Link(Socket client, Socket upstream, Inspector inspector) {
            this.client = client;
            this.upstream = upstream;
            this.inspector = inspector;
        }

        void start() throws IOException {
            direction("up", client.getInputStream(), upstream.getOutputStream(), true);
            direction("down", upstream.getInputStream(), client.getOutputStream(), false);
        }

        private void direction(String name, InputStream in, OutputStream out, boolean towardsServer) {
            LinkedBlockingQueue<Chunk> queue = new LinkedBlockingQueue<>();
            daemon("proxy-" + name + "-read", () -> {
                byte[] buffer = new byte[16 * 1024];
                try {
                    int n;
                    while (open && (n = in.read(buffer)) >= 0) {
                        long due = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(delayMs);
                        for (Piece piece : inspector.read(towardsServer, Arrays.copyOf(buffer, n))) {
                            queue.add(new Chunk(due + piece.holdNanos(), piece.bytes(), piece.written()));
                        }
                    }
                } catch (IOException e) {
                    // the other side or cut() closed it
                }
                queue.add(Chunk.END);
            }).start();
            daemon("proxy-" + name + "-write", () -> {
                try {
                    while (open) {
                        Chunk chunk = queue.poll(100, TimeUnit.MILLISECONDS);
                        if (chunk == null) {
                            continue;
                        }
                        if (chunk == Chunk.END) {
                            break;
                        }
                        // wait for its time and for the end of a hang; both re-checked, so cut() ends it
                        while (open && (mode == Mode.HUNG || System.nanoTime() - chunk.due() < 0)) {
                            Thread.sleep(Math.max(1, Math.min(10,
                                    TimeUnit.NANOSECONDS.toMillis(chunk.due() - System.nanoTime()))));
                        }
                        // a cut under way sets CUT before it closes the links one by one: nothing more
                        // may be written meanwhile, or an answer the cut was meant to lose gets through
                        if (open && mode != Mode.CUT) {
                            Marker marker = cutAt.get();
                            boolean last = towardsServer && marker != null && contains(chunk.bytes(), marker.bytes())
                                    && cutAt.compareAndSet(marker, null);
                            if (last) {
                                // from here on nothing more is forwarded, not even an answer the server sends at once
                                mode = Mode.HUNG;
                            }
                            if (!last || marker.forward()) {
                                out.write(chunk.bytes());
                                out.flush();
                                chunk.written().run();
                            }
                            if (last) {
                                cut();
                            }
                        }
                    }
                } catch (IOException | InterruptedException e) {
                    // closed
                }
                close();
            }).start();
        }

        void close() {
            open = false;
            links.remove(this);
            inspector.closed();
            try {
                // RST rather than FIN: a cut is a failure, not a polite goodbye
                client.setSoLinger(true, 0);
            } catch (SocketException ignored) {
                // already closed
            }
            quietly(client);
            quietly(upstream);
        }
    }

    /** Where the next cut happens: at the chunk containing {@code bytes}, after or instead of forwarding it. */
    private record Marker(byte[] bytes, boolean forward) {
    }

    /**
     * Watches one connection's bytes as they are read, before any delay or hang, and may hold some of them
     * back. Each direction is read by one thread of its own, so calls for one direction never overlap;
     * calls for the two directions do.
     */
    interface Inspector {

        /** Forwards every byte as it comes. */
        Inspector PASS = (towardsServer, bytes) -> List.of(new Piece(bytes, 0, Piece.NOTHING));

        /**
         * {@code bytes}, just read from the client ({@code towardsServer}) or from the server, as the pieces to
         * write on, in order, together or split where a piece is to be held.
         */
        List<Piece> read(boolean towardsServer, byte[] bytes);

        /** The connection is closed, by either side or by the proxy; called once or more. */
        default void closed() {
        }
    }

    /**
     * Bytes to write on {@code holdNanos} after they were read (on top of any {@link #delay(long)}); everything
     * read after them on their direction waits behind them. {@code written} runs once they are written.
     */
    record Piece(byte[] bytes, long holdNanos, Runnable written) {
        static final Runnable NOTHING = () -> {
        };
    }

    private record Chunk(long due, byte[] bytes, Runnable written) {
        static final Chunk END = new Chunk(0, new byte[0], Piece.NOTHING);
    }

    private static boolean contains(byte[] bytes, byte[] marker) {
        outer:
        for (int i = 0; i + marker.length <= bytes.length; i++) {
            for (int j = 0; j < marker.length; j++) {
                if (bytes[i + j] != marker[j]) {
                    continue outer;
                }
            }
            return true;
        }
        return false;
    }

    /** A daemon thread, not started, so a test that forgets a relay's threads still ends. */
    public static Thread daemon(String name, Runnable body) {
        Thread thread = new Thread(body, name);
        thread.setDaemon(true);
        return thread;
    }

    /** Closes the socket, ignoring that it may be closed already. */
    public static void quietly(Socket socket) {
        try {
            socket.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }
}
