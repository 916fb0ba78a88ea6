/**
 * The queue entrance (contract section 9): pay and refund commands from RabbitMQ, passed through the same
 * idempotency gate as {@code POST /pay} and {@code POST /refunds}, answered through an outbox in the
 * database, acknowledged once their answer is durable.
 */
package io.payonce.queue;
