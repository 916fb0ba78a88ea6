/**
 * The Redis fast path (ownership keys, cached answers, pub/sub wake-ups): an optimisation only, since
 * the service is correct without it and MySQL decides every outcome.
 */
package io.payonce.redis;
