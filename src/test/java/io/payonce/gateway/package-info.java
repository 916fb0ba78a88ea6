/**
 * The shipped nginx configuration in front of packaged instances: authentication and retries.
 */
package io.payonce.gateway;
