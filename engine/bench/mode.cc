#include "mode.h"

#include "baseline_modes.h"
#include "replicated_mode.h"

namespace rolis::bench {
namespace {

class Unreplicated : public Mode {
 public:
  explicit Unreplicated(const ModeOptions& options) : options_(options) {}
  const ModeOptions& options() const override { return options_; }
  CommitHook* commit_hook() override { return nullptr; }

 private:
  ModeOptions options_;
};

}  // namespace

Status MakeMode(const ModeOptions& given, std::unique_ptr<Mode>* mode) {
  ModeOptions options = given;
  if (options.mode.empty()) options.mode = options.replicas > 1 ? "rolis" : "silo";
  if (options.mode == "unreplicated") options.mode = "silo";
  if (options.mode == "replicated") options.mode = "rolis";
  options.system = options.mode;
  if ((options.kill_follower_at > 0 || options.check_acked) && options.replicas < 3) {
    return Status::InvalidArgument("--kill-follower-at and --check-acked need a replicated mode with followers "
                                   "(--mode=rolis, 2pl or calvin with --replicas=3 or more)");
  }
  if (options.system == "silo") {
    options.mode = "unreplicated";
    if (options.replicas != 1) {
      return Status::InvalidArgument("--mode=" + given.mode +
                                     " runs one replica: drop --replicas or use --mode=rolis (replicated)");
    }
    if (options.durability != "memory") {
      return Status::InvalidArgument("--durability=" + options.durability +
                                     " needs the replicated mode (--replicas=3): durability is that of its members");
    }
    options.batch_size = 0;
    *mode = std::make_unique<Unreplicated>(options);
    return Status::OK();
  }
  if (options.system == "rolis") {
    options.mode = "replicated";
    return MakeReplicatedMode(options, mode);
  }
  if (options.system == "2pl") return MakeTwoPhaseLockingMode(options, mode);
  if (options.system == "calvin") return MakeCalvinMode(options, mode);
  return Status::InvalidArgument("unknown --mode '" + given.mode +
                                 "' (supported: silo, rolis, 2pl, calvin; unreplicated and replicated are silo and rolis)");
}

}  // namespace rolis::bench
