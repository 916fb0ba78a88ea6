/*
 * Two JVM_* functions that the JDK's static libjava.a (jdk.internal.platform.CgroupMetrics) calls and
 * that the verification toolchain of ../shared/native-toolchain does not define: an application that
 * reaches the JDK's container metrics, as this one does, fails to link without them. Both answer "no": the executables that toolchain builds do not see cgroup
 * limits (its README's limits), and say so instead of failing to link. Release builds use the Mandrel
 * builder image, whose libjvm.a has the real ones; this file is linked only by scripts/native.sh.
 */
unsigned char JVM_IsUseContainerSupport(void) { return 0; }
unsigned char JVM_IsContainerized(void) { return 0; }
