/**
 * What the tests share and no test is about: fixtures that start a test from any state, the request and
 * answer every test speaks in, direct SQL, waiting for a condition, and the processes and proxies the
 * integration tests run the service between.
 */
package io.payonce.support;
