package io.payonce.reconcile;

import java.util.Map;

import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;

/**
 * Only the channel's own words count: a 404 that does not carry the channel's "charge_not_found" code (a
 * proxy's, or a wrong path's, as here) says nothing about the charge, and is no clear answer either.
 */
@QuarkusTest
@TestProfile(ReconcilerUnclearAnswerTest.WrongChannelPath.class)
class ReconcilerUnclearAnswerTest extends ReconcilerChannelDownTest {

    public static class WrongChannelPath implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            // a path this application does not serve: every channel call answers a plain 404
            return Map.of("payonce.channel.url", "http://localhost:${quarkus.http.test-port}/not-the-channel");
        }
    }
}
