package io.payonce.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/** What the figures were measured on, read from /proc and /etc the way nproc, free and lsb_release do. */
final class Machine {

    private Machine() {
    }

    static int cores() {
        return Runtime.getRuntime().availableProcessors();
    }

    static String cpuModel() {
        return field("/proc/cpuinfo", "model name", ":").orElse("unknown CPU");
    }

    static String memory() {
        return field("/proc/meminfo", "MemTotal", ":")
                .map(kb -> String.format("%.1f GiB", Long.parseLong(kb.replace("kB", "").trim()) / 1024.0 / 1024.0))
                .orElse("unknown memory");
    }

    static String os() {
        String name = field("/etc/os-release", "PRETTY_NAME", "=").map(v -> v.replace("\"", "")).orElse("unknown OS");
        return name + ", kernel " + read("/proc/sys/kernel/osrelease").trim();
    }

    static String java() {
        return System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version");
    }

    static String loadAverage() {
        String[] f = read("/proc/loadavg").trim().split("\\s+");
        return f.length >= 3 ? f[0] + " " + f[1] + " " + f[2] : "unknown";
    }

    private static Optional<String> field(String file, String name, String separator) {
        try {
            List<String> lines = Files.readAllLines(Path.of(file));
            for (String line : lines) {
                int at = line.indexOf(separator);
                if (at > 0 && line.substring(0, at).trim().equals(name)) {
                    return Optional.of(line.substring(at + 1).trim());
                }
            }
        } catch (IOException e) {
            // reported as unknown
        }
        return Optional.empty();
    }

    private static String read(String file) {
        try {
            return Files.readString(Path.of(file));
        } catch (IOException e) {
            return "";
        }
    }
}
