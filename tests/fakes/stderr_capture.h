// StderrCapture: sends this process's stderr (fd 2) to a temporary file while it lives, so a
// test can wait, bounded, for a line that another thread logs (a reflector's "list failed", a
// poller's "failing"), and assert on the warnings a degraded mode writes.
//
//   StderrCapture captured;
//   ... start what logs ...
//   EXPECT_TRUE(captured.WaitFor("msg=\"list failed\"", std::chrono::seconds(10)));
//
// Thread safety: one capture at a time per process; Text and WaitFor from any thread.
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "tests/fakes/wait_until.h"

namespace gpuadmit::testing {

class StderrCapture {
 public:
  StderrCapture() {
    std::string templ =
        (std::filesystem::temp_directory_path() / "gpuadmit-stderr-XXXXXX").string();
    int fd = ::mkstemp(templ.data());
    path_ = templ;
    std::fflush(stderr);
    saved_ = ::dup(STDERR_FILENO);
    if (fd >= 0) {
      ::dup2(fd, STDERR_FILENO);
      ::close(fd);
    }
  }
  ~StderrCapture() {
    std::fflush(stderr);
    if (saved_ >= 0) {
      ::dup2(saved_, STDERR_FILENO);
      ::close(saved_);
    }
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  // Everything written to stderr since the capture began.
  std::string Text() const {
    std::fflush(stderr);
    std::ifstream in(path_, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // True once `text` occurs `count` times in what was written, within `timeout`.
  bool WaitFor(std::string_view text, std::chrono::milliseconds timeout, size_t count = 1) const {
    return WaitUntil([&] { return Count(text) >= count; }, timeout);
  }

  size_t Count(std::string_view text) const {
    std::string all = Text();
    size_t n = 0;
    for (size_t at = all.find(text); at != std::string::npos; at = all.find(text, at + 1)) ++n;
    return n;
  }

 private:
  std::string path_;
  int saved_ = -1;
};

}  // namespace gpuadmit::testing
