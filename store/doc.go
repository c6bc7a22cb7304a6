// Package store keeps the history of Shoal's runs: every `shoal sim`,
// `train` and `experiment` (and each point of a sweep) is one Run, with
// what was run (scenario and policy with the hashes of their files, seeds,
// load, flags, code version), when, and its results (the summary's and each
// request class's statistics, each a mean with its 95% confidence
// interval). A run's Key identifies what was run, so a sweep can skip runs
// already stored.
//
// Two back ends share one schema and one code path through database/sql:
// an embedded SQLite file (modernc.org/sqlite, pure Go, the default, in WAL
// mode so several processes can write to it) and PostgreSQL (pgx), chosen
// by the DSN given to Open. The schema is versioned by the SQL files in
// migrations/, which Open applies in order, once, under a lock.
package store
