/**
 * The pay use case: the three layers in order, a payment's phases around the channel call, payment
 * records and the one settlement on the channel's word.
 */
package io.payonce.payment;
