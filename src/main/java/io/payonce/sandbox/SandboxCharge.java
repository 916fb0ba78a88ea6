package io.payonce.sandbox;

import io.quarkus.runtime.annotations.RegisterForReflection;
import io.vertx.mutiny.sqlclient.Row;

/**
 * A charge in the sandbox's ledger as the channel reports it: {@code status} is SUCCEEDED or DECLINED
 * once it has taken effect, PENDING before, or CLOSED. A CLOSED number that never arrived knows only its
 * request number.
 */
@RegisterForReflection
public record SandboxCharge(String txnId, String requestNo, String orderNo, Long amount, String currency,
        String status) {

    /** The status as of the database's clock: a charge is PENDING until it takes effect. */
    static final String COLUMNS = "txn_id, request_no, order_no, amount, currency, "
            + "CASE WHEN status <> 'CLOSED' AND effective_at > UTC_TIMESTAMP(3) THEN 'PENDING' ELSE status END AS status";

    static SandboxCharge from(Row row) {
        return new SandboxCharge(row.getString("txn_id"), row.getString("request_no"), row.getString("order_no"),
                row.getLong("amount"), row.getString("currency"), row.getString("status"));
    }

    boolean isPending() {
        return "PENDING".equals(status);
    }
}
