#include "webhook/cli/leader_routing.h"

#include <nlohmann/json.hpp>

#include "core/json/json_reader.h"

namespace gpuadmit {

Result<std::unique_ptr<LeaderRouting>> LeaderRouting::Start(const LeaderRoutingSettings& settings,
                                                            const KubeConfig& config,
                                                            AdmissionHandler& handler,
                                                            Metrics& metrics, Logger& log) {
  std::unique_ptr<LeaderRouting> self(new LeaderRouting(handler, metrics, log));
  auto forwarder = ReviewForwarder::Create(
      {settings.peer_ca, settings.peer_name, settings.tls_cert, settings.tls_key});
  if (!forwarder.ok()) return Error{"--leader-elect: " + forwarder.error().message};
  self->forwarder_ = std::move(forwarder).value();
  auto client = KubeClient::Create(config);
  if (!client.ok()) return Error{"--leader-elect: " + client.error().message};
  self->client_ = std::move(client).value();
  self->lock_ =
      std::make_unique<LeaseLock>(*self->client_, settings.lease_namespace, settings.lease_name);
  LeaderElectionOptions options = settings.timing;
  options.identity = settings.identity;
  options.address = settings.advertise;
  self->identity_ = settings.identity;
  self->replicas_ = settings.replicas;
  self->elector_ =
      std::make_unique<LeaderElector>(*self->lock_, self->clock_, log, metrics, options);
  log.Info("leader election: started",
           {{"lease", settings.lease_namespace + "/" + settings.lease_name},
            {"identity", settings.identity},
            {"advertise", settings.advertise},
            {"verify", settings.peer_name}});
  self->elector_->Start();
  return self;
}

LeaderRouting::~LeaderRouting() {
  if (elector_) elector_->Stop();
}

std::optional<HandlerAnswer> LeaderRouting::Route(std::string_view content_type,
                                                  std::string_view body, bool forwarded,
                                                  std::string_view scope) {
  if (forwarded || elector_->IsLeader()) return std::nullopt;
  // What the handler refuses anyway (empty, too big, not JSON) it refuses here too.
  if (body.empty() || body.size() > kMaxReviewBody || !IsJsonContentType(content_type)) {
    return std::nullopt;
  }
  if (IsDryRunReview(body)) return std::nullopt;  // reserves nothing: no ledger to share
  std::string leader = elector_->LeaderAddress();
  if (leader.empty()) {
    return DecideHere(content_type, body, scope, Counter::kForwardNoLeader, "no leader");
  }
  auto start = std::chrono::steady_clock::now();
  auto answer = forwarder_->Forward(leader, body, scope);
  if (!answer.ok()) {
    return DecideHere(content_type, body, scope, Counter::kForwardLeaderFailed,
                      answer.error().message);
  }
  metrics_.ObserveForward(std::chrono::steady_clock::now() - start);
  metrics_.Inc(Counter::kForwardedAnswered);
  return HandlerAnswer{200, std::move(answer).value()};
}

HandlerAnswer LeaderRouting::DecideHere(std::string_view content_type, std::string_view body,
                                        std::string_view scope, Counter why,
                                        const std::string& reason) {
  metrics_.Inc(why);
  int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
  int64_t last = last_warned_ns_.load();
  if (now - last >= std::chrono::nanoseconds(std::chrono::seconds(10)).count() &&
      last_warned_ns_.compare_exchange_strong(last, now)) {
    log_.Warn("review decided without the leader",
              {{"reason", reason}, {"since_last_line", std::to_string(unlogged_.exchange(0))}});
  } else {
    unlogged_.fetch_add(1);
  }
  HandlerAnswer a = handler_.Handle(content_type, body, replicas_, scope);
  if (a.status == 200) {
    AddReviewWarning(a.body, "gpuadmit: decided by replica " + identity_ + " without the leader (" +
                                 reason + "), on its share (1/" + std::to_string(replicas_) +
                                 ") of the free devices");
  }
  return a;
}

bool IsDryRunReview(std::string_view body) {
  constexpr std::string_view kKey = "\"dryRun\"";
  for (size_t at = body.find(kKey); at != std::string_view::npos; at = body.find(kKey, at + 1)) {
    size_t i = at + kKey.size();
    auto skip_space = [&] {
      while (i < body.size() &&
             (body[i] == ' ' || body[i] == '\n' || body[i] == '\t' || body[i] == '\r')) {
        ++i;
      }
    };
    skip_space();
    if (i >= body.size() || body[i] != ':') continue;  // a value "dryRun", not the key
    ++i;
    skip_space();
    if (body.substr(i, 4) == "true") return true;
  }
  return false;
}

void AddReviewWarning(std::string& body, const std::string& warning) {
  auto doc = ParseJson(body);
  if (!doc.ok() || !doc.value().is_object() || !doc.value().contains("response")) return;
  nlohmann::json& response = doc.value()["response"];
  if (!response.is_object()) return;
  if (!response.contains("warnings") || !response["warnings"].is_array()) {
    response["warnings"] = nlohmann::json::array();
  }
  response["warnings"].push_back(warning);
  body = doc.value().dump();
}

}  // namespace gpuadmit
