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
 * them: {@link RequestLimits}' refusals ahead of every route and {@link ProblemMapper}'s for faults. Each is
 * a response of {@code META-INF/openapi.yaml}; where an operation declares that status already, the code's
 * example joins its own.
 */
@OpenApiFilter(OpenApiFilter.RunStage.BUILD)
public class CommonAnswers implements OASFilter {

    /**
     * Every operation answers {@code status} with {@code code} (the example's name); {@code response} answers it
     * alone.
     */
    private record Answer(String status, String code, String response) {
    }

    private static final List<Answer> ANSWERS = List.of(
            new Answer("400", "idempotency_key_repeated", "IdempotencyKeyRepeated"),
            new Answer("401", "merchant_required", "MerchantRequired"),
            new Answer("406", "not_acceptable", "NotAcceptable"),
            new Answer("408", "body_timeout", "BodyTimeout"),
            new Answer("411", "length_required", "LengthRequired"),
            new Answer("413", "body_too_large", "BodyTooLarge"),
            new Answer("500", "internal_error", "InternalError"),
            new Answer("503", "temporarily_unavailable", "TemporarilyUnavailable"));

    @Override
    public void filterOpenAPI(OpenAPI openAPI) {
        Map<String, APIResponse> shared = openAPI.getComponents().getResponses();
        openAPI.getPaths().getPathItems().values().forEach(item -> item.getOperations().values()
                .forEach(operation -> add(operation, shared)));
    }

    private static void add(Operation operation, Map<String, APIResponse> shared) {
        APIResponses responses = operation.getResponses();
        for (Answer answer : ANSWERS) {
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
