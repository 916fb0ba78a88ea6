/**
 * Refunds under real processes: a worker killed mid-refund, instances and Galera nodes racing refunds of one
 * order; each refund number is refunded at most once at the channel, only the amount refuses a refund, and
 * the channel's ledger agrees with every order's refunded amount.
 */
package io.payonce.refund;
