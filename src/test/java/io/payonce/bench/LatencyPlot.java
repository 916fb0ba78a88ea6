package io.payonce.bench;

import java.math.BigDecimal;
import java.math.MathContext;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramIterationValue;

/**
 * A percentile-distribution plot in plain SVG, like HdrHistogram's own plotter: the x axis is
 * log10(1 / (1 - percentile)), so 0, 90, 99, 99.9 and 99.99 % are evenly spaced and the tail is
 * visible; the y axis is latency in ms on a log scale, because the scenarios span 0.1 ms to seconds.
 */
final class LatencyPlot {

    private static final String[] COLORS = { "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
            "#e377c2", "#7f7f7f", "#bcbd22", "#17becf" };
    private static final int WIDTH = 1040;
    private static final int HEIGHT = 560;
    private static final int LEFT = 70;
    private static final int RIGHT = 300;
    private static final int TOP = 40;
    private static final int BOTTOM = 60;
    /** 99.99 %: beyond it the x axis would only show single samples. */
    private static final double MAX_X = 4;

    record Series(String name, Histogram micros) {
    }

    private LatencyPlot() {
    }

    static String svg(String title, List<Series> series) {
        double minMs = Double.MAX_VALUE;
        double maxMs = 0;
        List<List<double[]>> lines = new ArrayList<>();
        for (Series s : series) {
            List<double[]> points = points(s.micros());
            for (double[] p : points) {
                minMs = Math.min(minMs, p[1]);
                maxMs = Math.max(maxMs, p[1]);
            }
            lines.add(points);
        }
        if (maxMs == 0) {
            minMs = 0.1;
            maxMs = 1;
        }
        double lowDecade = Math.floor(Math.log10(Math.max(minMs, 0.01)));
        double highDecade = Math.ceil(Math.log10(Math.max(maxMs, minMs * 10)));
        int plotW = WIDTH - LEFT - RIGHT;
        int plotH = HEIGHT - TOP - BOTTOM;

        StringBuilder out = new StringBuilder();
        out.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\""
                + " viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">%n", WIDTH, HEIGHT, WIDTH, HEIGHT));
        out.append(String.format(Locale.ROOT, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>%n", WIDTH, HEIGHT));
        out.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"24\" font-size=\"15\">%s</text>%n", LEFT, escape(title)));

        String[] xLabels = { "0%", "90%", "99%", "99.9%", "99.99%" };
        for (int i = 0; i <= MAX_X; i++) {
            double x = LEFT + plotW * i / MAX_X;
            out.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>%n",
                    x, TOP, x, TOP + plotH));
            out.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>%n",
                    x, TOP + plotH + 18, xLabels[i]));
        }
        out.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">percentile</text>%n",
                LEFT + plotW / 2, HEIGHT - 18));
        for (double d = lowDecade; d <= highDecade; d++) {
            for (int m : new int[] { 1, 2, 5 }) {
                double ms = m * Math.pow(10, d);
                double logValue = Math.log10(ms);
                if (logValue > highDecade) {
                    break;
                }
                double y = TOP + plotH - plotH * (logValue - lowDecade) / (highDecade - lowDecade);
                out.append(String.format(Locale.ROOT,
                        "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\"/>%n",
                        LEFT, y, LEFT + plotW, y, m == 1 ? "#ccc" : "#eee"));
                out.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>%n",
                        LEFT - 6, y + 4, trim(ms)));
            }
        }
        out.append(String.format(Locale.ROOT,
                "<text x=\"18\" y=\"%d\" transform=\"rotate(-90 18 %d)\" text-anchor=\"middle\">latency (ms, log)</text>%n",
                TOP + plotH / 2, TOP + plotH / 2));
        out.append(String.format(Locale.ROOT,
                "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#888\"/>%n",
                LEFT, TOP, plotW, plotH));

        for (int i = 0; i < series.size(); i++) {
            String color = COLORS[i % COLORS.length];
            StringBuilder path = new StringBuilder();
            for (double[] p : lines.get(i)) {
                double x = LEFT + plotW * Math.min(p[0], MAX_X) / MAX_X;
                double logValue = Math.log10(Math.max(p[1], Math.pow(10, lowDecade)));
                double y = TOP + plotH - plotH * (logValue - lowDecade) / (highDecade - lowDecade);
                path.append(path.length() == 0 ? "M" : " L").append(String.format(Locale.ROOT, "%.1f %.1f", x, y));
            }
            out.append(String.format(Locale.ROOT,
                    "<path d=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/>%n", path, color));
            int ly = TOP + 10 + i * 20;
            out.append(String.format(Locale.ROOT,
                    "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"3\"/>%n",
                    LEFT + plotW + 15, ly, LEFT + plotW + 40, ly, color));
            out.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\">%s</text>%n",
                    LEFT + plotW + 46, ly + 4, escape(series.get(i).name())));
        }
        out.append("</svg>\n");
        return out.toString();
    }

    /** (x, latency ms) along the distribution, ending with the maximum at the last sample's percentile. */
    private static List<double[]> points(Histogram h) {
        List<double[]> points = new ArrayList<>();
        long total = h.getTotalCount();
        if (total == 0) {
            return points;
        }
        // the last sample sits at percentile 1 - 1/total; the iteration's levels past it repeat the maximum
        double lastX = Math.min(MAX_X, Math.log10(total));
        for (HistogramIterationValue v : h.percentiles(5)) {
            double p = v.getPercentileLevelIteratedTo() / 100;
            if (p >= 1 || Math.log10(1 / (1 - p)) >= lastX) {
                break;
            }
            points.add(new double[] { Math.log10(1 / (1 - p)), h.highestEquivalentValue(v.getValueIteratedTo()) / 1000.0 });
        }
        points.add(new double[] { lastX, h.getMaxValue() / 1000.0 });
        return points;
    }

    private static String trim(double ms) {
        return BigDecimal.valueOf(ms).round(new MathContext(2)).stripTrailingZeros().toPlainString();
    }

    private static String escape(String text) {
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
    }
}
