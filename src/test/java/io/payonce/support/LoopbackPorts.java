package io.payonce.support;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.HashSet;
import java.util.Set;

/**
 * Free loopback ports for the servers a test starts, none handed out twice in this JVM. A port found free
 * is free only until the socket that found it closes: the kernel may hand it out again before the server
 * it was found for binds it, so a cluster whose ports are found one after the other could be given one
 * port for two of its listeners.
 */
public final class LoopbackPorts {

    /** Far more than the ports the tests of one JVM take: the ephemeral range holds thousands. */
    private static final int TRIES = 1_000;
    private static final Set<Integer> handedOut = new HashSet<>();

    private LoopbackPorts() {
    }

    /** A loopback port free now and never answered before by this method in this JVM. */
    public static synchronized int take() throws IOException {
        for (int i = 0; i < TRIES; i++) {
            try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
                if (handedOut.add(socket.getLocalPort())) {
                    return socket.getLocalPort();
                }
            }
        }
        throw new IOException("no free loopback port that was not handed out before, in " + TRIES + " tries");
    }
}
