/**
 * The native container as deployed by {@code scripts/container.sh}: run by {@code scripts/container.sh test}
 * against the containers, skipped otherwise.
 */
package io.payonce.container;
