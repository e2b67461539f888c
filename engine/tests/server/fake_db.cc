#include "fake_db.h"

#include <algorithm>
#include <atomic>
#include <optional>

#include "rolis/txn_encoding.h"

namespace rolis::testing {
namespace {

class FakeDatabase;

struct Record {
  std::string value;
  uint64_t version = 0;
};

class FakeTable final : public Table {
 public:
  FakeTable(TableId id, std::string name) : Table(id, std::move(name)) {}
  std::map<std::string, Record, std::less<>> rows;
  uint64_t structure_version = 0;  // bumped on every insert or delete
};

class FakeDatabase;

class FakeWorker final : public Worker {
 public:
  FakeWorker(FakeDatabase* db, WorkerId id, bool one_txn) : db_(db), id_(id), one_txn_(one_txn) {}
  WorkerId id() const override { return id_; }
  std::unique_ptr<Transaction> Begin() override;
  std::unique_ptr<Transaction> BeginReadOnly() override;
  void Quiesce() override { quiesced_++; }

  FakeDatabase* db_;
  WorkerId id_;
  bool one_txn_;
  std::atomic<int> open_{0};
  std::atomic<int> quiesced_{0};
};

class FakeDatabase final : public Database {
 public:
  FakeDatabase(const Options& options, FakeOptions fake) : options_(options), fake_(fake) {}

  Status CreateTable(std::string_view name, Table** table) override {
    std::lock_guard<std::mutex> g(mu_);
    for (auto& t : tables_) {
      if (t->name() == name) return Status::AlreadyExists("table exists");
    }
    tables_.push_back(std::make_unique<FakeTable>(static_cast<TableId>(tables_.size()), std::string(name)));
    *table = tables_.back().get();
    return Status::OK();
  }
  Status GetTable(std::string_view name, Table** table) override {
    std::lock_guard<std::mutex> g(mu_);
    for (auto& t : tables_) {
      if (t->name() == name) {
        *table = t.get();
        return Status::OK();
      }
    }
    return Status::NotFound("no table");
  }
  Status GetTable(TableId id, Table** table) override {
    std::lock_guard<std::mutex> g(mu_);
    if (id >= tables_.size()) return Status::NotFound("no table");
    *table = tables_[id].get();
    return Status::OK();
  }
  std::unique_ptr<Worker> RegisterWorker() override {
    std::lock_guard<std::mutex> g(mu_);
    if (next_worker_ >= options_.max_workers) return nullptr;
    return std::make_unique<FakeWorker>(this, next_worker_++, fake_.one_txn_per_worker);
  }
  Status ApplyReplicated(Worker*, const WriteRecord&, uint64_t, uint64_t) override {
    return Status::Internal("not in the fake");
  }
  const Limits& limits() const override { return options_.limits; }
  DatabaseStats Stats() const override {
    std::lock_guard<std::mutex> g(mu_);
    DatabaseStats s;
    s.commits = commits_;
    s.aborts = aborts_;
    for (auto& t : tables_) s.live_records += t->rows.size();
    s.live_versions = s.live_records;
    return s;
  }

  Options options_;
  FakeOptions fake_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<FakeTable>> tables_;
  uint32_t next_worker_ = 0;
  uint64_t clock_ = 0;
  uint64_t commits_ = 0;
  uint64_t aborts_ = 0;
};

class FakeTxn final : public Transaction {
 public:
  FakeTxn(FakeWorker* w, bool read_only, bool refused) : w_(w), read_only_(read_only), refused_(refused) {
    if (!refused_) w_->open_++;
  }
  ~FakeTxn() override { End(); }

  Status Get(Table* table, std::string_view key, std::string* value) override {
    if (Status s = Usable(); !s.ok()) return s;
    if (key.empty() || key.size() > db()->options_.limits.max_key_bytes) return Status::InvalidArgument("key");
    auto* t = static_cast<FakeTable*>(table);
    auto wit = writes_.find({t, std::string(key)});
    if (wit != writes_.end()) {
      if (!wit->second) return Status::NotFound("absent");
      *value = *wit->second;
      return Status::OK();
    }
    std::lock_guard<std::mutex> g(db()->mu_);
    auto it = t->rows.find(key);
    reads_.push_back({t, std::string(key), it == t->rows.end() ? 0 : it->second.version});
    if (it == t->rows.end()) return Status::NotFound("absent");
    max_read_ts_ = std::max(max_read_ts_, it->second.version);
    *value = it->second.value;
    return Status::OK();
  }

  Status Scan(Table* table, std::string_view begin, std::string_view end, size_t limit,
              const ScanVisitor& visit) override {
    if (Status s = Usable(); !s.ok()) return s;
    auto* t = static_cast<FakeTable*>(table);
    std::map<std::string, std::string> view;
    {
      std::lock_guard<std::mutex> g(db()->mu_);
      scans_.push_back({t, t->structure_version});
      for (auto it = t->rows.lower_bound(begin); it != t->rows.end(); ++it) {
        if (!end.empty() && it->first >= end) break;
        view[it->first] = it->second.value;
        reads_.push_back({t, it->first, it->second.version});
        max_read_ts_ = std::max(max_read_ts_, it->second.version);
      }
    }
    for (auto& [k, v] : writes_) {
      if (k.first != t || k.second < begin || (!end.empty() && k.second >= end)) continue;
      if (v) view[k.second] = *v;
      else view.erase(k.second);
    }
    size_t n = 0;
    for (auto& [k, v] : view) {
      if (limit != 0 && n++ >= limit) break;
      if (!visit(k, v)) break;
    }
    return Status::OK();
  }

  Status Put(Table* table, std::string_view key, std::string_view value) override {
    if (Status s = Writable(key, value); !s.ok()) return s;
    writes_[{static_cast<FakeTable*>(table), std::string(key)}] = std::string(value);
    return Status::OK();
  }

  Status Insert(Table* table, std::string_view key, std::string_view value) override {
    std::string v;
    Status s = Get(table, key, &v);
    if (s.ok()) return Status::AlreadyExists("present");
    if (!s.IsNotFound()) return s;
    return Put(table, key, value);
  }

  Status Delete(Table* table, std::string_view key) override {
    if (Status s = Writable(key, ""); !s.ok()) return s;
    std::string v;
    Status s = Get(table, key, &v);
    if (!s.ok()) return s;
    writes_[{static_cast<FakeTable*>(table), std::string(key)}] = std::nullopt;
    return Status::OK();
  }

  Status Commit() override {
    if (Status s = Usable(); !s.ok()) return s;
    FakeDatabase* d = db();
    std::vector<WriteRecord> records;
    {
      std::lock_guard<std::mutex> g(d->mu_);
      for (auto& r : reads_) {
        auto it = r.table->rows.find(r.key);
        uint64_t now = it == r.table->rows.end() ? 0 : it->second.version;
        if (now != r.version) {
          d->aborts_++;
          End();
          return Status::Aborted("read validation failed");
        }
      }
      for (auto& s : scans_) {
        if (s.table->structure_version != s.version) {
          d->aborts_++;
          End();
          return Status::Aborted("phantom");
        }
      }
      if (!writes_.empty() && !read_only_) {
        commit_ts_ = ++d->clock_;
        for (auto& [k, v] : writes_) {
          FakeTable* t = k.first;
          auto it = t->rows.find(k.second);
          if (v) {
            if (it == t->rows.end()) {
              t->structure_version++;
              it = t->rows.emplace(k.second, Record{}).first;
            }
            it->second.value = *v;
            it->second.version = commit_ts_;
          } else if (it != t->rows.end()) {
            t->rows.erase(it);
            t->structure_version++;
          }
          records.push_back({t->id(), k.second, v ? std::string_view(*v) : std::string_view(), !v.has_value()});
        }
      }
      d->commits_++;
    }
    if (!records.empty() && d->options_.commit_hook != nullptr) {
      d->options_.commit_hook->OnCommit(w_->id(), commit_ts_, txn_encoding::RecordsView(commit_ts_, records));
    }
    End();
    return Status::OK();
  }

  void Abort() override { End(); }
  uint64_t commit_ts() const override { return commit_ts_; }
  uint64_t max_read_ts() const override { return max_read_ts_; }
  bool read_only() const override { return read_only_; }

 private:
  struct Read {
    FakeTable* table;
    std::string key;
    uint64_t version;
  };
  struct ScanRead {
    FakeTable* table;
    uint64_t version;
  };

  FakeDatabase* db() const { return w_->db_; }
  Status Usable() const {
    if (refused_) return Status::FailedPrecondition("worker has an open transaction");
    if (done_) return Status::FailedPrecondition("transaction has ended");
    return Status::OK();
  }
  Status Writable(std::string_view key, std::string_view value) const {
    if (Status s = Usable(); !s.ok()) return s;
    if (read_only_) return Status::FailedPrecondition("read-only transaction");
    const Limits& l = db()->options_.limits;
    if (key.empty() || key.size() > l.max_key_bytes) return Status::InvalidArgument("key size");
    if (value.size() > l.max_value_bytes) return Status::InvalidArgument("value size");
    if (writes_.size() >= l.max_write_set) return Status::ResourceExhausted("write set");
    return Status::OK();
  }
  void End() {
    if (!done_ && !refused_) w_->open_--;
    done_ = true;
  }

  FakeWorker* w_;
  bool read_only_;
  bool refused_;
  bool done_ = false;
  uint64_t commit_ts_ = 0;
  uint64_t max_read_ts_ = 0;
  std::vector<Read> reads_;
  std::vector<ScanRead> scans_;
  std::map<std::pair<FakeTable*, std::string>, std::optional<std::string>> writes_;
};

std::unique_ptr<Transaction> FakeWorker::Begin() {
  bool refused = one_txn_ && open_.load() > 0;
  return std::make_unique<FakeTxn>(this, false, refused);
}

std::unique_ptr<Transaction> FakeWorker::BeginReadOnly() {
  bool refused = one_txn_ && open_.load() > 0;
  return std::make_unique<FakeTxn>(this, true, refused);
}

}  // namespace

std::unique_ptr<Database> OpenFakeDatabase(const Options& options, FakeOptions fake) {
  return std::make_unique<FakeDatabase>(options, fake);
}

}  // namespace rolis::testing
