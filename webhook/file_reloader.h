// FileReloader: calls `on_change` when a file's identity or modification time changes, polled on
// its own thread. Polling (1 s by default) also sees a ConfigMap or Secret mount swapping its
// `..data` symlink, which inotify on the file itself misses.
//
//   FileReloader reloader(path, std::chrono::seconds(1), [&] { Reload(); });
//   reloader.Start();  ...  reloader.Stop();
//
// A file's identity is taken through every symlink on its path (stat, not lstat): when a
// ConfigMap mount points `..data` at a new timestamped directory, FILE -> ..data/FILE now names
// another inode, and that is a change even though FILE itself was never touched.
//
// Thread safety: Start and Stop from one thread; `on_change` runs on the reloader's thread.
// CheckNow is for a reloader that was not started (tests drive it step by step).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace gpuadmit {

class FileReloader {
 public:
  FileReloader(std::string path, std::chrono::milliseconds interval,
               std::function<void()> on_change);
  ~FileReloader();

  void Start();
  void Stop();

  // One poll: when the file's fingerprint differs from the last one seen (at construction or
  // the previous check), remembers it and calls `on_change`. Returns whether it called.
  bool CheckNow();

 private:
  // Device, inode, size and mtime: a changed symlink target shows as a new inode.
  std::string Fingerprint() const;
  void Loop();

  std::string path_;
  std::chrono::milliseconds interval_;
  std::function<void()> on_change_;
  std::string last_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace gpuadmit
