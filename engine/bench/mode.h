// Benchmark modes: what the workload runs on. "unreplicated" is the engine
// alone (Silo). The replicated mode (Rolis, --replicas=3) plugs in here: it
// will build the replication stack, install its CommitHook in the Database
// options, and wait for the watermark before reporting a transaction done.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "rolis/db.h"
#include "rolis/status.h"

namespace rolis::bench {

struct ModeOptions {
  std::string mode = "unreplicated";
  uint32_t replicas = 1;
  uint32_t batch_size = 0;  // transactions per replication batch; 0 = no replication
};

// A running mode: owns what the database needs besides itself.
class Mode {
 public:
  virtual ~Mode() = default;
  virtual const ModeOptions& options() const = 0;
  // The hook to put in Options::commit_hook before Database::Open (may be null).
  virtual CommitHook* commit_hook() = 0;
  // Called after the measured window, before the report; e.g. drains the log.
  virtual Status Finish() { return Status::OK(); }
};

// kInvalidArgument for an unknown mode or a combination not supported yet.
Status MakeMode(const ModeOptions& options, std::unique_ptr<Mode>* mode);

}  // namespace rolis::bench
