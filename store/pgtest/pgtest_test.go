package pgtest

import (
	"context"
	"database/sql"
	"os"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(Run(m)) }

// TestStartGivesEachTestItsOwnDatabase: two Starts share the server and
// get different, working databases.
func TestStartGivesEachTestItsOwnDatabase(t *testing.T) {
	a, b := Start(t), Start(t)
	if a == b {
		t.Fatalf("both Starts gave %s", a)
	}
	for _, dsn := range []string{a, b} {
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			t.Fatal(err)
		}
		var name string
		if err := db.QueryRowContext(context.Background(), "SELECT current_database()").Scan(&name); err != nil {
			t.Fatalf("%s: %v", dsn, err)
		}
		db.Close()
		t.Logf("%s is database %s", dsn, name)
	}
}
