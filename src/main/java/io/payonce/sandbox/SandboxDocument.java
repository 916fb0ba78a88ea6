package io.payonce.sandbox;

import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

import org.eclipse.microprofile.config.ConfigProvider;
import org.eclipse.microprofile.openapi.OASFilter;
import org.eclipse.microprofile.openapi.models.Components;
import org.eclipse.microprofile.openapi.models.OpenAPI;
import org.eclipse.microprofile.openapi.models.Operation;

import io.payonce.PayOnceConfig;
import io.quarkus.smallrye.openapi.OpenApiFilter;
import io.smallrye.config.SmallRyeConfig;
import io.smallrye.openapi.model.BaseModel;

/**
 * The API document without the sandbox while it is off: its paths and its tag leave, and so does every component
 * that nothing left refers to (the sandbox's schemas, answers and examples). Run at start, where the switch is
 * read; Quarkus itself drops the paths of disabled endpoints too, in whichever order the two run. With the sandbox
 * on the document is left as built.
 */
@OpenApiFilter(stages = OpenApiFilter.RunStage.RUNTIME_STARTUP)
public class SandboxDocument implements OASFilter {

    private static final String PATHS = "/sandbox";
    private static final String COMPONENTS = "#/components/";

    private final boolean enabled;

    public SandboxDocument() {
        this(ConfigProvider.getConfig().unwrap(SmallRyeConfig.class).getConfigMapping(PayOnceConfig.class).sandbox()
                .enabled());
    }

    SandboxDocument(boolean enabled) {
        this.enabled = enabled;
    }

    @Override
    public void filterOpenAPI(OpenAPI openAPI) {
        if (enabled) {
            return;
        }
        List.copyOf(openAPI.getPaths().getPathItems().keySet()).stream()
                .filter(path -> path.equals(PATHS) || path.startsWith(PATHS + "/"))
                .forEach(openAPI.getPaths()::removePathItem);
        if (!(openAPI instanceof BaseModel<?>)) {
            throw new IllegalStateException("an OpenAPI model whose references cannot be read: " + openAPI.getClass());
        }
        Components components = openAPI.getComponents();
        // a component may be referred to only by another that the sandbox alone used: again until none goes
        boolean removed = components != null;
        while (removed) {
            removed = removeUnreferenced(components, references(openAPI, new HashSet<>()));
        }
        Set<String> tagged = new HashSet<>();
        openAPI.getPaths().getPathItems().values().forEach(item -> item.getOperations().values().stream()
                .map(Operation::getTags).filter(tags -> tags != null).forEach(tagged::addAll));
        if (openAPI.getTags() != null) {
            List.copyOf(openAPI.getTags()).stream().filter(tag -> !tagged.contains(tag.getName()))
                    .forEach(openAPI::removeTag);
        }
    }

    /** Every {@code $ref} in the document, components included. */
    private static Set<String> references(Object node, Set<String> found) {
        switch (node) {
            case BaseModel<?> model -> {
                if (model.getRef() != null) {
                    found.add(model.getRef());
                }
                references(model.getAllProperties().values(), found);
            }
            case Map<?, ?> map -> references(map.values(), found);
            case Collection<?> nodes -> nodes.forEach(each -> references(each, found));
            case null, default -> {
                // a value: text, a number, a flag
            }
        }
        return found;
    }

    /**
     * Removes the components no reference names, and answers whether there were any. Security schemes are named
     * by the security requirements, not referred to, and stay.
     */
    private static boolean removeUnreferenced(Components components, Set<String> references) {
        return removeUnreferenced(components.getSchemas(), "schemas", references, components::removeSchema)
                | removeUnreferenced(components.getResponses(), "responses", references, components::removeResponse)
                | removeUnreferenced(components.getParameters(), "parameters", references, components::removeParameter)
                | removeUnreferenced(components.getExamples(), "examples", references, components::removeExample)
                | removeUnreferenced(components.getRequestBodies(), "requestBodies", references,
                        components::removeRequestBody)
                | removeUnreferenced(components.getHeaders(), "headers", references, components::removeHeader)
                | removeUnreferenced(components.getLinks(), "links", references, components::removeLink)
                | removeUnreferenced(components.getCallbacks(), "callbacks", references, components::removeCallback);
    }

    private static boolean removeUnreferenced(Map<String, ?> members, String kind, Set<String> references,
            Consumer<String> remove) {
        if (members == null) {
            return false;
        }
        List<String> unreferenced = members.keySet().stream()
                .filter(name -> !references.contains(COMPONENTS + kind + "/" + name)).toList();
        unreferenced.forEach(remove);
        return !unreferenced.isEmpty();
    }
}
