package io.payonce.channel;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

/**
 * A payment provider on loopback for the channel tests' profiles: a JDK HTTP server serving {@code path} with
 * an answer chosen from the request number of each call (a charge's body, or the path of a query or a close).
 */
final class LoopbackProvider {

    /** The provider's answer, a JSON object answered 200, to a call under request number {@code requestNo}. */
    interface Answers {
        String answer(HttpExchange exchange, String requestNo, String body);
    }

    private static final Pattern REQUEST_NO = Pattern.compile("\"request_no\"\\s*:\\s*\"([^\"]+)\"");

    private LoopbackProvider() {
    }

    /** Starts the server on a free loopback port and returns the port. */
    static int serve(String path, Answers answers) {
        try {
            HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 16);
            server.createContext(path, exchange -> answer(exchange, path, answers));
            server.start();
            return server.getAddress().getPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void answer(HttpExchange exchange, String path, Answers answers) throws IOException {
        String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
        Matcher named = REQUEST_NO.matcher(body);
        String requestNo = named.find() ? named.group(1)
                : exchange.getRequestURI().getRawPath().substring(path.length() + 1).replaceFirst("/close$", "");
        byte[] bytes = answers.answer(exchange, requestNo, body).getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().add("Content-Type", "application/json");
        exchange.sendResponseHeaders(200, bytes.length);
        exchange.getResponseBody().write(bytes);
        exchange.close();
    }
}
