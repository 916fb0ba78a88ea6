/**
 * The refund use case: a second money-moving operation on the same idempotency gate and the same executor
 * as payments, never giving back more than an order was paid.
 */
package io.payonce.refund;
