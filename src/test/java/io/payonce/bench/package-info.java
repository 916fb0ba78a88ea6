/**
 * The benchmark driver that scripts/bench.sh runs against the packaged application: scenarios,
 * closed-loop load, CPU and latency measurement and the committed report.
 */
package io.payonce.bench;
