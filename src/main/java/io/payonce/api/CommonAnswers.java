package io.payonce.api;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.eclipse.microprofile.openapi.OASFactory;
import org.eclipse.microprofile.openapi.OASFilter;
import org.eclipse.microprofile.openapi.models.OpenAPI;
import org.eclipse.microprofile.openapi.models.Operation;
import org.eclipse.microprofile.openapi.models.media.MediaType;
import org.eclipse.microprofile.openapi.models.responses.APIResponse;
import org.eclipse.microprofile.openapi.models.responses.APIResponses;

import io.quarkus.smallrye.openapi.OpenApiFilter;

/**
 * The answers any request can get, added to every operation of the OpenAPI document so that each lists
 * them: {@link RequestLimits}' refusals ahead of every route, {@link ProblemMapper}'s for faults, and, for
 * the business API that clients reach only through the gateway (src/main/docker/nginx/payonce.conf), the
 * gateway's own answers: its {@code 401} for a missing or unknown API key (the instance's
 * {@code merchant_required} cannot reach a client there, as the gateway sets the merchant header),
 * {@code 502} and {@code 504}. Each is a response of {@code META-INF/openapi.yaml}; where an operation
 * declares that status already, the code's example joins its own.
 */
@OpenApiFilter(OpenApiFilter.RunStage.BUILD)
public class CommonAnswers implements OASFilter {

    /** Where an operation is called: the sandbox at an instance itself, everything else through the gateway. */
    private enum Reached {
        THROUGH_GATEWAY,
        AT_INSTANCE,
        EITHER;

        boolean includes(String path) {
            boolean sandbox = path.startsWith("/sandbox/");
            return this == EITHER || (this == AT_INSTANCE) == sandbox;
        }
    }

    /**
     * The operations {@code reached} so answer {@code status} with {@code code} (the example's name);
     * {@code response} answers it alone.
     */
    private record Answer(Reached reached, String status, String code, String response) {
    }

    private static final List<Answer> ANSWERS = List.of(
            new Answer(Reached.EITHER, "400", "idempotency_key_repeated", "IdempotencyKeyRepeated"),
            new Answer(Reached.THROUGH_GATEWAY, "401", "unauthenticated", "Unauthenticated"),
            new Answer(Reached.AT_INSTANCE, "401", "merchant_required", "MerchantRequired"),
            new Answer(Reached.EITHER, "406", "not_acceptable", "NotAcceptable"),
            new Answer(Reached.EITHER, "408", "body_timeout", "BodyTimeout"),
            new Answer(Reached.EITHER, "411", "length_required", "LengthRequired"),
            new Answer(Reached.EITHER, "413", "body_too_large", "BodyTooLarge"),
            new Answer(Reached.EITHER, "500", "internal_error", "InternalError"),
            new Answer(Reached.THROUGH_GATEWAY, "502", "bad_gateway", "BadGateway"),
            new Answer(Reached.EITHER, "503", "temporarily_unavailable", "TemporarilyUnavailable"),
            new Answer(Reached.THROUGH_GATEWAY, "504", "gateway_timeout", "GatewayTimeout"));

    @Override
    public void filterOpenAPI(OpenAPI openAPI) {
        Map<String, APIResponse> shared = openAPI.getComponents().getResponses();
        openAPI.getPaths().getPathItems().forEach((path, item) -> item.getOperations().values()
                .forEach(operation -> add(path, operation, shared)));
    }

    private static void add(String path, Operation operation, Map<String, APIResponse> shared) {
        APIResponses responses = operation.getResponses();
        for (Answer answer : ANSWERS) {
            if (!answer.reached().includes(path)) {
                continue;
            }
            APIResponse declared = responses.getAPIResponse(answer.status());
            if (declared == null) {
                responses.addAPIResponse(answer.status(), OASFactory.createAPIResponse().ref(answer.response()));
                continue;
            }
            // a response shared by several operations takes the example once, for all of them
            APIResponse answered = declared.getRef() == null ? declared
                    : shared.get(declared.getRef().substring(declared.getRef().lastIndexOf('/') + 1));
            MediaType problem = answered.getContent().getMediaType(Problems.MEDIA_TYPE);
            if (problem.getExamples() == null || !problem.getExamples().containsKey(answer.code())) {
                problem.addExample(answer.code(), OASFactory.createExample().ref(answer.code()));
                String also = shared.get(answer.response()).getDescription().strip();
                answered.setDescription(answered.getDescription() + " " + also);
            }
        }
        // in order of status, as a reader looks them up
        Map<String, APIResponse> byStatus = new TreeMap<>(responses.getAPIResponses());
        responses.setAPIResponses(byStatus);
    }
}
