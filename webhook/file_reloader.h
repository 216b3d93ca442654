// FileReloader: calls `on_change` when a file's identity or modification time changes, polled on
// its own thread. Polling (1 s by default) also sees a ConfigMap or Secret mount swapping its
// `..data` symlink, which inotify on the file itself misses.
//
//   FileReloader reloader(path, std::chrono::seconds(1), [&] { Reload(); });
//   reloader.Start();  ...  reloader.Stop();
//
// Thread safety: Start and Stop from one thread; `on_change` runs on the reloader's thread.
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
