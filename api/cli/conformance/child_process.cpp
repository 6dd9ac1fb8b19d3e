// Running checks in a child process (child_process.hpp).
#include "conformance/child_process.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace octet_cli {
namespace {

// One record per line: outcome, '\x1f', name, '\x1f', detail (newlines of a
// detail become spaces).
std::string encode(const Check& c) {
  std::string detail = c.detail;
  for (char& ch : detail)
    if (ch == '\n' || ch == '\x1f') ch = ' ';
  return std::to_string(int(c.outcome)) + '\x1f' + c.name + '\x1f' + detail + '\n';
}

void write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n <= 0) return;
    done += size_t(n);
  }
}

}  // namespace

void run_in_child(Section* section, const std::string& what, const std::function<void(Section&)>& body) {
  int fds[2];
  if (::pipe(fds) != 0) {
    section->add(what, Outcome::Fail, "cannot create a pipe for the checker process");
    return;
  }
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    section->add(what, Outcome::Fail, "cannot start the checker process");
    return;
  }
  if (pid == 0) {
    ::close(fds[0]);
    Section local;
    local.on_add = [&](const Check& c) { write_all(fds[1], encode(c)); };
    try {
      body(local);
    } catch (...) {
      local.add(what, Outcome::Fail, "the checker threw an exception");
    }
    ::close(fds[1]);
    std::fflush(nullptr);
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string data;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    data.append(buf, size_t(n));
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  size_t start = 0;
  while (start < data.size()) {
    const size_t end = data.find('\n', start);
    if (end == std::string::npos) break;
    const std::string line = data.substr(start, end - start);
    start = end + 1;
    const size_t a = line.find('\x1f');
    const size_t b = a == std::string::npos ? a : line.find('\x1f', a + 1);
    if (b == std::string::npos) continue;
    section->add(line.substr(a + 1, b - a - 1), Outcome(std::stoi(line.substr(0, a))), line.substr(b + 1));
  }
  if (WIFSIGNALED(status))
    section->add(what, Outcome::Fail,
                 "the plugin crashed the checker (signal " + std::to_string(WTERMSIG(status)) + ", " +
                     strsignal(WTERMSIG(status)) + ") after the checks above");
  else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    section->add(what, Outcome::Fail,
                 "the plugin ended the checker process (exit status " + std::to_string(WEXITSTATUS(status)) + ")");
}

}  // namespace octet_cli
