#include <algorithm>
#include <cstring>
#include <span>
#include <type_traits>

#include "alloc.h"
#include "commit_view.h"
#include "rolis/copy_bytes.h"
#include "rolis/value_patch.h"
#include "txn_impl.h"

namespace rolis::core {
namespace {

Status NotFoundStatus() { return Status(StatusCode::kNotFound, "key not found"); }

// out = [p, p + len), without the general string replace path when the
// buffer is already large enough (the common case for a reused buffer).
inline void CopyValue(std::string* out, const char* p, size_t len) {
  if (len <= out->capacity()) {
    out->resize(len);
    std::memcpy(out->data(), p, len);
  } else {
    out->assign(p, len);
  }
}

struct TxnBlockCache {
  static constexpr int kMax = 4;
  void* blocks[kMax];
  int n = 0;
  ~TxnBlockCache() {
    while (n > 0) Free(blocks[--n]);
  }
};
thread_local TxnBlockCache txn_blocks;

// Where a read puts the value. Volatile(p, n): p is the newest version,
// which a writer may change in place (a copy must be taken now, before the
// caller's version check). Stable(p, n): p is an immutable old version that
// lives while the transaction is open (it may be referenced).
struct StringSink {
  static constexpr bool kWants = true;
  std::string* out;  // may be null: the value is not wanted
  void Volatile(const char* p, uint32_t n) const {
    if (out) CopyValue(out, p, n);
  }
  void Stable(const char* p, uint32_t n) const { Volatile(p, n); }
};

struct ViewSink {
  static constexpr bool kWants = true;
  Arena* arena;
  std::string_view* out;
  void Volatile(const char* p, uint32_t n) const { *out = std::string_view(arena->Copy({p, n}), n); }
  void Stable(const char* p, uint32_t n) const { *out = std::string_view(p, n); }
};

// Presence checks (Insert, Delete) read no value.
struct NoValueSink {
  static constexpr bool kWants = false;
  void Volatile(const char*, uint32_t) const {}
  void Stable(const char*, uint32_t) const {}
};

// Consistent read of a record's newest version (OCC). Hands the value to
// the sink when present. False if the record has been unlinked from the
// index (the caller looks the key up again).
template <class Sink>
bool ReadLatest(Record* r, const Sink& sink, uint64_t* word, uint64_t* ts, uint64_t* repl_epoch) {
  uint32_t spins = 0;
  for (;;) {
    uint64_t w1 = r->word.load(std::memory_order_acquire);
    if (w1 & tid::kLock) {
      SpinPause(&spins);
      continue;
    }
    if (!(w1 & tid::kLatest)) return false;
    if (Sink::kWants && !(w1 & tid::kAbsent)) {
      const char* p = r->ValuePtr();
      uint32_t len = Ld(r->vlen);
      if (len > r->CapacityOf(p)) continue;  // torn
      sink.Volatile(p, len);
    }
    uint64_t t = Ld(r->ts);
    uint64_t re = Ld(r->repl_epoch);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (r->word.load(std::memory_order_relaxed) == w1) {
      *word = w1;
      *ts = t;
      *repl_epoch = re;
      return true;
    }
  }
}

// Snapshot read as of snapshot epoch S: the newest version with epoch <= S.
// True if that version is present (its value handed to the sink).
template <class Sink>
bool ReadSnapshot(Record* r, uint64_t S, const Sink& sink, uint64_t* ts) {
  uint32_t spins = 0;
  for (;;) {
    uint64_t w1 = r->word.load(std::memory_order_acquire);
    if (w1 & tid::kLock) {
      SpinPause(&spins);
      continue;
    }
    if (Ld(r->epoch) <= S) {
      bool present = !(w1 & tid::kAbsent);
      if (present) {
        const char* p = r->ValuePtr();
        uint32_t len = Ld(r->vlen);
        if (len > r->CapacityOf(p)) continue;
        sink.Volatile(p, len);
      }
      uint64_t t = Ld(r->ts);
      std::atomic_thread_fence(std::memory_order_acquire);
      if (r->word.load(std::memory_order_relaxed) != w1) continue;
      *ts = t;
      return present;
    }
    Version* v = r->chain.load(std::memory_order_acquire);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (r->word.load(std::memory_order_relaxed) != w1) continue;
    // Versions are immutable; trimming never removes the one S needs (S is
    // registered, so min_snap <= S), and reclamation waits for this
    // transaction's epoch.
    while (v && v->epoch > S) v = v->prev.load(std::memory_order_acquire);
    if (!v || v->absent) {
      *ts = v ? v->ts : 0;
      return false;
    }
    sink.Stable(v->data(), v->len);
    *ts = v->ts;
    return true;
  }
}

}  // namespace

void TxnImpl::NodeSetFixup::OnLeafChanged(Leaf* l, uint64_t before, uint64_t after) {
  for (NodeEntry& n : *nodes) {
    if (n.leaf == l && n.version == before) n.version = after;
  }
}

void TxnImpl::NodeSetFixup::OnLeafSplit(Leaf* l, uint64_t before, uint64_t after, Leaf* nl, uint64_t nv) {
  bool hit = false;
  for (NodeEntry& n : *nodes) {
    if (n.leaf == l && n.version == before) {
      n.version = after;
      hit = true;
    }
  }
  // The keys the transaction saw in l may now live in nl too.
  if (hit) nodes->push_back({nl, nv});
}

void* TxnImpl::operator new(size_t n) {
  TxnBlockCache& c = txn_blocks;
  if (c.n > 0) return c.blocks[--c.n];
  void* p = Alloc(n);
  if (!p) throw std::bad_alloc();
  return p;
}

void TxnImpl::operator delete(void* p) {
  TxnBlockCache& c = txn_blocks;
  if (c.n < TxnBlockCache::kMax) {
    c.blocks[c.n++] = p;
  } else {
    Free(p);
  }
}

TxnImpl::TxnImpl(WorkerImpl* w, Mode mode)
    : w_(w), db_(w->db()), limits_(&w->db()->options().limits), mode_(mode) {
  if (mode != Mode::kRejected) {
    uint64_t snap = 0;
    s_ = w->OpenTxn(this, mode == Mode::kReadOnly, &snap);
    if (mode == Mode::kReadOnly) {
      snap_ = snap;
      if (snap == kIdle) {  // OpenTxn found no snapshot it may read (worker.cc, AwaitVersionedSnapshot)
        w->CloseTxn(this, s_);
        mode_ = Mode::kRejected;
        rejected_why_ = "no snapshot yet: replay overwrote records without their old versions at a newer epoch "
                        "and a transaction of an older epoch is still open here; retry";
      }
    }
  }
  repl_epoch_ = db_->repl_epoch_.load(std::memory_order_acquire);
}

TxnImpl::~TxnImpl() {
  if (usable()) Finish(State::kAborted);
}

// ------------------------------------------------------------- checks

Status TxnImpl::NotUsable() const {
  if (mode_ == Mode::kRejected && rejected_why_ != nullptr) return Status::Aborted(rejected_why_);
  if (mode_ == Mode::kRejected) {
    return Status::ResourceExhausted("too many open transactions on this worker (max_open_txns=" +
                                     std::to_string(limits_->max_open_txns) + ")");
  }
  return Status::FailedPrecondition(state_ == State::kCommitted ? "transaction already committed"
                                                                : "transaction already aborted");
}

Status TxnImpl::CheckTableAndKey(Table* table, std::string_view key, TableImpl** t) const {
  if (__builtin_expect(usable() && table != nullptr && !key.empty() && key.size() <= limits_->max_key_bytes, 1)) {
    *t = db_->Resolve(table);
    if (__builtin_expect(*t != nullptr, 1)) return Status::OK();
  }
  return BadTableOrKey(table, key);
}

Status TxnImpl::BadTableOrKey(Table* table, std::string_view key) const {
  if (!usable()) return NotUsable();
  if (table == nullptr) return Status::InvalidArgument("table is null");
  if (db_->Resolve(table) == nullptr) return Status::InvalidArgument("table does not belong to this database");
  if (key.empty()) return Status::InvalidArgument("key is empty");
  return Status::InvalidArgument("key of " + std::to_string(key.size()) + " bytes exceeds max_key_bytes=" +
                                 std::to_string(limits_->max_key_bytes));
}

Status TxnImpl::CheckWrite(Table* table, std::string_view key, TableImpl** t) const {
  if (!usable()) return NotUsable();
  if (mode_ == Mode::kReadOnly) return Status::FailedPrecondition("write in a read-only transaction");
  return CheckTableAndKey(table, key, t);
}

Status TxnImpl::CheckValue(std::string_view value) const {
  const size_t max = limits_->max_value_bytes;
  if (__builtin_expect(value.size() > max, 0)) {
    return Status::InvalidArgument("value of " + std::to_string(value.size()) +
                                   " bytes exceeds max_value_bytes=" + std::to_string(max));
  }
  return Status::OK();
}

Status TxnImpl::ReadSetFull() const {
  const size_t max = limits_->max_read_set;
  if (__builtin_expect(s_->reads.size() < max, 1)) return Status::OK();
  return Status::ResourceExhausted("read set exceeds max_read_set=" + std::to_string(max));
}

Status TxnImpl::WriteSetFull() const {
  const size_t max = limits_->max_write_set;
  if (__builtin_expect(s_->writes.size() < max, 1)) return Status::OK();
  return Status::ResourceExhausted("write set exceeds max_write_set=" + std::to_string(max));
}

Status TxnImpl::SetsHaveRoom(bool with_read) const {
  if (with_read) {
    if (Status s = ReadSetFull(); !s.ok()) return s;
  }
  return WriteSetFull();
}

// ------------------------------------------------------------- sets

WriteEntry* TxnImpl::FindWrite(const Record* r) {
  auto& ws = s_->writes;
  if (ws.size() <= WriteIndex::kLinearLimit) {
    for (WriteEntry& e : ws) {
      if (e.rec == r) return &e;
    }
    return nullptr;
  }
  int i = s_->windex.Find(r, ws);
  return i < 0 ? nullptr : &ws[static_cast<size_t>(i)];
}

void TxnImpl::AddRead(Record* r, const Observed& o) {
  s_->reads.push_back({r, o.word});
  if (o.ts > max_read_ts_) max_read_ts_ = o.ts;
  // Versions of an older replication epoch are ordered before ours by the
  // epoch; only reads of this epoch constrain our ts.
  if (o.repl_epoch >= repl_epoch_ && o.ts > dep_ts_) dep_ts_ = o.ts;
}

void TxnImpl::AddNode(Leaf* leaf, uint64_t version) {
  auto& ns = s_->nodes;
  if (!ns.empty() && ns.back().leaf == leaf && ns.back().version == version) return;
  ns.push_back({leaf, version});
}

void TxnImpl::AddWrite(const WriteEntry& e) {
  auto& ws = s_->writes;
  ws.push_back(e);
  s_->windex.Add(e.rec, static_cast<uint32_t>(ws.size() - 1), ws);
}

Record* TxnImpl::FindOrCreate(TableImpl* t, const KeyRef& k, uint32_t value_cap, bool with_read, bool* created) {
  // One descent: a present key is returned as it is; an absent one gets an
  // absent placeholder record (if the sets have room for its entries).
  Record* made = nullptr;
  NodeSetFixup fix{&s_->nodes};
  Record* r = t->tree.FindOrInsert(
      k,
      [&]() -> Record* {
        if (!SetsHaveRoom(with_read).ok()) return nullptr;
        return NewRecord(k.view(), value_cap);
      },
      &made, &fix);
  *created = r != nullptr && r == made;
  if (*created) {
    Bump(w_->slot().records, 1);
  } else if (made) {
    FreeRecord(made);  // another transaction's record won the race; ours was never published
  }
  return r;
}

// ------------------------------------------------------------- reads

Status TxnImpl::Get(Table* table, std::string_view key, std::string* value) {
  StringSink sink{value};
  return GetWith(table, key, sink);
}

Status TxnImpl::GetView(Table* table, std::string_view key, std::string_view* value) {
  if (__builtin_expect(value == nullptr, 0)) return Status::InvalidArgument("value is null");
  *value = std::string_view();
  if (__builtin_expect(!usable(), 0)) return NotUsable();
  ViewSink sink{&s_->arena, value};
  return GetWith(table, key, sink);
}

template <class Sink>
Status TxnImpl::GetWith(Table* table, std::string_view key, Sink& sink) {
  TableImpl* t;
  if (Status s = CheckTableAndKey(table, key, &t); !s.ok()) return s;
  KeyRef k(key);
  // A record this transaction resolved before (Prefetch, an earlier read)
  // needs no descent; txn_prefetch.cc says why it may be used.
  Record* r = FindRecent(t, k);
  if (mode_ == Mode::kReadOnly) {
    if (!r) r = t->tree.Lookup(k).rec;
    if (!r) return NotFoundStatus();
    uint64_t ts = 0;
    bool present = ReadSnapshot(r, snap_, sink, &ts);
    if (ts > max_read_ts_) max_read_ts_ = ts;
    return present ? Status::OK() : NotFoundStatus();
  }
  if (Status s = ReadSetFull(); !s.ok()) return s;
  for (;;) {
    if (!r) {
      BTree::LookupResult lr = t->tree.Lookup(k);
      if (!lr.rec) {
        AddNode(lr.leaf, lr.version);  // absence is a read too (phantoms)
        return NotFoundStatus();
      }
      r = lr.rec;
    }
    if (!s_->writes.empty()) {
      if (WriteEntry* we = FindWrite(r)) {
        Remember(t, k, r);
        if (we->kind == WriteKind::kDelete) return NotFoundStatus();
        sink.Stable(we->val, we->len);  // in our arena until the transaction ends
        return Status::OK();
      }
    }
    Observed o;
    if (!ReadLatest(r, sink, &o.word, &o.ts, &o.repl_epoch)) {
      // Unlinked since the lookup found it: look the key up again.
      r = nullptr;
      continue;
    }
    AddRead(r, o);
    const bool absent = o.word & tid::kAbsent;
    // A value read into the arena is remembered for an Update of the key.
    std::string_view read;
    if constexpr (std::is_same_v<Sink, ViewSink>) {
      if (!absent) read = *sink.out;
    }
    s_->recent.Remember(t->id(), k, r, read);
    return absent ? NotFoundStatus() : Status::OK();
  }
}

Status TxnImpl::Scan(Table* table, std::string_view begin, std::string_view end, size_t limit,
                     const ScanVisitor& visit) {
  if (!usable()) return NotUsable();
  if (table == nullptr) return Status::InvalidArgument("table is null");
  TableImpl* t = db_->Resolve(table);
  if (t == nullptr) return Status::InvalidArgument("table does not belong to this database");
  const size_t max = db_->options().limits.max_key_bytes;
  if (begin.size() > max || end.size() > max) {
    return Status::InvalidArgument("scan bound exceeds max_key_bytes=" + std::to_string(max));
  }
  if (!visit) return Status::InvalidArgument("scan visitor is empty");
  if (!end.empty() && CompareKeys(begin, end) >= 0) return Status::OK();

  // A buffer per nesting level: the visitor may scan again.
  auto& bufs = w_->scan_bufs_;
  if (static_cast<size_t>(w_->scan_depth_) == bufs.size()) bufs.emplace_back();
  std::string& buf = bufs[static_cast<size_t>(w_->scan_depth_)];
  ++w_->scan_depth_;
  struct DepthGuard {
    int* d;
    ~DepthGuard() { --*d; }
  } guard{&w_->scan_depth_};

  const bool ro = mode_ == Mode::kReadOnly;
  size_t seen = 0;
  Status result;
  t->tree.Scan(KeyRef(begin), [&](Leaf* leaf, uint64_t version, Record* const* recs, int n) -> bool {
    if (!ro) AddNode(leaf, version);
    for (int i = 0; i < n; ++i) {
      Record* r = recs[i];
      std::string_view key = r->key();
      if (!end.empty() && CompareKeys(key, end) >= 0) return false;
      std::string_view val;
      if (ro) {
        uint64_t ts = 0;
        if (!ReadSnapshot(r, snap_, StringSink{&buf}, &ts)) continue;
        if (ts > max_read_ts_) max_read_ts_ = ts;
        val = buf;
      } else {
        WriteEntry* we = s_->writes.empty() ? nullptr : FindWrite(r);
        if (we) {
          if (we->kind == WriteKind::kDelete) continue;
          val = std::string_view(we->val, we->len);
        } else {
          if (Status s = ReadSetFull(); !s.ok()) {
            result = s;
            return false;
          }
          Observed o;
          // An unlinked record changed its leaf, which is in the node set.
          if (!ReadLatest(r, StringSink{&buf}, &o.word, &o.ts, &o.repl_epoch)) continue;
          AddRead(r, o);
          // A scan often precedes writes of the keys it read (TPC-C Delivery
          // rewrites the order lines it scanned): they skip the descent.
          Remember(t, KeyRef(key), r);
          if (o.word & tid::kAbsent) continue;
          val = buf;
        }
      }
      ++seen;
      bool more = visit(key, val);
      if (state_ != State::kOpen) {  // the visitor finished the transaction
        result = NotUsable();
        return false;
      }
      if (!more || (limit != 0 && seen >= limit)) return false;
    }
    return true;
  });
  return result;
}

// ------------------------------------------------------------- writes

Status TxnImpl::Put(Table* table, std::string_view key, std::string_view value) {
  TableImpl* t;
  if (Status s = CheckWrite(table, key, &t); !s.ok()) return s;
  if (Status s = CheckValue(value); !s.ok()) return s;
  KeyRef k(key);
  Record* r = FindRecent(t, k);
  bool created = false;
  // A new key gets an absent placeholder now, so the key has a record to
  // lock at commit.
  if (!r) r = FindOrCreate(t, k, static_cast<uint32_t>(value.size()), /*with_read=*/false, &created);
  if (!r) return SetsHaveRoom(false);
  if (!created) {
    if (WriteEntry* we = FindWrite(r)) {
      we->Replace(s_->arena.Copy(value), static_cast<uint32_t>(value.size()), WriteKind::kPut);
      return Status::OK();
    }
    if (Status s = WriteSetFull(); !s.ok()) return s;
  }
  Remember(t, k, r);
  AddWrite({r, t, s_->arena.Copy(value), static_cast<uint32_t>(value.size()), WriteKind::kPut, created});
  return Status::OK();
}

Status TxnImpl::Update(Table* table, std::string_view key, size_t offset, std::string_view bytes) {
  TableImpl* t;
  if (Status s = CheckWrite(table, key, &t); !s.ok()) return s;
  // The value to change: this transaction's own write of the key, else
  // the value it read through GetView (validated at commit: outside the
  // range the value written is the version it replaces). A key it has not
  // read that way is read now, and written by Put: its update is then
  // compared with its base like any Put's.
  const KeyRef k(key);
  std::string_view current;
  Record* r = s_->recent.Find(t->id(), k, &current);
  WriteEntry* we = r != nullptr && !s_->writes.empty() ? FindWrite(r) : nullptr;
  if (we != nullptr) {
    if (we->kind == WriteKind::kDelete) return NotFoundStatus();
    current = std::string_view(we->val, we->len);
  } else if (r == nullptr || current.data() == nullptr) {
    return Transaction::Update(table, key, offset, bytes);
  }
  if (Status s = CheckUpdateRange(current.size(), offset, bytes.size()); !s.ok()) return s;
  if (bytes.empty()) return Status::OK();
  char* value = s_->arena.CopyMutable(current);
  CopyBytes(value + offset, bytes.data(), bytes.size());  // mostly a field or two: inline
  // The 8-byte words the update changed, if they fit the entry's fields.
  const size_t from = offset / 8, to = (offset + bytes.size() + 7) / 8;
  const bool known = to <= UINT8_MAX;
  if (we != nullptr) {
    we->val = value;
    // Known only while every write of this transaction to the key was an
    // Update: after a Put or an Insert the base is not what it read.
    if (known && we->changed_to != 0) {
      we->changed_from = static_cast<uint8_t>(std::min<size_t>(we->changed_from, from));
      we->changed_to = static_cast<uint8_t>(std::max<size_t>(we->changed_to, to));
    } else {
      we->changed_to = 0;
    }
    return Status::OK();
  }
  if (Status s = WriteSetFull(); !s.ok()) return s;
  WriteEntry e{r, t, value, static_cast<uint32_t>(current.size()), WriteKind::kPut, false};
  if (known) {
    e.changed_from = static_cast<uint8_t>(from);
    e.changed_to = static_cast<uint8_t>(to);
  }
  AddWrite(e);
  return Status::OK();
}

Status TxnImpl::Insert(Table* table, std::string_view key, std::string_view value) {
  TableImpl* t;
  if (Status s = CheckWrite(table, key, &t); !s.ok()) return s;
  if (Status s = CheckValue(value); !s.ok()) return s;
  KeyRef k(key);
  Record* r = FindRecent(t, k);
  bool from_index = r == nullptr;
  bool created = false;
  if (!r) r = FindOrCreate(t, k, static_cast<uint32_t>(value.size()), /*with_read=*/true, &created);
  for (;;) {
    if (!r) return SetsHaveRoom(true);
    if (!created) {
      Remember(t, k, r);
      if (WriteEntry* we = FindWrite(r)) {
        if (we->kind != WriteKind::kDelete) return Status::AlreadyExists("key already exists");
        we->Replace(s_->arena.Copy(value), static_cast<uint32_t>(value.size()), WriteKind::kPut);
        return Status::OK();
      }
      if (Status s = ReadSetFull(); !s.ok()) return s;
      if (Status s = WriteSetFull(); !s.ok()) return s;
      Observed o;
      if (!ReadLatest(r, NoValueSink{}, &o.word, &o.ts, &o.repl_epoch)) {
        if (!from_index) {
          doomed_ = true;
          return Status::Aborted("record was reclaimed during the transaction");
        }
        r = FindOrCreate(t, k, static_cast<uint32_t>(value.size()), /*with_read=*/true, &created);
        continue;
      }
      // The presence check is a read: validated again at commit.
      AddRead(r, o);
      if (!(o.word & tid::kAbsent)) return Status::AlreadyExists("key already exists");
      AddWrite({r, t, s_->arena.Copy(value), static_cast<uint32_t>(value.size()), WriteKind::kPut, false});
      return Status::OK();
    }
    Remember(t, k, r);
    // A fresh placeholder reads as absent with ts 0; any install changes it.
    AddRead(r, Observed{tid::kLatest | tid::kAbsent, 0, 0});
    AddWrite({r, t, s_->arena.Copy(value), static_cast<uint32_t>(value.size()), WriteKind::kPut, true});
    return Status::OK();
  }
}

Status TxnImpl::Delete(Table* table, std::string_view key) {
  TableImpl* t;
  if (Status s = CheckWrite(table, key, &t); !s.ok()) return s;
  KeyRef k(key);
  Record* r = FindRecent(t, k);
  bool from_index = false;
  for (;;) {
    if (!r) {
      BTree::LookupResult lr = t->tree.Lookup(k);
      if (!lr.rec) {
        AddNode(lr.leaf, lr.version);
        return NotFoundStatus();
      }
      r = lr.rec;
      from_index = true;
      Remember(t, k, r);
    }
    if (WriteEntry* we = FindWrite(r)) {
      if (we->kind == WriteKind::kDelete) return NotFoundStatus();
      we->Replace("", 0, WriteKind::kDelete);
      return Status::OK();
    }
    if (Status s = ReadSetFull(); !s.ok()) return s;
    if (Status s = WriteSetFull(); !s.ok()) return s;
    Observed o;
    if (!ReadLatest(r, NoValueSink{}, &o.word, &o.ts, &o.repl_epoch)) {
      if (!from_index) {
        doomed_ = true;
        return Status::Aborted("record was reclaimed during the transaction");
      }
      r = nullptr;
      continue;
    }
    AddRead(r, o);
    if (o.word & tid::kAbsent) return NotFoundStatus();
    AddWrite({r, t, "", 0, WriteKind::kDelete, false});
    return Status::OK();
  }
}

// ------------------------------------------------------------- commit

bool TxnImpl::InSortedWriteSet(const Record* r) const {
  const auto& ws = s_->writes;
  auto it = std::lower_bound(ws.begin(), ws.end(), r,
                             [](const WriteEntry& e, const Record* x) { return e.rec < x; });
  return it != ws.end() && it->rec == r;
}

bool TxnImpl::ValidateReads(bool holding_write_locks) const {
  for (const ReadEntry& re : s_->reads) {
    uint64_t cur = re.rec->word.load(std::memory_order_acquire);
    if ((cur & ~tid::kLock) != re.word) return false;
    if ((cur & tid::kLock) && !(holding_write_locks && InSortedWriteSet(re.rec))) return false;
  }
  return true;
}

bool TxnImpl::ValidateNodes() const {
  for (const NodeEntry& ne : s_->nodes) {
    if (ne.leaf->version.load(std::memory_order_acquire) != ne.version) return false;
  }
  return true;
}

void TxnImpl::UnlockWrites(size_t n) {
  auto& ws = s_->writes;
  for (size_t i = 0; i < n; ++i) {
    Record* r = ws[i].rec;
    UnlockRecord(r, r->word.load(std::memory_order_relaxed));
  }
}

Status TxnImpl::Commit() {
  if (!usable()) return NotUsable();
  if (mode_ == Mode::kReadOnly) {
    Finish(State::kCommitted);
    Bump(w_->slot().commits, 1);
    return Status::OK();
  }
  if (doomed_) return AbortWith("a record read by the transaction was reclaimed");
  auto& ws = s_->writes;
  if (ws.empty()) {
    // Nothing to install and no ts: the reads only have to still hold.
    if (!ValidateReads(false) || !ValidateNodes()) return AbortWith("read validation failed");
    Finish(State::kCommitted);
    Bump(w_->slot().commits, 1);
    return Status::OK();
  }

  // 1. Lock the write set in address order (no deadlock between committers).
  if (ws.size() > 1) {
    std::sort(ws.begin(), ws.end(), [](const WriteEntry& a, const WriteEntry& b) { return a.rec < b.rec; });
  }
  for (size_t i = 0; i < ws.size(); ++i) {
    uint64_t w = LockRecord(ws[i].rec);
    if (!(w & tid::kLatest)) {  // unlinked by the reclaimer after we found it
      UnlockWrites(i + 1);
      return AbortWith("a record written by the transaction was reclaimed");
    }
  }

  // 2. Serialization point: the snapshot epoch and the commit ts. The ts
  // exceeds every ts read or overwritten (in this replication epoch) and
  // this worker's last, and comes from a clock comparable across cores, so
  // ts order agrees with every dependency.
  const uint64_t epoch = db_->epoch_.load(std::memory_order_seq_cst);
  const uint64_t repl_epoch = db_->repl_epoch_.load(std::memory_order_acquire);
  WorkerSlot& slot = w_->slot();
  uint64_t hi = db_->ClockTicks();
  hi = std::max(hi, (slot.last_ts >> kWorkerIdBits) + 1);
  hi = std::max(hi, (dep_ts_ >> kWorkerIdBits) + 1);
  for (const WriteEntry& e : ws) {
    if (e.rec->repl_epoch >= repl_epoch) hi = std::max(hi, (e.rec->ts >> kWorkerIdBits) + 1);
  }
  const uint64_t ts = (hi << kWorkerIdBits) | w_->id();

  // 3. Validate reads (unchanged, not locked by another) and scanned leaves.
  if (!ValidateReads(true) || !ValidateNodes()) {
    UnlockWrites(ws.size());
    return AbortWith("read validation failed");
  }

  // 4. Install and unlock (patches are made against the values replaced).
  CommitHook* const hook = db_->options().commit_hook;
  CommitView view(w_, ws, ts);
  if (hook != nullptr && db_->options().patch_updates) view.EncodeWithPatches(repl_epoch);
  const uint64_t min_snap = db_->min_snap_.load(std::memory_order_acquire);
  for (const WriteEntry& e : ws) {
    InstallAndUnlock(w_, e.table, e.rec, e.kind == WriteKind::kDelete, e.val, e.len, ts, epoch, repl_epoch,
                     min_snap);
  }
  slot.last_ts = ts;
  commit_ts_ = ts;
  state_ = State::kCommitted;
  if (hook != nullptr) hook->OnCommit(w_->id(), ts, view);
  Finish(State::kCommitted);
  Bump(slot.commits, 1);
  return Status::OK();
}

void TxnImpl::Abort() {
  if (!usable()) return;
  Finish(State::kAborted);
}

Status TxnImpl::AbortWith(const char* why) {
  Finish(State::kAborted);
  Bump(w_->slot().aborts, 1);
  return Status::Aborted(why);
}

void TxnImpl::Finish(State s) {
  state_ = s;
  if (mode_ == Mode::kReadWrite) {
    if (s == State::kAborted) {
      // Placeholders this transaction inserted stay absent: queue them so
      // the reclaimer unlinks them.
      for (const WriteEntry& e : s_->writes) {
        if (!e.created) continue;
        uint64_t w = LockRecord(e.rec);
        if ((w & tid::kLatest) && (w & tid::kAbsent)) w_->QueueAbsentLocked(e.table, e.rec);
        UnlockRecord(e.rec, w);
      }
    }
  }
  w_->CloseTxn(this, s_);  // clears the sets for their next transaction
  s_ = nullptr;
}

}  // namespace rolis::core
