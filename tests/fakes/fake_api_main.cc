// gpuadmit_fake_api: the fake Kubernetes API server (fake_kube_api_server.h) as a process, for
// script tests that run several gpuadmit processes against one API (tests/e2e/replicas_test.py).
//
//   gpuadmit_fake_api --cluster cluster.json --token T --kubeconfig OUT [--version 1.29]
//
// Serves the cluster file's nodes and pods (List, an idle watch, GET and merge PATCH of one pod),
// Leases, Events and /version (--version MAJOR.MINOR: gitVersion vMAJOR.MINOR.0; default
// v1.31.0) on 127.0.0.1 (a free port), writes a kubeconfig for it to OUT, prints "ready URL" on
// stdout, and runs until SIGTERM or SIGINT, or until its stdin closes (the test that started it
// is gone).
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/fakes/fake_kube_api_server.h"

int main(int argc, char** argv) {
  std::string cluster, token, kubeconfig, version;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--cluster") cluster = argv[i + 1];
    if (flag == "--token") token = argv[i + 1];
    if (flag == "--kubeconfig") kubeconfig = argv[i + 1];
    if (flag == "--version") version = argv[i + 1];
  }
  size_t dot = version.find('.');
  if (cluster.empty() || token.empty() || kubeconfig.empty() ||
      (!version.empty() && (dot == 0 || dot == std::string::npos || dot + 1 == version.size()))) {
    std::fprintf(stderr,
                 "usage: gpuadmit_fake_api --cluster FILE --token T --kubeconfig OUT "
                 "[--version MAJOR.MINOR]\n");
    return 2;
  }
  std::ifstream in(cluster);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json list = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (!list.is_object() || !list.contains("items")) {
    std::fprintf(stderr, "%s: not a List with items\n", cluster.c_str());
    return 2;
  }
  std::vector<nlohmann::json> nodes, pods;
  for (const nlohmann::json& item : list["items"]) {
    (item.value("kind", "") == "Node" ? nodes : pods).push_back(item);
  }
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);  // before the server's threads start
  gpuadmit::testing::FakeKubeApiServer api(token);
  api.SetObjects("nodes", nodes, "100");
  api.SetObjects("pods", pods, "100");
  if (!version.empty()) {
    api.SetVersion(version.substr(0, dot), version.substr(dot + 1), "v" + version + ".0");
  }
  std::ofstream(kubeconfig) << "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n"
                            << "    server: " << api.url()
                            << "\n    certificate-authority: " << api.ca_file()
                            << "\nusers:\n- name: test\n  user:\n    token: " << token
                            << "\ncontexts:\n- name: fake\n  context:\n"
                            << "    cluster: fake\n    user: test\ncurrent-context: fake\n";
  std::printf("ready %s\n", api.url().c_str());
  std::fflush(stdout);
  // Until a stop signal, or stdin's end (the parent died without signalling).
  while (true) {
    timespec tick{0, 200 * 1000 * 1000};
    if (sigtimedwait(&stop, nullptr, &tick) > 0) break;
    pollfd p{0, POLLIN, 0};
    if (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLIN))) {
      char c;
      if (read(0, &c, 1) <= 0) break;
    }
  }
  return 0;
}
