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
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A loopback TCP proxy in front of one upstream port, to put a network fault between the service and a
 * server it depends on, or to be the one address a failover moves ({@link #pointAt(int)}, as a virtual
 * IP or a database proxy): {@link #cut()} (connections reset, new ones refused), {@link #hang()} (nothing
 * forwarded, as in a partition; what was held is delivered on {@link #restore()}), {@link #delay(long)}
 * (latency added to every forwarded chunk, order kept), {@link #cutAfterNext(String)} (a statement
 * reaches the server, its answer never comes back) and {@link #cutInsteadOfNext(String)} (a statement
 * and whatever came with it are lost on the way).
 */
public final class TcpProxy implements AutoCloseable {

    private enum Mode {
        OPEN, CUT, HUNG
    }

    private volatile int upstreamPort;
    private final ServerSocket server;
    private final Thread acceptor;
    private final Set<Link> links = ConcurrentHashMap.newKeySet();
    private volatile Mode mode = Mode.OPEN;
    private volatile long delayMs;
    private volatile boolean closed;
    private final AtomicReference<Marker> cutAt = new AtomicReference<>();

    public TcpProxy(int upstreamPort) throws IOException {
        this.upstreamPort = upstreamPort;
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
                Link link = new Link(client, upstream);
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
        private volatile boolean open = true;

        Link(Socket client, Socket upstream) {
            this.client = client;
            this.upstream = upstream;
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
                        queue.add(new Chunk(System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(delayMs),
                                Arrays.copyOf(buffer, n)));
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
                        while (open && (mode == Mode.HUNG || System.nanoTime() < chunk.due())) {
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

    private record Chunk(long due, byte[] bytes) {
        static final Chunk END = new Chunk(0, new byte[0]);
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
