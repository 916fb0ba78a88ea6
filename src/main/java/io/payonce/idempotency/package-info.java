/**
 * Layer 1: idempotency tokens (issued and client keys), request fingerprints, the token's row and its
 * one reading, and duplicates waiting for a first answer.
 */
package io.payonce.idempotency;
