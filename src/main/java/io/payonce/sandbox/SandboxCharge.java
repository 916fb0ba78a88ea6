package io.payonce.sandbox;

import io.quarkus.runtime.annotations.RegisterForReflection;
import io.vertx.mutiny.sqlclient.Row;

/** A charge in the sandbox's ledger; {@code status} is SUCCEEDED or DECLINED. */
@RegisterForReflection
public record SandboxCharge(String txnId, String requestNo, String orderNo, long amount, String currency,
        String status) {

    static final String COLUMNS = "txn_id, request_no, order_no, amount, currency, status";

    static SandboxCharge from(Row row) {
        return new SandboxCharge(row.getString("txn_id"), row.getString("request_no"), row.getString("order_no"),
                row.getLong("amount"), row.getString("currency"), row.getString("status"));
    }
}
