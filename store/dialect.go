package store

import (
	"strconv"
	"strings"
)

// rebind writes the ? placeholders of q as PostgreSQL's $1, $2, ...; SQLite
// takes q as it is. The store's SQL has no '?' in a literal.
func (s *Store) rebind(q string) string {
	if s.backend != Postgres {
		return q
	}
	var b strings.Builder
	n := 0
	for _, c := range q {
		if c != '?' {
			b.WriteRune(c)
			continue
		}
		n++
		b.WriteString("$" + strconv.Itoa(n))
	}
	return b.String()
}

// placeholders is "(?, ?, ...)" with n marks.
func placeholders(n int) string {
	return "(" + strings.TrimSuffix(strings.Repeat("?, ", n), ", ") + ")"
}
