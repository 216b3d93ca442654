// Probing an admission handler with a recorded review, for the fault tests: the answer a
// healthy webhook gives (to compare a recovered one with), and reviews repeated until an answer
// is the one wanted, each checked to be answered and admitted on the way.
//
//   json want = HealthyAnswer(DemoCluster(), kMigReview);
//   EXPECT_EQ(ReviewUntil(handler, kMigReview, [&](const json& a) { return a == want; }), want);
//
// Thread safety: none of its own; the handler's.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "tests/fakes/test_cluster.h"
#include "webhook/admission/admission_handler.h"
#include "webhook/admission/shared_ledger.h"
#include "webhook/os/clock.h"

namespace gpuadmit::testing {

// 10 s: far beyond what any recovery in these tests takes (milliseconds); reaching it is a hang.
inline constexpr std::chrono::seconds kPatience{10};

inline const std::string kMigReview = "tests/fixtures/gpu/kubectl-pod.json";  // 1 mig-2g.20gb
inline const std::string kWholeGpuReview = "tests/fixtures/gpu/kubectl-pod-whole-gpu.json";

// The whole AdmissionReview a healthy webhook (a reservation ledger, as serve has) answers the
// review in file `review` with: `cluster` loaded, `policy`, `metrics` (none: every GPU idle).
inline nlohmann::json HealthyAnswer(
    const nlohmann::json& cluster, const std::string& review,
    std::shared_ptr<const Policy> policy = std::make_shared<const Policy>(),
    std::shared_ptr<const ClusterGpuMetrics> metrics = nullptr) {
  Logger log(LogLevel::kError);
  Metrics counters;
  SteadyClock clock;
  SharedLedger ledger(clock, kDefaultReservationTtl);
  AdmissionHandler handler(log, counters, &ledger);
  handler.SetPolicy(std::move(policy));
  handler.SetSnapshot(std::make_shared<const InventorySnapshot>(SnapshotOf(cluster)));
  handler.SetGpuMetrics(std::move(metrics));
  return nlohmann::json::parse(handler.Handle("application/json", ReadSourceFile(review)).body);
}

// Reviews `review` (a file) until `done` holds of the whole answer, for at most kPatience; the
// last answer. Every answer on the way must be a 200 that admits the pod: the webhook keeps
// answering whatever is failing behind it.
inline nlohmann::json ReviewUntil(AdmissionHandler& handler, const std::string& review,
                                  const std::function<bool(const nlohmann::json&)>& done) {
  std::string body = ReadSourceFile(review);
  auto deadline = std::chrono::steady_clock::now() + kPatience;
  for (;;) {
    HandlerAnswer a = handler.Handle("application/json", body);
    EXPECT_EQ(a.status, 200) << a.body;
    nlohmann::json answer = nlohmann::json::parse(a.body, nullptr, false);
    EXPECT_EQ(answer["response"]["allowed"], true) << a.body;
    if (done(answer) || std::chrono::steady_clock::now() > deadline) return answer;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

inline bool Patched(const nlohmann::json& answer) { return answer["response"].contains("patch"); }

}  // namespace gpuadmit::testing
