/**
 * Instances on clustered engines that tests start themselves (a Galera cluster, a Redis Cluster, a
 * primary with a semi-synchronous replica), with a node or a master killed under load: one charge and
 * one answer per request still.
 */
package io.payonce.cluster;
