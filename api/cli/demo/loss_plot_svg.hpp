// Hand-written SVG line plot of loss curves (log-scale loss vs step), with
// axes, ticks and a legend. No dependency.
#pragma once

#include <string>
#include <vector>

namespace octet_cli {
namespace demo {

struct Series {
  std::string name;
  std::vector<double> values;  // loss per step (step = index + 1)
};

// The SVG document. Non-finite or non-positive values are left out of a
// curve (it is broken there).
std::string loss_plot_svg(const std::vector<Series>& series, const std::string& title);

// Writes the document to path; false (and errno) on failure.
bool write_text_file(const std::string& path, const std::string& text);

}  // namespace demo
}  // namespace octet_cli
