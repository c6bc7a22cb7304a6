package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
)

// server is a running postgres.
type server struct {
	dir    string // data in dir/data, the Unix socket and the log in dir
	port   int
	cmd    *exec.Cmd
	exited chan struct{} // closed when postgres has exited
	admin  *sql.DB       // on the database postgres, to create others
}

// start runs initdb in a new temporary folder, then postgres on a free
// loopback port, and waits until it accepts connections.
func start() (*server, error) {
	bin, err := bindir()
	if err != nil {
		return nil, err
	}
	cred, err := owner()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "shoal-pg-")
	if err != nil {
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, errors.Join(err, os.RemoveAll(dir))
		}
	}
	s := &server{dir: dir}
	if err := s.run(bin, cred); err != nil {
		return nil, errors.Join(err, s.stop())
	}
	return s, nil
}

// run initialises the cluster, then starts postgres.
func (s *server) run(bin string, cred *syscall.Credential) error {
	initdb := s.command(cred, filepath.Join(bin, "initdb"), "-D", filepath.Join(s.dir, "data"), "-U", "shoal",
		"--auth=trust", "--no-sync", "--no-locale", "-E", "UTF8")
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v\n%s", err, out)
	}
	for try := 1; ; try++ {
		err := s.serve(bin, cred)
		if !errors.Is(err, errExited) || try == 3 {
			return err
		}
	}
}

// errExited is postgres exiting as it starts, as when another process
// took the port between freePort and postgres.
var errExited = errors.New("postgres exited at start")

// serve starts postgres on a free loopback port and waits for it.
func (s *server) serve(bin string, cred *syscall.Credential) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	s.port = port
	log, err := os.Create(filepath.Join(s.dir, "postgres.log"))
	if err != nil {
		return err
	}
	defer log.Close() // postgres has its own copy
	s.cmd = s.command(cred, filepath.Join(bin, "postgres"), "-D", filepath.Join(s.dir, "data"), "-k", s.dir,
		"-h", "127.0.0.1", "-p", strconv.Itoa(port))
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	exited := make(chan struct{})
	s.exited = exited
	go func() { _ = s.cmd.Wait(); close(exited) }()
	return s.await(30 * time.Second)
}

// command runs a PostgreSQL program as cred's user, in dir (the tests'
// folder may be closed to that user).
func (s *server) command(cred *syscall.Credential, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = s.dir
	cmd.SysProcAttr = sysProcAttr(cred)
	return cmd
}

// freePort is a loopback port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// await waits until postgres accepts connections, and opens admin.
func (s *server) await(timeout time.Duration) error {
	if s.admin != nil {
		s.admin.Close() // of an earlier try's port
	}
	db, err := sql.Open("pgx", s.url("postgres"))
	if err != nil {
		return err
	}
	s.admin = db
	db.SetMaxOpenConns(1) // one CREATE DATABASE at a time
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := db.PingContext(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("%w: %s", errExited, s.log())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres did not accept connections in %v (%v): %s", timeout, err, s.log())
		}
	}
}

// log is the end of postgres's log.
func (s *server) log() []byte {
	b, _ := os.ReadFile(filepath.Join(s.dir, "postgres.log"))
	return b[max(0, len(b)-4000):]
}

// url is the URL of a database on the server.
func (s *server) url(db string) string {
	return fmt.Sprintf("postgres://shoal@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// createDB creates an empty database.
func (s *server) createDB(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := s.admin.ExecContext(ctx, "CREATE DATABASE "+name)
	return err
}

// stop stops postgres (a fast shutdown: SIGINT, then SIGKILL if it lingers)
// and removes the folder.
func (s *server) stop() error {
	if s.admin != nil {
		s.admin.Close()
	}
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-s.exited:
		case <-time.After(15 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	}
	return os.RemoveAll(s.dir)
}
