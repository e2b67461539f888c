// rolis-checkpoint-bench: how long a member's checkpoints and its recovery
// take, per GiB of data (docs/benchmarks.md, "Durability"). On a data
// directory in --dir it
//   1. loads a store (YCSB++ with --keys records, or --bulk-mib of records
//      of --value-bytes) into the engine;
//   2. checkpoints it from a scan of a read-only snapshot (a follower's
//      checkpoint: scan, write, fdatasync, rename);
//   3. appends a log of updates to --update-percent of the records (batches
//      of 50 transactions, one stream, group-committed) and derives the next
//      checkpoint from the previous one and that log (the leader's
//      checkpoint, derived_checkpoint.h);
//   4. recovers the directory into a fresh engine as a restarting member
//      does (recovery.h: the checkpoint's writes applied to the store, the
//      log read and checked), after dropping the directory's pages from the
//      page cache (posix_fadvise DONTNEED: the reads come from the disk).
// Prints a table and one JSON line. The directory is removed at the end.
//
//   rolis-checkpoint-bench --dir=/var/tmp/ckpt [--keys=1000000 | --bulk-mib=1024 --value-bytes=1000]
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cinttypes>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint.h"
#include "codec.h"
#include "derived_checkpoint.h"
#include "recovery.h"
#include "rolis/db.h"
#include "stream_log.h"
#include "workloads/ycsb.h"

namespace {

using namespace rolis;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void Die(const std::string& what, const Status& s) {
  std::fprintf(stderr, "rolis-checkpoint-bench: %s: %s\n", what.c_str(), s.ToString().c_str());
  std::exit(1);
}

// Until the engine's read-only snapshots cover every write made so far.
void AwaitSnapshot(Database* db) {
  const uint64_t e0 = db->Stats().current_epoch;
  while (db->Stats().snapshot_epoch < e0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

uint64_t DirBytes(const std::string& dir) {
  uint64_t n = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) n += e.file_size();
  }
  return n;
}

void DropFromPageCache(const std::string& dir) {
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    int fd = ::open(e.path().c_str(), O_RDONLY);
    if (fd < 0) continue;
    (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

replication::DecidedPtr Record1() {
  auto d = std::make_shared<replication::Decided>();
  d->record.epoch = 1;
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"checkpoint and recovery time of a data directory"};
  std::string dir;
  uint64_t keys = 1000000, bulk_mib = 0;
  uint32_t value_bytes = 1000, update_percent = 10;
  app.add_option("--dir", dir, "data directory to create (removed at the end)")->required();
  app.add_option("--keys", keys, "YCSB++ records (8-byte keys and values)")->check(CLI::PositiveNumber);
  app.add_option("--bulk-mib", bulk_mib, "instead: this many MiB of records of --value-bytes");
  app.add_option("--value-bytes", value_bytes, "value size of the bulk records")->check(CLI::Range(8u, 65536u));
  app.add_option("--update-percent", update_percent, "records updated in the log after the checkpoint")
      ->check(CLI::Range(0u, 100u));
  CLI11_PARSE(app, argc, argv);
  if (std::filesystem::exists(dir)) {
    std::fprintf(stderr, "rolis-checkpoint-bench: %s exists; give a new directory\n", dir.c_str());
    return 2;
  }
  durability::Env* env = durability::Env::Posix();

  // 1. The store.
  Options o;
  o.epoch_period_ms = 10;
  std::unique_ptr<Database> db = Database::Open(o);
  std::string workload;
  auto t0 = Clock::now();
  if (bulk_mib == 0) {
    workload = "ycsbpp";
    workloads::YcsbConfig c;
    c.keys = keys;
    workloads::Ycsbpp y(c);
    if (Status s = y.Load(db.get(), 1); !s.ok()) Die("load", s);
  } else {
    workload = "bulk";
    keys = (bulk_mib << 20) / (value_bytes + 8);
    Table* table = nullptr;
    if (Status s = db->CreateTable("bulk", &table); !s.ok()) Die("create table", s);
    auto w = db->RegisterWorker();
    std::string value(value_bytes, 'v');
    for (uint64_t i = 0; i < keys;) {
      auto txn = w->Begin();
      for (uint64_t end = std::min(keys, i + 1000); i < end; i++) {
        char k[8];
        std::memcpy(value.data(), &i, 8);
        if (Status s = txn->Insert(table, workloads::YcsbKey(i, k), value); !s.ok()) Die("insert", s);
      }
      if (Status s = txn->Commit(); !s.ok()) Die("commit", s);
    }
    w->Quiesce();
  }
  const double load_s = Since(t0);
  std::vector<std::string> tables;
  for (TableId id = 0;; id++) {
    Table* t = nullptr;
    if (!db->GetTable(id, &t).ok()) break;
    tables.push_back(t->name());
  }

  // 2. A checkpoint from a scan of the store.
  replication::SnapshotReply header;
  header.at = {1, 1};
  header.next_slot = {0};
  header.skip = {0};
  header.stream_key = {{1, 1}};
  header.stream_barrier = {1};
  header.decided = Record1();
  header.leader_epoch = 1;
  std::vector<std::pair<TableId, std::string>> sample;  // every tenth record: the updates' keys
  uint64_t data_bytes = 0, scanned = 0;
  t0 = Clock::now();
  {
    auto w = db->RegisterWorker();
    AwaitSnapshot(db.get());
    std::unique_ptr<durability::CheckpointWriter> cw;
    if (Status s = durability::CheckpointWriter::Begin(env, dir, header, &cw); !s.ok()) Die("checkpoint", s);
    auto txn = w->BeginReadOnly();
    for (TableId id = 0; id < tables.size(); id++) {
      Table* t = nullptr;
      (void)db->GetTable(id, &t);
      Status added;
      Status s = txn->Scan(t, "", "", 0, [&](std::string_view k, std::string_view v) {
        if (scanned++ % 10 == 0) sample.emplace_back(id, std::string(k));
        data_bytes += k.size() + v.size();
        added = cw->Add(id, k, v);
        return added.ok();
      });
      if (!s.ok()) Die("scan", s);
      if (!added.ok()) Die("checkpoint write", added);
    }
    (void)txn->Commit();
    txn.reset();
    w->Quiesce();
    if (Status s = cw->Commit(); !s.ok()) Die("checkpoint commit", s);
  }
  const double scan_ckpt_s = Since(t0);
  const uint64_t ckpt_bytes = DirBytes(dir);

  // 3. A log of updates, then the checkpoint derived from the previous one and it.
  uint64_t log_bytes = 0, slots = 0, txns = 0, ts = 2;
  {
    std::unique_ptr<durability::StreamLogSet> log;
    if (Status s = durability::StreamLogSet::Open(env, dir, 1, {}, nullptr, &log); !s.ok()) Die("log", s);
    const uint64_t updates = sample.size() * 10 * update_percent / 100;
    std::string value;
    uint64_t last = 0;
    for (uint64_t u = 0; u < updates;) {
      auto b = std::make_shared<replication::Batch>();
      b->epoch = 1;
      for (uint32_t n = 0; n < 50 && u < updates; n++, u++) {
        const auto& [table, key] = sample[(u * 7919) % sample.size()];
        value.assign(bulk_mib ? value_bytes : 8, static_cast<char>('a' + u % 26));
        WriteRecord wr{table, key, value, false};
        replication::AppendTxn(&b->payload, ts, std::span<const WriteRecord>(&wr, 1));
        b->last_ts = ts++;
        b->txn_count++;
        txns++;
      }
      b->crc = replication::Crc32c(b->payload);
      if (Status s = log->Append(0, replication::Slot{slots++, 1, b}, &last); !s.ok()) Die("append", s);
    }
    if (last) {
      if (Status s = log->WaitDurable(0, last, Clock::now() + std::chrono::minutes(5)); !s.ok()) Die("sync", s);
    }
    log_bytes = log->stats().bytes;
  }
  replication::LogCheckpointPosition pos{1, Record1(), {1, ts}, {slots}};
  durability::DerivedCheckpointStats dst;
  t0 = Clock::now();
  if (txns > 0) {
    if (Status s = durability::DeriveCheckpoint(env, dir, 1, pos, &header, &dst); !s.ok()) Die("derive", s);
  }
  const double derive_s = Since(t0);
  // The log behind the derived checkpoint goes, as a member removes it.
  std::filesystem::remove_all(durability::StreamLogSet::StreamDir(dir, 0));

  // 4. Recovery into a fresh engine, from the disk.
  db.reset();
  DropFromPageCache(dir);
  std::unique_ptr<Database> fresh = Database::Open(o);
  for (const std::string& name : tables) {
    Table* t = nullptr;
    if (Status s = fresh->CreateTable(name, &t); !s.ok()) Die("create table", s);
  }
  durability::RecoveredState rec;
  uint64_t applied = 0;
  t0 = Clock::now();
  {
    auto w = fresh->RegisterWorker();
    durability::RecoveryOptions ro;
    ro.streams = 1;
    ro.on_writes = [&](std::vector<replication::SnapshotWrite>& chunk) -> Status {
      for (const auto& x : chunk) {
        WriteRecord r{x.table, x.key, x.value, false};
        const replication::LogKey at = rec.checkpoint.at;
        if (Status s = fresh->ApplyReplicated(w.get(), r, at.epoch, at.ts); !s.ok()) return s;
        applied++;
      }
      return Status::OK();
    };
    if (Status s = durability::Recover(env, dir, ro, &rec); !s.ok()) Die("recover", s);
    w->Quiesce();
  }
  const double recover_s = Since(t0);
  const uint64_t dir_bytes = DirBytes(dir);
  std::filesystem::remove_all(dir);

  const double gib = static_cast<double>(data_bytes) / (1 << 30);
  const double ckpt_gib = static_cast<double>(ckpt_bytes) / (1 << 30);
  std::printf("%-34s %14s\n", "workload", workload.c_str());
  std::printf("%-34s %14" PRIu64 "\n", "records", keys);
  std::printf("%-34s %14.3f\n", "data (keys + values), GiB", gib);
  std::printf("%-34s %14.3f\n", "checkpoint file, GiB", ckpt_gib);
  std::printf("%-34s %14.3f\n", "load into the engine, s", load_s);
  std::printf("%-34s %14.3f\n", "checkpoint from a store scan, s", scan_ckpt_s);
  std::printf("%-34s %14.3f\n", "  per GiB of data, s", scan_ckpt_s / gib);
  std::printf("%-34s %14" PRIu64 " txns, %" PRIu64 " bytes\n", "log after it", txns, log_bytes);
  std::printf("%-34s %14.3f\n", "derived checkpoint, s", derive_s);
  std::printf("%-34s %14.3f\n", "  per GiB of data, s", derive_s / gib);
  std::printf("%-34s %14.3f\n", "  reading the log, s", dst.log_seconds);
  std::printf("%-34s %14.3f\n", "  fdatasync and rename, s", dst.commit_seconds);
  std::printf("%-34s %14.3f\n", "recovery (cold page cache), s", recover_s);
  std::printf("%-34s %14.3f\n", "  per GiB of data, s", recover_s / gib);
  std::printf("%-34s %14" PRIu64 "\n", "records recovered", applied);
  std::printf(
      "{\"bench\":\"checkpoint\",\"workload\":\"%s\",\"records\":%" PRIu64 ",\"data_bytes\":%" PRIu64
      ",\"checkpoint_bytes\":%" PRIu64 ",\"log_bytes\":%" PRIu64 ",\"log_txns\":%" PRIu64
      ",\"dir_bytes\":%" PRIu64 ",\"scan_checkpoint_s\":%.3f,\"derived_checkpoint_s\":%.3f,\"recovery_s\":%.3f"
      ",\"scan_checkpoint_s_per_gib\":%.3f,\"derived_checkpoint_s_per_gib\":%.3f,\"recovery_s_per_gib\":%.3f"
      ",\"records_recovered\":%" PRIu64 "}\n",
      workload.c_str(), keys, data_bytes, ckpt_bytes, log_bytes, txns, dir_bytes, scan_ckpt_s, derive_s, recover_s,
      scan_ckpt_s / gib, derive_s / gib, recover_s / gib, applied);
  return applied == keys ? 0 : 1;
}
