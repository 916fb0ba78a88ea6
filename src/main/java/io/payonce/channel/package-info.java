/**
 * The payment-channel client: charge, query and close by the merchant's request number, and the
 * outcomes it can tell apart.
 */
package io.payonce.channel;
