#include "webhook/kube/kube_source.h"

#include <utility>

namespace gpuadmit {

Result<KubeSource> StartKubeSource(const KubeConfig& config, const Clock& clock, Logger& log,
                                   SnapshotPublisher& publisher, SharedLedger& ledger,
                                   KubeInventoryOptions options) {
  KubeSource s;
  auto nodes = KubeClient::Create(config);
  if (!nodes.ok()) return nodes.error();
  auto pods = KubeClient::Create(config);
  if (!pods.ok()) return pods.error();
  s.nodes_client = std::move(nodes).value();
  s.pods_client = std::move(pods).value();
  for (auto* client :
       {&s.slices_client, &s.claims_client, &s.classes_client, &s.templates_client}) {
    auto made = KubeClient::Create(config);
    if (!made.ok()) return made.error();
    *client = std::move(made).value();
  }
  const DraApis dra{*s.slices_client, *s.claims_client, *s.classes_client, *s.templates_client};
  s.inventory = std::make_unique<KubeInventory>(
      *s.nodes_client, *s.pods_client, clock, log, std::move(options),
      [&publisher](std::shared_ptr<const InventorySnapshot> snapshot) {
        publisher.Publish(std::move(snapshot));
      },
      &ledger, &dra);
  publisher.handler().SetStalenessCheck(
      [inventory = s.inventory.get()] { return inventory->Stale(); });
  s.inventory->Start();
  log.Info("watching the Kubernetes API for nodes, pods and DRA devices",
           {{"server", config.server}});
  return s;
}

}  // namespace gpuadmit
