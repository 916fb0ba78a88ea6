/**
 * The built-in test channel: its endpoints, its ledger in the database and its per-merchant fault
 * behaviour.
 */
package io.payonce.sandbox;
