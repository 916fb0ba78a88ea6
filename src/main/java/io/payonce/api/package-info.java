/**
 * HTTP only: resources, request and response bodies, request limits, the cached-replay route and the
 * one mapping of outcomes and faults to status codes and problem+json.
 */
package io.payonce.api;
