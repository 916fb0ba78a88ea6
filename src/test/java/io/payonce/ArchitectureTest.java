package io.payonce;

import static com.tngtech.archunit.base.DescribedPredicate.not;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.assignableTo;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAnyPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.Architectures.layeredArchitecture;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.junit.AnalyzeClasses;
import com.tngtech.archunit.junit.ArchTest;

import io.payonce.channel.ChargeResult;

/**
 * The package rules of the main code, checked on every build.
 *
 * <p>Layers, from the top (a layer may use the ones below it, never one above):
 * <ol>
 * <li>entrances: {@code api}, {@code queue}, and {@code sandbox}, the built-in test channel, which the
 * application serves over HTTP beside its API (with the API's merchant header and body rules);
 * <li>operations: {@code payment}, {@code refund}; beside them {@code reconcile}, which may use the operations
 * (it settles through payment's settlement) while they never use it;
 * <li>the gate and the orders: {@code idempotency}, {@code order};
 * <li>foundations: {@code channel}, {@code database}, {@code redis}, {@code state}, {@code observability}.
 * </ol>
 * The root package ({@link PayOnceConfig}) is configuration that every layer may read and that reads no
 * layer. A layer lists several packages, so a package that
 * does not exist yet (queue, refund) leaves no layer empty; a new top-level package fails the layer rule until
 * it is placed in a layer here.
 */
@AnalyzeClasses(packages = "io.payonce", importOptions = ImportOption.DoNotIncludeTests.class)
class ArchitectureTest {

    private static final String ENTRANCES = "Entrances";
    private static final String OPERATIONS = "Operations";
    private static final String RECONCILIATION = "Reconciliation";
    private static final String GATE_AND_ORDERS = "Gate and orders";
    private static final String FOUNDATIONS = "Foundations";
    private static final String CONFIGURATION = "Configuration";

    /**
     * The side of the channel that sends calls: everything in {@code channel} but its answers
     * ({@link ChargeResult} and its cases), which the code that settles on them may read.
     */
    private static final DescribedPredicate<JavaClass> CHANNEL_CALLING_SIDE =
            resideInAPackage("io.payonce.channel..").and(not(assignableTo(ChargeResult.class)))
                    .as("are the channel's calling side (io.payonce.channel except ChargeResult)");

    /** Executors: classes named *Executor in payment or refund, with their nested classes. */
    private static final DescribedPredicate<JavaClass> EXECUTORS = DescribedPredicate.describe("executors",
            c -> resideInAnyPackage("io.payonce.payment..", "io.payonce.refund..").test(c)
                    && outermost(c).getSimpleName().endsWith("Executor"));

    // A lower layer that imports a higher one cannot be understood, tested or replaced without it.
    @ArchTest
    void layers_onlyUseTheLayersBelowThem(JavaClasses classes) {
        layeredArchitecture().consideringOnlyDependenciesInLayers()
                .ensureAllClassesAreContainedInArchitecture()
                .layer(ENTRANCES).definedBy("io.payonce.api..", "io.payonce.queue..", "io.payonce.sandbox..")
                .layer(OPERATIONS).definedBy("io.payonce.payment..", "io.payonce.refund..")
                .layer(RECONCILIATION).definedBy("io.payonce.reconcile..")
                .layer(GATE_AND_ORDERS).definedBy("io.payonce.idempotency..", "io.payonce.order..")
                .layer(FOUNDATIONS).definedBy("io.payonce.channel..", "io.payonce.database..", "io.payonce.redis..",
                        "io.payonce.state..", "io.payonce.observability..")
                .layer(CONFIGURATION).definedBy("io.payonce")
                .whereLayer(ENTRANCES).mayNotBeAccessedByAnyLayer()
                .whereLayer(RECONCILIATION).mayOnlyBeAccessedByLayers(ENTRANCES)
                .whereLayer(OPERATIONS).mayOnlyBeAccessedByLayers(ENTRANCES, RECONCILIATION)
                .whereLayer(GATE_AND_ORDERS).mayOnlyBeAccessedByLayers(ENTRANCES, OPERATIONS, RECONCILIATION)
                .whereLayer(FOUNDATIONS).mayOnlyBeAccessedByLayers(ENTRANCES, OPERATIONS, RECONCILIATION,
                        GATE_AND_ORDERS)
                .whereLayer(CONFIGURATION).mayNotAccessAnyLayer()
                .check(classes);
    }

    // Charges sent from one place have their every outcome settled in one place: no second path pays twice.
    @ArchTest
    void onlyExecutors_callThePaymentChannel(JavaClasses classes) {
        noClasses().that(not(resideInAPackage("io.payonce.channel..").or(EXECUTORS))
                        .as("are neither in io.payonce.channel nor executors in payment or refund"))
                .should().dependOnClassesThat(CHANNEL_CALLING_SIDE)
                .check(classes);
    }

    // The service is correct without Redis only if Redis holds neutral values and the gate alone reads them.
    @ArchTest
    void redis_knowsNothingOfTheIdempotencyGate(JavaClasses classes) {
        noClasses().that().resideInAPackage("io.payonce.redis..")
                .should().dependOnClassesThat().resideInAPackage("io.payonce.idempotency..")
                .check(classes);
    }

    // Features that import each other in a circle can only be changed, tested and read together.
    @ArchTest
    void featurePackages_formNoCycles(JavaClasses classes) {
        slices().matching("io.payonce.(*)..").should().beFreeOfCycles()
                .check(classes);
    }

    // Resources stay thin (no SQL, no Redis in api/); api may name storage faults: it alone maps faults to statuses.
    @ArchTest
    void api_reachesNeitherDatabaseNorRedis(JavaClasses classes) {
        noClasses().that().resideInAPackage("io.payonce.api..")
                .should().dependOnClassesThat(resideInAnyPackage("io.payonce.database..", "io.payonce.redis..")
                        .and(not(assignableTo(Throwable.class)))
                        .as("are database or redis classes other than exceptions"))
                .check(classes);
    }

    private static JavaClass outermost(JavaClass c) {
        return c.getEnclosingClass().map(ArchitectureTest::outermost).orElse(c);
    }
}
