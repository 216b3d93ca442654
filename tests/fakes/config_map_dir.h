// A directory laid out as the kubelet mounts a ConfigMap volume, for reload tests:
//
//   DIR/..2026_01_01_00_00_01.000000001/policy.yaml   the data of version 1
//   DIR/..data -> ..2026_01_01_00_00_01.000000001       swapped atomically on each update
//   DIR/policy.yaml -> ..data/policy.yaml                never touched after the first version
//
//   ConfigMapDir dir("policy.yaml");
//   dir.Publish("failureMode: open\n");     // version 1
//   watch(dir.Path());
//   dir.Publish("failureMode: closed\n");   // version 2: only ..data changes
//
// Thread safety: none; one test thread.
#pragma once

#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace gpuadmit::testing {

class ConfigMapDir {
 public:
  explicit ConfigMapDir(std::string key) : key_(std::move(key)) {
    std::string templ =
        (std::filesystem::temp_directory_path() / "gpuadmit-configmap-XXXXXX").string();
    root_ = ::mkdtemp(templ.data()) != nullptr ? templ : "";
  }
  ~ConfigMapDir() {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  ConfigMapDir(const ConfigMapDir&) = delete;
  ConfigMapDir& operator=(const ConfigMapDir&) = delete;

  // DIR/KEY, the path a pod is given.
  std::string Path() const { return root_ + "/" + key_; }

  // Writes a new version and points ..data at it with one rename, as the kubelet's
  // AtomicWriter does. Returns false when a file operation failed.
  bool Publish(const std::string& text) {
    namespace fs = std::filesystem;
    std::string version = "..2026_01_01_00_00_0" + std::to_string(++versions_) + ".000000001";
    std::error_code ec;
    fs::create_directory(root_ + "/" + version, ec);
    if (ec) return false;
    std::ofstream(root_ + "/" + version + "/" + key_, std::ios::binary) << text;
    fs::create_directory_symlink(version, root_ + "/..data_tmp", ec);
    if (ec) return false;
    if (std::rename((root_ + "/..data_tmp").c_str(), (root_ + "/..data").c_str()) != 0) {
      return false;
    }
    if (versions_ == 1) fs::create_symlink("..data/" + key_, Path(), ec);
    return !ec;
  }

 private:
  std::string key_;
  std::string root_;
  int versions_ = 0;
};

}  // namespace gpuadmit::testing
