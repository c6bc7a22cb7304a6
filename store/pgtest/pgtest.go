// Package pgtest runs a real PostgreSQL server for tests: one per test
// binary, on a loopback port, in a temporary folder, from the Debian
// package's binaries (scripts/test.sh installs them). Each Start gives a
// test a database of its own on it.
//
// A test binary that uses it stops the server at its end from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }
package pgtest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

var (
	running atomic.Bool // Run is running the tests
	once    sync.Once
	shared  *server
	failed  error
	dbs     atomic.Int64 // databases created, for their names
)

// Run runs the tests, then stops the server if a test started it, and
// returns the tests' exit code.
func Run(m *testing.M) int {
	running.Store(true)
	code := m.Run()
	if shared != nil {
		if err := shared.stop(); err != nil {
			fmt.Println("pgtest:", err)
		}
	}
	return code
}

// Start starts the server on the first call, creates a new empty database
// on it and returns its URL (user shoal, no password). Without PostgreSQL's
// binaries the test fails, saying to run scripts/test.sh.
func Start(t testing.TB) string {
	t.Helper()
	if !running.Load() {
		t.Fatal("pgtest.Start: the test binary's TestMain must call pgtest.Run, which stops the server")
	}
	once.Do(func() { shared, failed = start() })
	if failed != nil {
		t.Fatalf("pgtest: %v", failed)
	}
	name := fmt.Sprintf("test%d", dbs.Add(1))
	if err := shared.createDB(name); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	return shared.url(name)
}
