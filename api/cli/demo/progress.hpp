// Progress display of `octet demo` on stderr: one line per precision,
// redrawn in place with '\r' on a terminal, or plain periodic lines when
// stderr is a file or a pipe.
#pragma once

#include <cstdint>
#include <string>

namespace octet_cli {
namespace demo {

class Progress {
 public:
  Progress(const std::string& label, int64_t total, bool interactive);
  // After step `done` (1-based) with that step's loss.
  void update(int64_t done, double loss);
  // Ends the line with a final word ("done", "unsupported", ...).
  void finish(const std::string& outcome);

  static bool stderr_is_terminal();

 private:
  void draw(int64_t done, double loss);

  std::string label_;
  int64_t total_;
  bool interactive_;
  int64_t last_printed_ = 0;
  double last_loss_ = 0.0;
  int64_t last_done_ = 0;
};

}  // namespace demo
}  // namespace octet_cli
