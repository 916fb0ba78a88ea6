package io.payonce.api;

import jakarta.inject.Singleton;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.cfg.CoercionAction;
import com.fasterxml.jackson.databind.cfg.CoercionInputShape;
import com.fasterxml.jackson.databind.type.LogicalType;

import io.quarkus.jackson.ObjectMapperCustomizer;

/**
 * The wire format: snake_case names, no silent coercion, and no member given twice. Jackson by default
 * turns 19.99 into 19 and "1999" into 1999, and lets the last of two equal names win, so a gateway or a
 * fraud check reading the first would see another request than the one executed: all refused.
 */
@Singleton
public class StrictJson implements ObjectMapperCustomizer {

    @Override
    public void customize(ObjectMapper mapper) {
        mapper.setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE);
        mapper.disable(DeserializationFeature.ACCEPT_FLOAT_AS_INT);
        mapper.enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES);
        mapper.enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
        mapper.enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);
        mapper.disable(MapperFeature.ALLOW_COERCION_OF_SCALARS);
        for (LogicalType type : new LogicalType[] { LogicalType.Integer, LogicalType.Float, LogicalType.Boolean,
                LogicalType.Textual }) {
            mapper.coercionConfigFor(type)
                    .setCoercion(CoercionInputShape.String, type == LogicalType.Textual ? CoercionAction.TryConvert
                            : CoercionAction.Fail)
                    .setCoercion(CoercionInputShape.Integer, type == LogicalType.Integer ? CoercionAction.TryConvert
                            : CoercionAction.Fail)
                    .setCoercion(CoercionInputShape.Float, CoercionAction.Fail)
                    .setCoercion(CoercionInputShape.Boolean, type == LogicalType.Boolean ? CoercionAction.TryConvert
                            : CoercionAction.Fail);
        }
    }
}
