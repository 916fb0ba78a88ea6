package io.payonce.sandbox;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/** What the sandbox does with a charge. */
public enum SandboxMode {
    /** Charges and answers. */
    OK,
    /** Records a declined charge and answers DECLINED. */
    DECLINE,
    /** Refuses before anything is recorded (503 not_accepted): the caller may retry safely. */
    FAIL_BEFORE_ACCEPT,
    /** Charges, then answers later than the client's timeout: the charge happened, the answer is lost. */
    TIMEOUT_AFTER_ACCEPT;

    @JsonValue
    public String wireName() {
        return name().toLowerCase();
    }

    @JsonCreator
    public static SandboxMode fromWire(String value) {
        for (SandboxMode mode : values()) {
            if (mode.wireName().equals(value)) {
                return mode;
            }
        }
        throw new IllegalArgumentException("unknown sandbox mode " + value);
    }
}
