/** State machines: each state enum's legal transitions, and the checked transition a statement binds. */
package io.payonce.state;
