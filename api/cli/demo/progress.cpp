#include "demo/progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace octet_cli {
namespace demo {

bool Progress::stderr_is_terminal() { return isatty(STDERR_FILENO) == 1; }

Progress::Progress(const std::string& label, int64_t total, bool interactive)
    : label_(label), total_(total < 1 ? 1 : total), interactive_(interactive) {
  if (interactive_) draw(0, 0.0);
}

void Progress::draw(int64_t done, double loss) {
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(done * kWidth / total_);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(kWidth - filled), '.');
  std::fprintf(stderr, "\r%-12s [%s] %5lld/%lld", label_.c_str(), bar.c_str(), static_cast<long long>(done),
               static_cast<long long>(total_));
  if (done > 0) std::fprintf(stderr, "  loss %.5g", loss);
  std::fflush(stderr);
}

void Progress::update(int64_t done, double loss) {
  last_done_ = done;
  last_loss_ = loss;
  if (interactive_) {
    // Redraw about 100 times per run at most.
    if (done == total_ || (done - last_printed_) * 100 >= total_) {
      draw(done, loss);
      last_printed_ = done;
    }
    return;
  }
  // Plain lines: every quarter of the run.
  const int64_t every = total_ >= 4 ? total_ / 4 : 1;
  if (done % every == 0 || done == total_) {
    std::fprintf(stderr, "%-12s step %lld/%lld  loss %.5g\n", label_.c_str(), static_cast<long long>(done),
                 static_cast<long long>(total_), loss);
    last_printed_ = done;
  }
}

void Progress::finish(const std::string& outcome) {
  if (interactive_) {
    std::fprintf(stderr, "  %s\n", outcome.c_str());
  } else {
    std::fprintf(stderr, "%-12s %s\n", label_.c_str(), outcome.c_str());
  }
  std::fflush(stderr);
}

}  // namespace demo
}  // namespace octet_cli
