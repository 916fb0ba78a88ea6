package io.payonce.sandbox;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/**
 * What a call to the sandbox asks for: a charge or a refund. Each is its own namespace of numbers, kept in the same
 * ledger and run by the same code, with its own fault behaviour; this names what differs on the wire.
 */
public enum SandboxOperation {
    CHARGE("sbx_", "txn_id", "request_no"),
    REFUND("sbr_", "refund_id", "refund_no");

    /** Starts the channel's id of one. */
    final String idPrefix;
    /** The member naming the channel's id of one. */
    final String idMember;
    /** The member naming the merchant's number of one. */
    final String numberMember;

    SandboxOperation(String idPrefix, String idMember, String numberMember) {
        this.idPrefix = idPrefix;
        this.idMember = idMember;
        this.numberMember = numberMember;
    }

    @JsonValue
    public String wireName() {
        return name().toLowerCase();
    }

    /** A problem code about one, from its situation in words: {@code charge_not_found}, {@code refund_succeeded}. */
    String code(String situation) {
        return wireName() + "_" + situation.replace(' ', '_');
    }

    /** The title of that problem: {@code Charge not found}. */
    String title(String situation) {
        return Character.toUpperCase(wireName().charAt(0)) + wireName().substring(1) + " " + situation;
    }

    /** As the {@code kind} column stores it. */
    String column() {
        return name();
    }

    @JsonCreator
    public static SandboxOperation fromWire(String value) {
        for (SandboxOperation operation : values()) {
            if (operation.wireName().equals(value)) {
                return operation;
            }
        }
        throw new IllegalArgumentException("unknown sandbox operation " + value);
    }
}
