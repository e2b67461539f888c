// An in-process network of members for tests, with faults injected per link
// (from, to, stream): drop, duplicate, delay (random delays reorder), and
// partitions. Every decision comes from a per-link generator seeded from the
// network's seed, so a failing run is reproduced by its seed (the timing of
// threads still varies; the faults each link sees do not).
//
// Accepts and their replies are delivered by one scheduler thread in order of
// delivery time (ties in send order, so a link without delay is FIFO).
// Calls (Promise, Control, Snapshot) run on the caller's thread and fail with
// UNAVAILABLE across a partition, to a crashed member, or when dropped.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <random>
#include <set>
#include <shared_mutex>
#include <thread>
#include <tuple>
#include <vector>

#include "transport.h"

namespace rolis::replication {

struct LinkFaults {
  double drop = 0;       // probability that a message is lost
  double duplicate = 0;  // probability that it is delivered twice
  std::chrono::microseconds delay_min{0};
  std::chrono::microseconds delay_max{0};  // uniform in [min, max]: reorders when min < max
};

class LocalNetwork {
 public:
  explicit LocalNetwork(uint64_t seed);
  ~LocalNetwork();

  // The transport of member `id` (one per member; Bind attaches its handler).
  std::unique_ptr<Transport> Connect(uint32_t id);

  // Faults of messages from `from` to `to` (both directions of a call use
  // the link of their direction). stream = nullopt: every stream and calls.
  void SetFaults(uint32_t from, uint32_t to, std::optional<uint32_t> stream, LinkFaults f);
  void SetAllFaults(LinkFaults f);  // every link, replacing per-link settings
  // Cuts every link between `side` and the other members (both ways).
  void Partition(const std::set<uint32_t>& side);
  // Cuts one direction only.
  void Cut(uint32_t from, uint32_t to, bool cut);
  void Heal();  // removes partitions and cuts (faults stay)

  struct Stats {
    uint64_t sent = 0, delivered = 0, dropped = 0, duplicated = 0, partitioned = 0;
  };
  Stats stats() const;

 private:
  class Endpoint;
  friend class Endpoint;
  struct Bound {
    std::shared_mutex mu;  // shared while delivering; exclusive to unbind
    ReplicaHandler* handler = nullptr;
  };
  struct Event {
    SteadyClock::time_point at;
    uint64_t seq;
    std::function<void()> fn;
    bool operator>(const Event& o) const { return std::tie(at, seq) > std::tie(o.at, o.seq); }
  };
  using LinkKey = std::tuple<uint32_t, uint32_t, uint32_t>;  // from, to, stream (kCalls for calls)
  static constexpr uint32_t kCalls = 0xFFFFFFFF;

  void Bind(uint32_t id, ReplicaHandler* h);
  void Unbind(uint32_t id);
  std::shared_ptr<Bound> BoundOf(uint32_t id);
  // Decides the fate of one message on a link: copies to deliver (0, 1 or 2)
  // and their delays. Under mu_.
  int Decide(uint32_t from, uint32_t to, uint32_t stream, std::chrono::microseconds delays[2]);
  void Schedule(std::chrono::microseconds delay, std::function<void()> fn);  // under mu_
  void Run();

  void SendAccept(uint32_t from, uint32_t to, const AcceptMsg& m);
  Status Call(uint32_t from, uint32_t to, const std::function<void(ReplicaHandler*)>& fn);

  const uint64_t seed_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint32_t, std::shared_ptr<Bound>> bound_;
  std::map<LinkKey, LinkFaults> faults_;
  std::optional<LinkFaults> all_faults_;
  std::map<LinkKey, std::mt19937_64> rngs_;
  std::set<std::pair<uint32_t, uint32_t>> cut_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> queue_;
  uint64_t seq_ = 0;
  Stats stats_;
  bool stop_ = false;
  std::thread runner_;
};

}  // namespace rolis::replication
