#include "fault_transport.h"

namespace rolis::replication {

class LocalNetwork::Endpoint final : public Transport {
 public:
  Endpoint(LocalNetwork* net, uint32_t id) : net_(net), id_(id) {}
  ~Endpoint() override { net_->Unbind(id_); }

  void Bind(ReplicaHandler* local) override { net_->Bind(id_, local); }
  void Stop() override { net_->Unbind(id_); }
  void SendAccept(uint32_t peer, const AcceptMsg& m) override { net_->SendAccept(id_, peer, m); }
  Status Promise(uint32_t peer, const PromiseMsg& m, PromiseReply* r, std::chrono::milliseconds) override {
    return net_->Call(id_, peer, [&](ReplicaHandler* h) { *r = h->HandlePromise(m); });
  }
  Status Control(uint32_t peer, const ControlMsg& m, ControlReply* r, std::chrono::milliseconds) override {
    return net_->Call(id_, peer, [&](ReplicaHandler* h) { *r = h->HandleControl(m); });
  }
  Status Snapshot(uint32_t peer, const SnapshotMsg& m, SnapshotSink* sink, std::chrono::milliseconds) override {
    Status served;
    Status s = net_->Call(id_, peer, [&](ReplicaHandler* h) { served = h->HandleSnapshot(m, sink); });
    return s.ok() ? served : s;
  }

 private:
  LocalNetwork* net_;
  uint32_t id_;
};

LocalNetwork::LocalNetwork(uint64_t seed) : seed_(seed) { runner_ = std::thread([this] { Run(); }); }

LocalNetwork::~LocalNetwork() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  runner_.join();
}

std::unique_ptr<Transport> LocalNetwork::Connect(uint32_t id) { return std::make_unique<Endpoint>(this, id); }

void LocalNetwork::Bind(uint32_t id, ReplicaHandler* h) {
  std::shared_ptr<Bound> b;
  {
    std::lock_guard<std::mutex> g(mu_);
    auto& slot = bound_[id];
    if (!slot) slot = std::make_shared<Bound>();
    b = slot;
  }
  std::unique_lock<std::shared_mutex> w(b->mu);
  b->handler = h;
}

void LocalNetwork::Unbind(uint32_t id) {
  std::shared_ptr<Bound> b = BoundOf(id);
  if (!b) return;
  std::unique_lock<std::shared_mutex> w(b->mu);  // waits for deliveries in progress
  b->handler = nullptr;
}

std::shared_ptr<LocalNetwork::Bound> LocalNetwork::BoundOf(uint32_t id) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = bound_.find(id);
  return it == bound_.end() ? nullptr : it->second;
}

void LocalNetwork::SetFaults(uint32_t from, uint32_t to, std::optional<uint32_t> stream, LinkFaults f) {
  std::lock_guard<std::mutex> g(mu_);
  if (stream) {
    faults_[{from, to, *stream}] = f;
  } else {
    // Every stream this network has seen or will see: a wildcard entry.
    faults_[{from, to, kCalls}] = f;
    for (auto& [k, v] : faults_) {
      if (std::get<0>(k) == from && std::get<1>(k) == to) v = f;
    }
  }
}

void LocalNetwork::SetAllFaults(LinkFaults f) {
  std::lock_guard<std::mutex> g(mu_);
  faults_.clear();
  all_faults_ = f;
}

void LocalNetwork::Partition(const std::set<uint32_t>& side) {
  std::lock_guard<std::mutex> g(mu_);
  std::set<uint32_t> all;
  for (auto& [id, b] : bound_) all.insert(id);
  for (uint32_t a : side) {
    for (uint32_t b : all) {
      if (side.count(b)) continue;
      cut_.insert({a, b});
      cut_.insert({b, a});
    }
  }
}

void LocalNetwork::Cut(uint32_t from, uint32_t to, bool cut) {
  std::lock_guard<std::mutex> g(mu_);
  if (cut) {
    cut_.insert({from, to});
  } else {
    cut_.erase({from, to});
  }
}

void LocalNetwork::Heal() {
  std::lock_guard<std::mutex> g(mu_);
  cut_.clear();
}

LocalNetwork::Stats LocalNetwork::stats() const {
  std::lock_guard<std::mutex> g(mu_);
  return stats_;
}

int LocalNetwork::Decide(uint32_t from, uint32_t to, uint32_t stream, std::chrono::microseconds delays[2]) {
  stats_.sent++;
  if (cut_.count({from, to})) {
    stats_.partitioned++;
    return 0;
  }
  LinkKey key{from, to, stream};
  LinkFaults f;
  if (auto it = faults_.find(key); it != faults_.end()) {
    f = it->second;
  } else if (auto w = faults_.find({from, to, kCalls}); w != faults_.end()) {
    f = w->second;
  } else if (all_faults_) {
    f = *all_faults_;
  }
  auto [rit, fresh] = rngs_.try_emplace(key);
  if (fresh) {
    std::seed_seq seq{seed_, static_cast<uint64_t>(from), static_cast<uint64_t>(to), static_cast<uint64_t>(stream)};
    rit->second.seed(seq);
  }
  std::mt19937_64& rng = rit->second;
  std::uniform_real_distribution<double> u(0, 1);
  // Draw every number whatever the outcome, so one link's sequence of
  // decisions does not depend on the settings of the others.
  double pd = u(rng), pdup = u(rng), d0 = u(rng), d1 = u(rng);
  if (pd < f.drop) {
    stats_.dropped++;
    return 0;
  }
  auto span = (f.delay_max - f.delay_min).count();
  delays[0] = f.delay_min + std::chrono::microseconds(static_cast<int64_t>(d0 * std::max<int64_t>(span, 0)));
  delays[1] = f.delay_min + std::chrono::microseconds(static_cast<int64_t>(d1 * std::max<int64_t>(span, 0)));
  if (pdup < f.duplicate) {
    stats_.duplicated++;
    return 2;
  }
  return 1;
}

void LocalNetwork::Schedule(std::chrono::microseconds delay, std::function<void()> fn) {
  queue_.push(Event{SteadyClock::now() + delay, seq_++, std::move(fn)});
}

void LocalNetwork::SendAccept(uint32_t from, uint32_t to, const AcceptMsg& m) {
  std::lock_guard<std::mutex> g(mu_);
  std::chrono::microseconds delays[2];
  int n = Decide(from, to, m.stream, delays);
  for (int i = 0; i < n; i++) {
    Schedule(delays[i], [this, from, to, m] {
      std::shared_ptr<Bound> target = BoundOf(to);
      if (!target) return;
      AcceptReply r;
      {
        std::shared_lock<std::shared_mutex> rd(target->mu);
        if (!target->handler) return;
        r = target->handler->HandleAccept(m);
      }
      std::lock_guard<std::mutex> g2(mu_);
      stats_.delivered++;
      std::chrono::microseconds back[2];
      int k = Decide(to, from, m.stream, back);
      for (int j = 0; j < k; j++) {
        Schedule(back[j], [this, from, to, r] {
          std::shared_ptr<Bound> sender = BoundOf(from);
          if (!sender) return;
          std::shared_lock<std::shared_mutex> rd(sender->mu);
          if (sender->handler) sender->handler->OnAcceptReply(to, r);
        });
      }
    });
  }
  cv_.notify_one();
}

Status LocalNetwork::Call(uint32_t from, uint32_t to, const std::function<void(ReplicaHandler*)>& fn) {
  std::chrono::microseconds delays[2];
  {
    std::lock_guard<std::mutex> g(mu_);
    if (Decide(from, to, kCalls, delays) == 0 || Decide(to, from, kCalls, delays + 1) == 0) {
      return Status(StatusCode::kInternal, "unavailable: dropped or partitioned");
    }
  }
  std::shared_ptr<Bound> target = BoundOf(to);
  if (!target) return Status(StatusCode::kInternal, "unavailable: no such member");
  if (delays[0].count() > 0) std::this_thread::sleep_for(delays[0]);
  std::shared_lock<std::shared_mutex> rd(target->mu);
  if (!target->handler) return Status(StatusCode::kInternal, "unavailable: member is down");
  fn(target->handler);
  rd.unlock();
  if (delays[1].count() > 0) std::this_thread::sleep_for(delays[1]);  // the reply's way back
  return Status::OK();
}

void LocalNetwork::Run() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_) {
    if (queue_.empty()) {
      cv_.wait(lk);
      continue;
    }
    auto at = queue_.top().at;
    if (SteadyClock::now() < at) {
      cv_.wait_until(lk, at);
      continue;
    }
    std::function<void()> fn = std::move(const_cast<Event&>(queue_.top()).fn);
    queue_.pop();
    lk.unlock();
    fn();
    lk.lock();
  }
}

}  // namespace rolis::replication
