#include "webhook/admission/snapshot_publisher.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "tests/fakes/test_cluster.h"

namespace gpuadmit {
namespace {

class SnapshotPublisherTest : public ::testing::Test {
 protected:
  SnapshotPublisherTest() : log_(LogLevel::kError), handler_(log_, metrics_) {
    (void)reservations_.Commit("uid-1", "ml/pod", {{"gpu-b", "nvidia.com/gpu", 1, 4}});
  }

  std::shared_ptr<const InventorySnapshot> TwoNodes() {
    return std::make_shared<const InventorySnapshot>(testing::SnapshotOf(
        testing::ListOf({testing::GpuNode("gpu-a", 2), testing::GpuNode("gpu-b", 4)})));
  }

  Logger log_;
  Metrics metrics_;
  AdmissionHandler handler_;
  ReservationLedger ledger_{std::chrono::seconds(30)};
  LedgerReservations reservations_{ledger_};
};

TEST_F(SnapshotPublisherTest, HandsTheSnapshotToDecisionsAndItsGaugesToMetricsAndStatus) {
  SnapshotPublisher publisher(handler_, metrics_, &reservations_, {});
  EXPECT_EQ(publisher.gauges(), nullptr);
  std::shared_ptr<const InventorySnapshot> snapshot = TwoNodes();
  publisher.Publish(snapshot);

  EXPECT_EQ(handler_.snapshot(), snapshot);
  EXPECT_EQ(metrics_.Value(Counter::kSnapshots), 1u);
  ASSERT_NE(publisher.gauges(), nullptr);
  const ResourceGauges& gpus = publisher.gauges()->cluster.at("nvidia.com/gpu");
  EXPECT_EQ(gpus.allocatable, 6);
  EXPECT_EQ(gpus.reserved, 1);  // the ledger's
  EXPECT_EQ(gpus.free, 5);
  EXPECT_TRUE(publisher.gauges()->nodes.empty());

  std::string text = metrics_.Render();
  EXPECT_NE(text.find("gpuadmit_cluster_resource_free{resource=\"nvidia.com/gpu\"} 5\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("node=\""), std::string::npos);
}

TEST_F(SnapshotPublisherTest, PerNodeExportsEachNodesGaugesButKeepsOnlyTheClusterForStatus) {
  SnapshotPublisher publisher(handler_, metrics_, &reservations_, {.per_node = true});
  publisher.Publish(TwoNodes());
  std::string text = metrics_.Render();
  EXPECT_NE(
      text.find("gpuadmit_cluster_resource_free{node=\"gpu-b\",resource=\"nvidia.com/gpu\"} 3\n"),
      std::string::npos)
      << text;
  EXPECT_NE(
      text.find("gpuadmit_cluster_resource_free{node=\"gpu-a\",resource=\"nvidia.com/gpu\"} 2\n"),
      std::string::npos);
  EXPECT_TRUE(publisher.gauges()->nodes.empty());
}

TEST_F(SnapshotPublisherTest, WithoutALedgerNothingIsReserved) {
  SnapshotPublisher publisher(handler_, metrics_, nullptr, {});
  publisher.Publish(TwoNodes());
  EXPECT_EQ(publisher.gauges()->cluster.at("nvidia.com/gpu").reserved, 0);
  EXPECT_EQ(publisher.gauges()->cluster.at("nvidia.com/gpu").free, 6);
}

}  // namespace
}  // namespace gpuadmit
