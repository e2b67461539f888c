// Value patches: an update sent as the bytes it changed.
//
// A replicated update of a record is mostly the value it replaces (a TPC-C
// stock row changes 4 of its 320 bytes; a customer row 3 of 670). The
// leader may log such an update as a patch against the record's previous
// value, and a follower rebuilds the new value from its own copy of that
// value (docs/replication.md, "Patches"). A patch is a sequence of runs
//   [uint16 offset][uint16 length][length bytes]
// with offsets increasing and runs not overlapping; it applies to a value
// of the same length as the one it was made against (named by its version's
// key in the log: WriteRecord::base_ts). Values longer than
// kMaxPatchedValue are never patched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace rolis {

inline constexpr size_t kMaxPatchedValue = 65535;

// The most bytes of runs worth sending for a value of `len` bytes: half the
// value, and less than the value once the patch's 8-byte base ts is added;
// 0 when no patch can be (the smallest run takes 5 bytes: YCSB++'s 8-byte
// values are always sent whole, without trying).
constexpr size_t PatchBudget(size_t len) {
  constexpr size_t kBaseTs = 8, kSmallestRun = 5;
  if (len > kMaxPatchedValue || len < kBaseTs + 1 + kSmallestRun) return 0;
  const size_t budget = len / 2 < len - kBaseTs - 1 ? len / 2 : len - kBaseTs - 1;
  return budget >= kSmallestRun ? budget : 0;
}

// Appends to *out the runs that turn `base` into `value` (of equal length,
// at most kMaxPatchedValue) and returns true if they take at most
// `max_bytes`; otherwise leaves *out as it was and returns false.
bool AppendPatch(std::string_view base, std::string_view value, size_t max_bytes, std::string* out);
// The same runs written at `out` (room for `max_bytes`), their size in
// *written: the leader's commit path writes them straight into the
// transaction's log encoding.
bool WritePatch(std::string_view base, std::string_view value, size_t max_bytes, char* out, size_t* written);

// The patch of one run, value[from, to) (from < to <= value.size() <=
// kMaxPatchedValue), written at `out` if it takes at most `max_bytes`
// (its size in *written): an update that names the bytes it changed
// (Transaction::Update) needs no comparison with its base.
bool WriteRun(std::string_view value, size_t from, size_t to, size_t max_bytes, char* out, size_t* written);

// The patch's runs are well formed (in order, non-empty, not overlapping,
// none cut short). Says nothing of the value it applies to.
bool PatchWellFormed(std::string_view patch);

// Every run of a well-formed patch ends within `len` bytes.
bool PatchFits(std::string_view patch, size_t len);

// Applies a well-formed patch to `value` (`len` bytes) in place; false,
// with `value` unchanged, if a run ends past `len`.
bool ApplyPatch(std::string_view patch, char* value, size_t len);

}  // namespace rolis
