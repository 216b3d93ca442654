// FileReloader: calls `on_change` when a file's identity or modification time changes. Once
// started, its thread wakes on every inotify event in the file's DIRECTORY (so a change is seen
// at once) and also every `interval` (the safety net: inotify unavailable, out of watches, or a
// change it cannot see), and compares the file's fingerprint each time; a wake-up that changed
// nothing calls nothing.
//
//   FileReloader reloader(path, std::chrono::seconds(1), [&] { Reload(); });
//   reloader.Start();  ...  reloader.Stop();
//
// The directory, not the file, is watched: a ConfigMap or Secret mount updates by pointing its
// `..data` symlink at a new timestamped directory (a rename inside DIR), and DIR/FILE ->
// ..data/FILE itself is never touched, so a watch on the file would miss it. For the same reason
// a file's identity is taken through every symlink on its path (stat, not lstat): after the swap
// FILE names another inode, and that is a change.
//
// Thread safety: Start and Stop from one thread; `on_change` runs on the reloader's thread.
// CheckNow is for a reloader that was not started (tests drive it step by step).
#pragma once

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
  ~FileReloader();  // Stop()s
  FileReloader(const FileReloader&) = delete;
  FileReloader& operator=(const FileReloader&) = delete;

  // Starts the thread: the directory watch when inotify allows it, polling every `interval`
  // in any case. Call once.
  void Start();
  // Ends the thread promptly (it does not wait out the interval) and joins. Idempotent; also
  // fine on a reloader that was never started.
  void Stop();

  // One check: when the file's fingerprint differs from the last one seen (at construction or
  // the previous check), remembers it and calls `on_change`. Returns whether it called.
  bool CheckNow();

 private:
  // Device, inode, size and mtime: a changed symlink target shows as a new inode.
  std::string Fingerprint() const;
  // Waits on the stop eventfd and the inotify descriptor, at most `interval` at a time.
  void WatchLoop();
  // Without an eventfd to wake poll(): the condition variable alone, checks every interval.
  void PollLoop();
  // (Re)adds the directory watch when there is none; false when inotify refuses.
  bool EnsureWatch();
  // Reads every queued inotify event; notes a watch that the kernel dropped.
  void DrainEvents();

  std::string path_;
  std::string dir_;  // the directory watched: path_'s, as given (not resolved)
  std::chrono::milliseconds interval_;
  std::function<void()> on_change_;
  std::string last_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mu_
  int stop_fd_ = -1;       // eventfd written by Stop
  int inotify_fd_ = -1;
  int watch_ = -1;  // the directory's watch descriptor; -1 while none
  std::thread thread_;
};

}  // namespace gpuadmit
