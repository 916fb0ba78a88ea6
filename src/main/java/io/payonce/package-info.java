/**
 * PayOnce: payment requests made exactly-once; its typed configuration sits here, its features in the
 * packages below.
 */
package io.payonce;
