// KubeSource: serve's live inventory from the Kubernetes API, wired into the admission handler:
// a client per kind watched (each reflector holds a watch open), a KubeInventory that publishes each snapshot
// through the publisher and releases arrived reservations from the ledger, and the handler's
// staleness check reading the inventory. `gpuadmit serve` and the fault tests build it the same
// way.
//
//   auto source = StartKubeSource(config, clock, log, publisher, ledger);
//   if (!source.ok()) -> source.error().message
//   ... source.value().inventory->Synced() ...   // stops when destroyed
//
// Degraded modes are the inventory's: an API that is down, slow or answering errors leaves the
// handler without a snapshot (not ready) or with the last one, and stale past the limit.
//
// Thread safety: as KubeInventory's. The publisher (and its handler), clock, log and ledger must
// outlive the source, and the handler must not Handle() after the source is destroyed (its
// staleness check reads it).
#pragma once

#include <memory>

#include "core/result.h"
#include "webhook/admission/admission_handler.h"
#include "webhook/admission/shared_ledger.h"
#include "webhook/admission/snapshot_publisher.h"
#include "webhook/kube/kube_client.h"
#include "webhook/kube/kube_config.h"
#include "webhook/kube/kube_inventory.h"
#include "webhook/os/clock.h"
#include "webhook/telemetry/log.h"

namespace gpuadmit {

struct KubeSource {
  std::unique_ptr<KubeClient> nodes_client;
  std::unique_ptr<KubeClient> pods_client;
  // ResourceSlices, ResourceClaims, DeviceClasses, ResourceClaimTemplates: a cluster that does not serve
  // resource.k8s.io/v1 answers 404, which counts as none.
  std::unique_ptr<KubeClient> slices_client;
  std::unique_ptr<KubeClient> claims_client;
  std::unique_ptr<KubeClient> classes_client;
  std::unique_ptr<KubeClient> templates_client;
  std::unique_ptr<KubeInventory> inventory;  // last: destroyed (stopped) before the clients
};

// Makes the clients for `config` and starts the inventory, publishing through `publisher`. It
// returns at once: the first list happens on the inventory's threads, and failures there are
// retried with backoff, never returned. Errors: a client that cannot be made (a bad CA, key
// or token file).
Result<KubeSource> StartKubeSource(const KubeConfig& config, const Clock& clock, Logger& log,
                                   SnapshotPublisher& publisher, SharedLedger& ledger,
                                   KubeInventoryOptions options = {});

}  // namespace gpuadmit
