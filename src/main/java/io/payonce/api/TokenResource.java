package io.payonce.api;

import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.HttpHeaders;
import jakarta.ws.rs.core.MediaType;

import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.media.Content;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.responses.APIResponse;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;
import org.jboss.resteasy.reactive.RestResponse;

import io.payonce.api.ApiModels.TokenView;
import io.payonce.idempotency.TokenService;
import io.smallrye.mutiny.Uni;

@Path("/tokens")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "Tokens")
public class TokenResource {

    private final Merchants merchants;
    private final TokenService tokens;

    TokenResource(Merchants merchants, TokenService tokens) {
        this.merchants = merchants;
        this.tokens = tokens;
    }

    /** Issues a token for one client operation; it needs no body. */
    @POST
    @Operation(operationId = "issueToken", summary = "Issue an idempotency token for one payment attempt",
            description = "Send it as `Idempotency-Key` with `POST /pay`, and again with every retry of that request.")
    @APIResponse(responseCode = "201",
            description = "Issued; valid until `expires_at` (`payonce.token.ttl`, 24 h by default).",
            content = @Content(mediaType = MediaType.APPLICATION_JSON,
                    schema = @Schema(implementation = TokenView.class)))
    public Uni<RestResponse<TokenView>> issue(@Context HttpHeaders headers) {
        String merchantId = merchants.require(headers);
        return tokens.issue(merchantId).map(issued -> RestResponse.status(RestResponse.Status.CREATED,
                new TokenView(issued.token(), issued.expiresAt())));
    }
}
