package io.payonce.sandbox;

import java.util.LinkedHashMap;
import java.util.Map;

import com.fasterxml.jackson.annotation.JsonValue;

import io.quarkus.runtime.annotations.RegisterForReflection;
import io.vertx.mutiny.sqlclient.Row;

/**
 * A charge or a refund in the sandbox's ledger as the channel reports it: {@code status} is SUCCEEDED or DECLINED
 * once it has taken effect, PENDING before, or CLOSED. A CLOSED number that never arrived knows only its number.
 * On the wire a charge is {@code txn_id, request_no, ...} and a refund {@code refund_id, refund_no, ...}.
 */
@RegisterForReflection
public record SandboxEntry(SandboxOperation operation, String id, String number, String orderNo, Long amount,
        String currency, String status) {

    /** The status as of the database's clock: an entry is PENDING until it takes effect. */
    static final String COLUMNS = "kind, txn_id, request_no, order_no, amount, currency, "
            + "CASE WHEN status <> 'CLOSED' AND effective_at > UTC_TIMESTAMP(3) THEN 'PENDING' ELSE status END AS status";

    static SandboxEntry from(Row row) {
        return new SandboxEntry(SandboxOperation.valueOf(row.getString("kind")), row.getString("txn_id"),
                row.getString("request_no"), row.getString("order_no"), row.getLong("amount"),
                row.getString("currency"), row.getString("status"));
    }

    @JsonValue
    Map<String, Object> wire() {
        Map<String, Object> members = new LinkedHashMap<>();
        members.put(operation.idMember, id);
        members.put(operation.numberMember, number);
        members.put("order_no", orderNo);
        members.put("amount", amount);
        members.put("currency", currency);
        members.put("status", status);
        return members;
    }

    boolean isPending() {
        return "PENDING".equals(status);
    }

    boolean isSucceeded() {
        return "SUCCEEDED".equals(status);
    }
}
