// Package pgtest starts a throwaway PostgreSQL cluster for tests: initdb
// and pg_ctl (from the Debian postgresql package) on a unix socket in a
// temporary directory, as the postgres user when the tests run as root
// (initdb refuses root). A test that cannot start one fails with a message
// saying how to install PostgreSQL; it never skips.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cluster is a running throwaway cluster.
type Cluster struct {
	dir   string
	bin   string
	owner string // the user the server runs as ("" for this process's)
	dbs   atomic.Int64
}

// Install is what the failure message tells a developer to run.
const Install = "install PostgreSQL (Debian: apt-get install -y postgresql; .ci/run does it)"

// Start makes and starts a cluster. Stop it with Stop.
func Start() (*Cluster, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "awaken-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root, the cluster must run as the postgres user, which does not exist: %w; %s", err, Install)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		c.owner = "postgres"
	}
	data := filepath.Join(dir, "data")
	if out, err := c.run("initdb", "-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"); err != nil {
		c.Stop()
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	opts := fmt.Sprintf("-k %s -c listen_addresses='' -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200", dir)
	if out, err := c.run("pg_ctl", "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		c.Stop()
		return nil, fmt.Errorf("pg_ctl start: %w\n%s\n%s", err, out, log)
	}
	return c, nil
}

// findBin finds the directory of initdb and pg_ctl.
func findBin() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if _, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("PostgreSQL's initdb and pg_ctl are not on PATH nor under /usr/lib/postgresql/*/bin; " + Install)
}

func (c *Cluster) run(tool string, args ...string) ([]byte, error) {
	path := filepath.Join(c.bin, tool)
	var cmd *exec.Cmd
	if c.owner != "" {
		cmd = exec.Command("runuser", append([]string{"-u", c.owner, "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	cmd.Dir = c.dir
	return cmd.CombinedOutput()
}

// DSN is the connection string of a database of the cluster.
func (c *Cluster) DSN(db string) string {
	return fmt.Sprintf("host=%s user=postgres dbname=%s sslmode=disable", c.dir, db)
}

// NewDatabase creates an empty database and returns its DSN: each test
// gets its own.
func (c *Cluster) NewDatabase(ctx context.Context) (string, error) {
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("t%d", c.dbs.Add(1))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE template0"); err != nil {
		return "", err
	}
	return c.DSN(name), nil
}

// Restart stops the server (fast shutdown: connections are cut) and
// starts it again after pause.
func (c *Cluster) Restart(pause time.Duration) error {
	data := filepath.Join(c.dir, "data")
	if out, err := c.run("pg_ctl", "-D", data, "-m", "fast", "-w", "stop"); err != nil {
		return fmt.Errorf("pg_ctl stop: %w\n%s", err, out)
	}
	time.Sleep(pause)
	opts := fmt.Sprintf("-k %s -c listen_addresses='' -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200", c.dir)
	if out, err := c.run("pg_ctl", "-D", data, "-o", opts, "-l", filepath.Join(c.dir, "log"), "-w", "start"); err != nil {
		return fmt.Errorf("pg_ctl start: %w\n%s", err, out)
	}
	return nil
}

// Stop stops the server and removes its files.
func (c *Cluster) Stop() {
	if _, err := os.Stat(filepath.Join(c.dir, "data", "postmaster.pid")); err == nil {
		c.run("pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", "immediate", "-w", "stop")
	}
	os.RemoveAll(c.dir)
}

// Main runs a test binary's tests with a cluster in *c, and exits: the
// TestMain of a package whose tests need PostgreSQL.
func Main(m interface{ Run() int }, c **Cluster) {
	cl, err := Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: cannot start PostgreSQL for the tests: %v\n", strings.TrimSpace(err.Error()))
		os.Exit(1)
	}
	*c = cl
	code := m.Run()
	cl.Stop()
	os.Exit(code)
}
