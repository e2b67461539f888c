// Process-wide settings of the libraries rolisd runs on, applied once at
// startup before any gRPC object exists.
#pragma once

namespace rolis::server {

// Turns off absl::Mutex deadlock detection (Debian's absl is built with it on;
// gRPC's mutexes then update a lock graph on every acquisition, a few percent
// of rolisd's CPU per transaction).
void TuneProcessRuntime();

}  // namespace rolis::server
