/**
 * MySQL access that always ends in time: bounded calls and transactions, the error codes the layers
 * rely on, the UTC clock of the rows, and the service's schema history as existing databases record it.
 */
package io.payonce.database;
