/** Orders and their state machine, whose legal transitions are written once in OrderStatus. */
package io.payonce.order;
