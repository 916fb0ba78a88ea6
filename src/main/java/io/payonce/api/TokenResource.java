package io.payonce.api;

import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.HttpHeaders;
import jakarta.ws.rs.core.MediaType;

import org.jboss.resteasy.reactive.RestResponse;

import io.payonce.api.ApiModels.TokenView;
import io.payonce.idempotency.TokenService;
import io.smallrye.mutiny.Uni;

@Path("/tokens")
@Produces(MediaType.APPLICATION_JSON)
public class TokenResource {

    private final Merchants merchants;
    private final TokenService tokens;

    TokenResource(Merchants merchants, TokenService tokens) {
        this.merchants = merchants;
        this.tokens = tokens;
    }

    /** Issues a token for one client operation; it needs no body. */
    @POST
    public Uni<RestResponse<TokenView>> issue(@Context HttpHeaders headers) {
        String merchantId = merchants.require(headers);
        return tokens.issue(merchantId).map(issued -> RestResponse.status(RestResponse.Status.CREATED,
                new TokenView(issued.token(), issued.expiresAt())));
    }
}
