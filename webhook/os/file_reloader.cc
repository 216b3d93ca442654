#include "webhook/os/file_reloader.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <filesystem>

namespace gpuadmit {
namespace {

// Every way a file in the directory, or the directory itself, can come to name other bytes:
// written in place (MODIFY, CLOSE_WRITE), replaced by rename (MOVED_TO) as the kubelet swaps
// `..data`, unlinked and created again (DELETE, CREATE, as `ln -sf` does), or its mode or owner
// changed (ATTRIB); the SELF events say the watch no longer follows the path.
constexpr uint32_t kWatchMask = IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MODIFY |
                                IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF |
                                IN_ONLYDIR;

// 20 ms: a writer's create, write and close, or the kubelet's new directory, symlink, rename and
// removal of the old version, land well within it; checking once the directory has been quiet
// that long costs one check per burst and rarely catches a file half-written (a check that
// does is followed by the next event's).
constexpr std::chrono::milliseconds kSettle{20};
// 250 ms: a directory that never goes quiet (another file in it written all the time) delays a
// check by no more than this.
constexpr std::chrono::milliseconds kMaxSettle{250};

int PollTimeout(std::chrono::milliseconds d) {
  return static_cast<int>(std::clamp<int64_t>(d.count(), 0, INT_MAX));
}

}  // namespace

FileReloader::FileReloader(std::string path, std::chrono::milliseconds interval,
                           std::function<void()> on_change)
    : path_(std::move(path)),
      interval_(interval),
      on_change_(std::move(on_change)),
      last_(Fingerprint()) {
  std::filesystem::path parent = std::filesystem::path(path_).parent_path();
  dir_ = parent.empty() ? "." : parent.string();
}

FileReloader::~FileReloader() { Stop(); }

std::string FileReloader::Fingerprint() const {
  struct stat st {};
  if (stat(path_.c_str(), &st) != 0) return "missing";
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
         std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

void FileReloader::Start() {
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd_ >= 0) inotify_fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  // The watch exists before Start returns: a change made right after is an event, not a poll.
  EnsureWatch();
  thread_ = std::thread([this] {
    if (stop_fd_ >= 0) {
      WatchLoop();
    } else {
      PollLoop();
    }
  });
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
  if (stop_fd_ >= 0) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t written = ::write(stop_fd_, &one, sizeof one);
  }
  if (thread_.joinable()) thread_.join();
  for (int* fd : {&inotify_fd_, &stop_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  watch_ = -1;
}

bool FileReloader::EnsureWatch() {
  if (inotify_fd_ < 0) return false;
  if (watch_ < 0) watch_ = ::inotify_add_watch(inotify_fd_, dir_.c_str(), kWatchMask);
  return watch_ >= 0;
}

void FileReloader::DrainEvents() {
  alignas(inotify_event) char buffer[4096];
  for (;;) {
    ssize_t n = ::read(inotify_fd_, buffer, sizeof buffer);
    if (n <= 0) return;  // EAGAIN: nothing more queued
    for (ssize_t at = 0; at < n;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
      at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      if (event->wd != watch_) continue;
      if ((event->mask & IN_IGNORED) != 0) {
        watch_ = -1;  // the directory went away: watched again, by path, on a later round
      } else if ((event->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) != 0) {
        // A moved directory keeps its watch, which no longer follows the path.
        ::inotify_rm_watch(inotify_fd_, watch_);
        watch_ = -1;
      }
    }
  }
}

void FileReloader::WatchLoop() {
  CheckNow();  // a change between construction and Start
  for (;;) {
    bool watching = EnsureWatch();
    pollfd fds[2] = {{stop_fd_, POLLIN, 0}, {inotify_fd_, POLLIN, 0}};
    int ready = ::poll(fds, watching ? 2 : 1, PollTimeout(interval_));
    if (ready < 0 && errno != EINTR) return PollLoop();
    if (fds[0].revents != 0) return;
    if (watching && (fds[1].revents & (POLLERR | POLLNVAL)) != 0) {
      ::close(inotify_fd_);  // polling only from now on
      inotify_fd_ = -1;
      watch_ = -1;
    } else if (watching && fds[1].revents != 0) {
      // Wait for the burst to end: until quiet for kSettle, at most kMaxSettle.
      auto deadline = std::chrono::steady_clock::now() + kMaxSettle;
      for (;;) {
        DrainEvents();
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) break;
        ready = ::poll(fds, 2, PollTimeout(std::min(left, kSettle)));
        if (ready <= 0) break;
        if (fds[0].revents != 0) return;
      }
    }
    CheckNow();
  }
}

void FileReloader::PollLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!wake_.wait_for(lock, interval_, [this] { return stopping_; })) {
    lock.unlock();
    CheckNow();
    lock.lock();
  }
}

}  // namespace gpuadmit
