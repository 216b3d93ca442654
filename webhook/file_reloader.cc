#include "webhook/file_reloader.h"

#include <sys/stat.h>

namespace gpuadmit {

FileReloader::FileReloader(std::string path, std::chrono::milliseconds interval,
                           std::function<void()> on_change)
    : path_(std::move(path)),
      interval_(interval),
      on_change_(std::move(on_change)),
      last_(Fingerprint()) {}

FileReloader::~FileReloader() { Stop(); }

std::string FileReloader::Fingerprint() const {
  struct stat st {};
  if (stat(path_.c_str(), &st) != 0) return "missing";
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
         std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

void FileReloader::Start() {
  thread_ = std::thread([this] { Loop(); });
}

bool FileReloader::CheckNow() {
  std::string now = Fingerprint();
  if (now == last_) return false;
  last_ = now;
  on_change_();
  return true;
}

void FileReloader::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void FileReloader::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!wake_.wait_for(lock, interval_, [this] { return stopping_; })) {
    lock.unlock();
    CheckNow();
    lock.lock();
  }
}

}  // namespace gpuadmit
