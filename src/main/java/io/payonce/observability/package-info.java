/**
 * What an operator reads beside the answers: the log context every line of a request carries (request id,
 * merchant, request number), and HTTP metrics whose tags stay bounded whatever clients send.
 */
package io.payonce.observability;
