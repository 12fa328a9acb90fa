// Package stress is the harness behind cmd/stress: an expected-state oracle,
// a multi-threaded operation driver over the public db API, and the crash,
// power-loss, fault-injection, linearizability and metamorphic modes built on
// them. Each mode lives in its own file so that new modes can be added on top
// of the same Config, Oracle and Runner.
//
// This package is NOT API. It is a tool that sits above the library (it
// imports db, as Pebble's metamorphic/ and RocksDB's db_stress_tool/ sit
// above their engines), lives outside internal/ so that dependencies point
// one way, and may change without notice. Programs should use cmd/stress.
package stress
