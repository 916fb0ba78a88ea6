package io.payonce.payment;

import io.payonce.idempotency.StoredResponse;

/**
 * Turns an outcome into the exact answer stored for replay. Implemented by the HTTP layer, which alone
 * decides status codes and bodies; the payment layer stores what it renders, in the same transaction
 * as the state change it answers for.
 */
public interface OutcomeRenderer {
    StoredResponse render(PayOutcome outcome);
}
