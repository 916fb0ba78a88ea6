package io.payonce.redis;

/**
 * The Redis names of one token. All share the hash tag {@code {merchant:token}}, so a Redis Cluster
 * keeps a token's keys on one shard. (A client key containing '}' ends the tag early, but at the same
 * place in every name, so they still share a shard.)
 */
record RedisKeys(String ownership, String result, String channel) {

    /** Every done channel matches this, so one subscription per instance hears them all. */
    static final String DONE_PATTERN = "po:*:done";

    static RedisKeys of(String merchantId, String token) {
        String tag = "po:{" + merchantId + ":" + token + "}";
        return new RedisKeys(tag + ":own", tag + ":res", tag + ":done");
    }
}
