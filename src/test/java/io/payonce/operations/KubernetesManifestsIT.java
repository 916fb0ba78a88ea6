package io.payonce.operations;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.IntOrString;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Probe;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceRequirements;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.policy.v1.PodDisruptionBudget;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;

/**
 * The Kubernetes manifests that {@code package} writes (quarkus-kubernetes, configured in the
 * {@code ## Kubernetes} section of application.properties and merged with src/main/kubernetes), read
 * with fabric8's model as a cluster would read them: probes on the management port, the business port
 * behind the Service, no sandbox, secrets only by reference, two replicas under a disruption budget,
 * and resources sized from the benchmark's memory figures. Runs after {@code package} (failsafe).
 */
class KubernetesManifestsIT {

    private static final Path MANIFESTS = Path.of("target/kubernetes/kubernetes.yml");
    /** The benchmark's figures, of which the memory request must cover the peak (docs/benchmark.md). */
    private static final Path BENCH_SUMMARY = Path.of("src/bench/summary.jsonl");
    /** Where the JVM options the benchmark measured are written down for every script that starts the app. */
    private static final Path APPLICATION_PROPERTIES = Path.of("src/main/resources/application.properties");
    private static final Path JVM_OPTIONS = Path.of("scripts/java25.sh");
    private static final Pattern JAVA_OPTS_DEFAULT = Pattern.compile("(?m)^JAVA_OPTS=\\$\\{JAVA_OPTS-(.*)}$");
    private static final String NAME = "payonce";
    private static final int BUSINESS_PORT = 8080;
    private static final int MANAGEMENT_PORT = 9000;
    private static final String SECRETS = "payonce-secrets";
    private static final String CONFIG = "payonce-config";
    private static final String TLS_SECRET = "payonce-tls";
    /** Environment variables whose value would be a secret if it were written inline. */
    private static final Pattern SECRET_NAME = Pattern.compile("PASSWORD|SECRET|TOKEN|KEY");

    private static String yaml;
    private static List<HasMetadata> resources;
    private static Deployment deployment;
    private static Container container;

    @BeforeAll
    static void readManifests() throws IOException {
        assertTrue(Files.isRegularFile(MANIFESTS),
                MANIFESTS + " is missing: quarkus-kubernetes writes it at package time");
        yaml = Files.readString(MANIFESTS);
        try (InputStream in = Files.newInputStream(MANIFESTS)) {
            resources = new KubernetesSerialization().unmarshal(in);
        }
        deployment = the(Deployment.class);
        List<Container> containers = pod().getContainers();
        assertEquals(1, containers.size(), "one container in the pod");
        container = containers.getFirst();
    }

    @Test
    void probes_askTheManagementPortsHealthEndpoints() {
        assertAll(
                () -> assertHealthProbe("readiness", container.getReadinessProbe(), "/q/health/ready"),
                () -> assertHealthProbe("liveness", container.getLivenessProbe(), "/q/health/live"),
                () -> assertHealthProbe("startup", container.getStartupProbe(), "/q/health/started"));
    }

    @Test
    void container_exposesTheBusinessAndTheManagementPort() {
        assertEquals(Map.of("http", BUSINESS_PORT, "management", MANAGEMENT_PORT),
                container.getPorts().stream()
                        .collect(Collectors.toMap(ContainerPort::getName, ContainerPort::getContainerPort)));
    }

    @Test
    void service_sendsTrafficToTheBusinessPortOnly() {
        Service service = the(Service.class);
        assertEquals(deployment.getSpec().getSelector().getMatchLabels(), service.getSpec().getSelector(),
                "the Service selects the Deployment's pods");
        List<Integer> targets = service.getSpec().getPorts().stream()
                .map(p -> containerPort(p.getTargetPort())).toList();
        assertEquals(List.of(BUSINESS_PORT), targets, "/q/* stays off the Service");
    }

    @Test
    void sandbox_isNeitherEnabledNorConfigured() {
        assertFalse(yaml.toLowerCase(Locale.ROOT).contains("sandbox"),
                "nothing in the manifests names the sandbox: it stays off, as in prod by default");
        assertTrue(env().noneMatch(e -> e.getName().startsWith("PAYONCE_SANDBOX")));
    }

    @Test
    void databasePassword_comesFromASecretKey() {
        EnvVar password = env().filter(e -> e.getName().equals("QUARKUS_DATASOURCE_PASSWORD")).findFirst()
                .orElseThrow(() -> new AssertionError("QUARKUS_DATASOURCE_PASSWORD is not set"));
        assertNull(password.getValue(), "no password inline");
        assertEquals(SECRETS, password.getValueFrom().getSecretKeyRef().getName());
    }

    @Test
    void configuration_comesFromTheConfigMap() {
        assertTrue(container.getEnvFrom().stream()
                .anyMatch(e -> e.getConfigMapRef() != null && CONFIG.equals(e.getConfigMapRef().getName())),
                "the ConfigMap's keys are the container's environment");
    }

    @Test
    void tlsFiles_areReadFromTheMountedSecret() {
        Volume tls = pod().getVolumes().stream().filter(v -> v.getSecret() != null
                && TLS_SECRET.equals(v.getSecret().getSecretName())).findFirst()
                .orElseThrow(() -> new AssertionError("no volume of the Secret " + TLS_SECRET));
        VolumeMount mount = container.getVolumeMounts().stream().filter(m -> m.getName().equals(tls.getName()))
                .findFirst().orElseThrow(() -> new AssertionError("the TLS Secret is not mounted"));
        assertTrue(mount.getReadOnly(), "mounted read-only");
        List<EnvVar> tlsFiles = env().filter(e -> e.getName().startsWith("PAYONCE_GATEWAY_TLS_")).toList();
        assertEquals(3, tlsFiles.size(), "certificate, key and the client CA: " + tlsFiles);
        tlsFiles.forEach(e -> assertTrue(e.getValue().startsWith(mount.getMountPath() + "/"),
                e.getName() + " names a file of the mounted Secret: " + e.getValue()));
    }

    @Test
    void noSecret_isWrittenInline() {
        List<String> secretMounts = container.getVolumeMounts().stream()
                .filter(m -> pod().getVolumes().stream()
                        .anyMatch(v -> v.getName().equals(m.getName()) && v.getSecret() != null))
                .map(m -> m.getMountPath() + "/").toList();
        assertAll(env().filter(e -> SECRET_NAME.matcher(e.getName()).find() && e.getValue() != null)
                .map(e -> () -> assertTrue(secretMounts.stream().anyMatch(e.getValue()::startsWith),
                        e.getName() + " is written inline: " + e.getValue())));
        assertTrue(resources.stream().noneMatch(r -> r.getKind().equals("Secret")),
                "the manifests hold no Secret: the operator creates them");
    }

    @Test
    void disruptionBudget_keepsOneOfTheTwoReplicas() {
        PodDisruptionBudget budget = the(PodDisruptionBudget.class);
        assertEquals(2, deployment.getSpec().getReplicas());
        assertEquals(new IntOrString(1), budget.getSpec().getMinAvailable());
        assertEquals(deployment.getSpec().getSelector().getMatchLabels(),
                budget.getSpec().getSelector().getMatchLabels(), "the budget covers the Deployment's pods");
    }

    /**
     * Kubernetes sends SIGKILL when the grace period runs out: it must outlast the service's own shutdown (its
     * readiness delay, then payments in flight finishing within the shutdown timeout), stated explicitly rather
     * than left to the cluster's default.
     */
    @Test
    void terminationGracePeriod_outlastsTheServicesShutdown() throws IOException {
        String properties = Files.readString(APPLICATION_PROPERTIES);
        long shutdownSeconds = seconds(properties, "quarkus.shutdown.delay")
                + seconds(properties, "quarkus.shutdown.timeout");

        Long grace = pod().getTerminationGracePeriodSeconds();

        assertNotNull(grace, "terminationGracePeriodSeconds is stated");
        assertTrue(grace > shutdownSeconds, "grace period " + grace + " s outlasts the shutdown's " + shutdownSeconds
                + " s");
    }

    @Test
    void memoryRequest_coversTheBenchmarksPeakWithTheJvmItMeasured() throws IOException {
        ResourceRequirements resources = container.getResources();
        assertNotNull(resources, "the container's resources");
        Map<String, Quantity> requests = resources.getRequests();
        Map<String, Quantity> limits = resources.getLimits();
        for (String resource : List.of("memory", "cpu")) {
            assertNotNull(requests.get(resource), resource + " request");
            assertNotNull(limits.get(resource), resource + " limit");
            assertTrue(amount(requests.get(resource)).compareTo(amount(limits.get(resource))) <= 0,
                    resource + " request within its limit");
        }
        BigDecimal peakRss = BigDecimal.valueOf(benchmarkPeakRssMib()).multiply(BigDecimal.valueOf(1L << 20));
        assertTrue(amount(requests.get("memory")).compareTo(peakRss) >= 0,
                "memory request " + requests.get("memory") + " below the benchmark's peak RSS");
        String measuredJvm = javaOptsOfTheScripts();
        assertEquals(Optional.of(measuredJvm), env().filter(e -> e.getName().equals("JAVA_OPTS"))
                .map(EnvVar::getValue).findFirst(), "the container runs the JVM the benchmark measured");
    }

    /** A whole-second duration {@code key=Ns} of the properties' default profile. */
    private static long seconds(String properties, String key) {
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(key) + "=(\\d+)s$").matcher(properties);
        assertTrue(m.find(), key + " is set in whole seconds in " + APPLICATION_PROPERTIES);
        return Long.parseLong(m.group(1));
    }

    private static void assertHealthProbe(String kind, Probe probe, String path) {
        assertNotNull(probe, kind + " probe");
        assertEquals(path, probe.getHttpGet().getPath(), kind + " probe path");
        assertEquals(MANAGEMENT_PORT, containerPort(probe.getHttpGet().getPort()), kind + " probe port");
    }

    /** A port given by number or by the container port's name, as a number. */
    private static int containerPort(IntOrString port) {
        if (port.getIntVal() != null) {
            return port.getIntVal();
        }
        return container.getPorts().stream().filter(p -> port.getStrVal().equals(p.getName()))
                .map(ContainerPort::getContainerPort).findFirst()
                .orElseThrow(() -> new AssertionError("no container port named " + port.getStrVal()));
    }

    private static <T extends HasMetadata> T the(Class<T> kind) {
        List<T> found = resources.stream().filter(kind::isInstance).map(kind::cast)
                .filter(r -> r.getMetadata().getName().equals(NAME)).toList();
        assertEquals(1, found.size(), "one " + kind.getSimpleName() + " named " + NAME);
        return found.getFirst();
    }

    private static PodSpec pod() {
        return deployment.getSpec().getTemplate().getSpec();
    }

    private static Stream<EnvVar> env() {
        return container.getEnv().stream();
    }

    private static BigDecimal amount(Quantity quantity) {
        return Quantity.getAmountInBytes(quantity);
    }

    private static double benchmarkPeakRssMib() throws IOException {
        ObjectMapper json = new ObjectMapper();
        double peak = 0;
        for (String line : Files.readAllLines(BENCH_SUMMARY)) {
            JsonNode peakRss = json.readTree(line).get("peak_rss_mib");
            if (peakRss != null) {
                peak = Math.max(peak, peakRss.asDouble());
            }
        }
        assertTrue(peak > 0, BENCH_SUMMARY + " holds no peak_rss_mib");
        return peak;
    }

    private static String javaOptsOfTheScripts() throws IOException {
        Matcher options = JAVA_OPTS_DEFAULT.matcher(Files.readString(JVM_OPTIONS));
        assertTrue(options.find(), JVM_OPTIONS + " sets no default JAVA_OPTS");
        return options.group(1);
    }
}
