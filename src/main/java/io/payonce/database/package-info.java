/**
 * MySQL access that always ends in time: bounded calls and transactions, the error codes the layers
 * rely on, and the UTC clock of the rows.
 */
package io.payonce.database;
