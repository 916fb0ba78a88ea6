/**
 * Scheduled jobs: settle PROCESSING payments on the channel's word, release dead leases, purge expired
 * tokens.
 */
package io.payonce.reconcile;
