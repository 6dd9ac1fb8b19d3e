#include "demo/loss_plot_svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace octet_cli {
namespace demo {

namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// A "nice" step (1, 2 or 5 times a power of ten) giving about `target` ticks.
double nice_step(double span, int target) {
  const double raw = span / target;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw) return m * p;
  return 10.0 * p;
}

std::string tick_label(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

const char* const kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};

}  // namespace

std::string loss_plot_svg(const std::vector<Series>& series, const std::string& title) {
  const double width = 800, height = 480;
  const double left = 80, right = 190, top = 40, bottom = 60;
  const double pw = width - left - right, ph = height - top - bottom;

  size_t max_steps = 1;
  double lo = INFINITY, hi = -INFINITY;
  for (const Series& s : series) {
    max_steps = std::max(max_steps, s.values.size());
    for (double v : s.values)
      if (std::isfinite(v) && v > 0) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
  }
  if (!(lo <= hi)) lo = 0.1, hi = 1.0;
  // Whole decades around the data.
  double dlo = std::floor(std::log10(lo)), dhi = std::ceil(std::log10(hi));
  if (dhi <= dlo) dhi = dlo + 1;

  auto x_of = [&](double step) { return left + (max_steps > 1 ? (step - 1) / double(max_steps - 1) : 0.0) * pw; };
  auto y_of = [&](double v) { return top + (dhi - std::log10(v)) / (dhi - dlo) * ph; };

  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height << "\" viewBox=\"0 0 "
    << width << ' ' << height << "\" font-family=\"sans-serif\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"" << num(left + pw / 2) << "\" y=\"24\" text-anchor=\"middle\" font-size=\"16\">" << escape(title)
    << "</text>\n";

  // Y axis: decades with labels, 2..9 minor ticks with light grid.
  o << "<g stroke=\"#ddd\" stroke-width=\"1\">\n";
  for (double d = dlo; d <= dhi; d += 1) {
    for (int m = 1; m <= 9; ++m) {
      const double v = m * std::pow(10.0, d);
      if (std::log10(v) > dhi + 1e-9) break;
      const double y = y_of(v);
      o << "<line x1=\"" << num(left) << "\" y1=\"" << num(y) << "\" x2=\"" << num(left + pw) << "\" y2=\"" << num(y)
        << "\"" << (m == 1 ? " stroke=\"#bbb\"" : "") << "/>\n";
    }
  }
  o << "</g>\n<g font-size=\"12\" text-anchor=\"end\">\n";
  for (double d = dlo; d <= dhi; d += 1) {
    const double y = y_of(std::pow(10.0, d));
    o << "<line x1=\"" << num(left - 6) << "\" y1=\"" << num(y) << "\" x2=\"" << num(left) << "\" y2=\"" << num(y)
      << "\" stroke=\"black\"/>\n"
      << "<text x=\"" << num(left - 9) << "\" y=\"" << num(y + 4) << "\">1e" << int(d) << "</text>\n";
  }
  o << "</g>\n";

  // X axis ticks.
  const double step = nice_step(double(max_steps), 8);
  o << "<g font-size=\"12\" text-anchor=\"middle\">\n";
  for (double s = 0; s <= double(max_steps) + 1e-9; s += step) {
    const double xs = s < 1 ? 1 : s;
    const double x = x_of(xs);
    o << "<line x1=\"" << num(x) << "\" y1=\"" << num(top + ph) << "\" x2=\"" << num(x) << "\" y2=\""
      << num(top + ph + 6) << "\" stroke=\"black\"/>\n"
      << "<text x=\"" << num(x) << "\" y=\"" << num(top + ph + 20) << "\">" << tick_label(xs) << "</text>\n";
  }
  o << "</g>\n";

  // Axes and their names.
  o << "<rect x=\"" << num(left) << "\" y=\"" << num(top) << "\" width=\"" << num(pw) << "\" height=\"" << num(ph)
    << "\" fill=\"none\" stroke=\"black\"/>\n"
    << "<text x=\"" << num(left + pw / 2) << "\" y=\"" << num(height - 15)
    << "\" text-anchor=\"middle\" font-size=\"13\">training step</text>\n"
    << "<text x=\"20\" y=\"" << num(top + ph / 2) << "\" text-anchor=\"middle\" font-size=\"13\""
    << " transform=\"rotate(-90 20 " << num(top + ph / 2) << ")\">loss (MSE, log scale)</text>\n";

  // Curves and legend.
  for (size_t i = 0; i < series.size(); ++i) {
    const Series& s = series[i];
    const char* color = kColors[i % (sizeof kColors / sizeof kColors[0])];
    std::ostringstream points;
    size_t n = 0;
    auto flush = [&]() {
      if (n > 0)
        o << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"1.5\" points=\"" << points.str()
          << "\"/>\n";
      points.str("");
      n = 0;
    };
    for (size_t k = 0; k < s.values.size(); ++k) {
      const double v = s.values[k];
      if (!(std::isfinite(v) && v > 0)) {
        flush();
        continue;
      }
      points << (n ? " " : "") << num(x_of(double(k + 1))) << ',' << num(y_of(v));
      ++n;
    }
    flush();
    const double ly = top + 10 + 22.0 * double(i);
    const double lx = left + pw + 15;
    o << "<line x1=\"" << num(lx) << "\" y1=\"" << num(ly) << "\" x2=\"" << num(lx + 25) << "\" y2=\"" << num(ly)
      << "\" stroke=\"" << color << "\" stroke-width=\"3\"/>\n"
      << "<text x=\"" << num(lx + 32) << "\" y=\"" << num(ly + 4) << "\" font-size=\"13\">" << escape(s.name)
      << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

bool write_text_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return false;
  f << text;
  f.close();
  return static_cast<bool>(f);
}

}  // namespace demo
}  // namespace octet_cli
