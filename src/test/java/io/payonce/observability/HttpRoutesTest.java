package io.payonce.observability;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.annotation.Annotation;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import jakarta.ws.rs.DELETE;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.HEAD;
import jakarta.ws.rs.OPTIONS;
import jakarta.ws.rs.PATCH;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.PUT;
import jakarta.ws.rs.Path;

import org.junit.jupiter.api.Test;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaMethod;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;

/**
 * The routes the HTTP metrics name are the routes the service serves: a resource added, moved or removed
 * without {@link HttpRoutes} following would be measured as UNMATCHED, or not at all.
 */
class HttpRoutesTest {

    private static final List<Class<? extends Annotation>> METHODS = List.of(GET.class, POST.class, PUT.class,
            DELETE.class, PATCH.class, HEAD.class, OPTIONS.class);

    @Test
    void theListedRoutes_areTheResourcesRoutes() {
        Set<String> served = new TreeSet<>();
        for (JavaClass resource : new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("io.payonce")) {
            // interfaces with @Path are REST clients (the channel's), not routes of this service
            if (resource.isInterface() || !resource.isAnnotatedWith(Path.class)) {
                continue;
            }
            String base = resource.getAnnotationOfType(Path.class).value();
            for (JavaMethod method : resource.getMethods()) {
                for (Class<? extends Annotation> verb : METHODS) {
                    if (method.isAnnotatedWith(verb)) {
                        String sub = method.isAnnotatedWith(Path.class) ? method.getAnnotationOfType(Path.class).value() : "";
                        served.add(verb.getSimpleName() + " " + base + sub);
                    }
                }
            }
        }

        Set<String> listed = Stream.concat(HttpRoutes.API.stream(), HttpRoutes.SANDBOX.stream())
                .map(route -> route.method() + " " + route.template()).collect(Collectors.toCollection(TreeSet::new));
        assertEquals(served, listed, "observability/HttpRoutes against the resources' @Path and method annotations");
    }
}
