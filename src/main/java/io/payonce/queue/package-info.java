/**
 * The queue entrance (contract section 9): pay commands from RabbitMQ, passed through the same idempotency
 * gate as {@code POST /pay}, answered through an outbox in the database, acknowledged once their answer is
 * durable.
 */
package io.payonce.queue;
