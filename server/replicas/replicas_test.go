// Package replicas tests several sidecar replicas on one PostgreSQL
// database (a throwaway cluster: see internal/pgtest): any replica serves
// any call of any run, and two replicas never both commit on one base.
package replicas_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/host"
	"github.com/awaken-lua/awaken-lua/internal/pgtest"
	"github.com/awaken-lua/awaken-lua/journal"
	"github.com/awaken-lua/awaken-lua/replay"
	"github.com/awaken-lua/awaken-lua/server"
	"github.com/awaken-lua/awaken-lua/store/pgstore"
)

var cluster *pgtest.Cluster

func TestMain(m *testing.M) { pgtest.Main(m, &cluster) }

const policy = `local awaken = require("awaken")
local p = awaken.plugin { id = "policy" }
local visits = p:key("policy.visits", { scope = "thread", merge = "commutative", reducer = "add", default = 0, schema = { type = "integer" } })
local ran = p:key("policy.ran", { scope = "run", merge = "commutative", reducer = "add", default = 0, schema = { type = "integer" } })
p:on("run_start", function(ctx) ctx:update(visits, 1) end)
p:tool_gate(function(ctx, call)
  if call.name == "slow" then
    local n = 0
    for i = 1, 4000000 do n = n + i end -- long enough for two replicas to overlap
  end
  if call.name == "deploy" and not call.resume then return awaken.suspend { message = "deploy?" } end
  if call.name == "hurry" and not call.resume then return awaken.suspend { message = "quick?", timeout = "1s" } end
end)
p:on("after_tool_execute", function(ctx) ctx:update(ran, 1) end)
return p
`

type replica struct {
	t    testing.TB
	h    *host.Host
	ts   *httptest.Server
	once sync.Once
	stop func()
}

// close stops the replica (once).
func (r *replica) close() { r.once.Do(r.stop) }

// replicas writes a project whose store is the test's database, and
// returns n replicas serving it.
func replicas(t testing.TB, n int) []*replica {
	rs, _ := replicasIn(t, n)
	return rs
}

// replicasIn is replicas, and the project's awaken.toml.
func replicasIn(t testing.TB, n int) ([]*replica, string) { return replicasWith(t, n, "") }

// replicasWith is replicasIn with more of awaken.toml.
func replicasWith(t testing.TB, n int, extra string) ([]*replica, string) {
	return replicasVia(t, n, "", extra, func(dsn string) string { return dsn })
}

// replicasVia is replicasWith with more of [store], on the DSN that via
// makes of the database's (through a proxy, say).
func replicasVia(t testing.TB, n int, store, extra string, via func(dsn string) string) ([]*replica, string) {
	t.Helper()
	ctx := context.Background()
	dsn, err := cluster.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWAKEN_TEST_PG", via(dsn))
	dir := t.TempDir()
	// The hook budget is wall-clock time, and policy's gate on "slow"
	// spins: 3-5s under -race, and past 10s on a loaded 2-core machine
	// (TestConcurrentCallsOnTwoReplicas failed with hook_timeout). No test
	// here is about the budget.
	toml := "plugin_dir = \"scripts\"\n[runtime]\nhook_timeout = \"60s\"\n[store]\nkind = \"postgres\"\ndsn_env = \"AWAKEN_TEST_PG\"\nmax_conns = 8\n" + store + "[agents.default]\ntools = []\n" + extra
	os.MkdirAll(filepath.Join(dir, "scripts"), 0o755)
	os.WriteFile(filepath.Join(dir, "awaken.toml"), []byte(toml), 0o644)
	os.WriteFile(filepath.Join(dir, "scripts", "policy.lua"), []byte(policy), 0o644)
	var out []*replica
	for i := 0; i < n; i++ {
		h, err := host.Open(ctx, host.Options{ConfigPath: filepath.Join(dir, "awaken.toml")})
		if err != nil {
			t.Fatal(err)
		}
		// Short idle and retention make the janitor (which settles expired
		// approvals) look every 25ms.
		srv := server.New(h, server.Options{IdleTimeout: 100 * time.Millisecond, DoneRetention: 100 * time.Millisecond})
		r := &replica{t: t, h: h, ts: httptest.NewServer(srv)}
		r.stop = func() { r.ts.Close(); srv.Close(); h.Close() }
		t.Cleanup(r.close)
		out = append(out, r)
	}
	return out, filepath.Join(dir, "awaken.toml")
}

type reply struct {
	status int
	body   map[string]any
	raw    string
}

func (r *replica) call(method, path string, body any) reply {
	r.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, r.ts.URL+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := reply{status: resp.StatusCode, raw: string(raw)}
	json.Unmarshal(raw, &out.body)
	return out
}

func (r *replica) must(method, path string, body any) reply {
	r.t.Helper()
	got := r.call(method, path, body)
	if got.status/100 != 2 {
		r.t.Fatalf("%s %s on %s: %d %s", method, path, r.ts.URL, got.status, got.raw)
	}
	return got
}

func phase(r *replica, id, name string, body any) reply {
	r.t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	return r.must("POST", "/v1/runs/"+id+"/phases/"+name, body)
}

func tcall(id, name string) map[string]any {
	return map[string]any{"id": id, "name": name, "args": map[string]any{}}
}

// A run started on replica A goes on, phase by phase, on A and B in turn,
// and a call suspended through A is resumed through B.
func TestRunMovesBetweenReplicas(t *testing.T) {
	rs := replicas(t, 2)
	a, b := rs[0], rs[1]
	if st, _ := a.must("GET", "/v1/plugins", nil).body["store"].(map[string]any); st["kind"] != "postgres" {
		t.Fatalf("GET /v1/plugins names the store %v", st)
	}
	created := a.must("POST", "/v1/runs", map[string]any{"thread_id": "t1",
		"tools": []any{map[string]any{"name": "read"}, map[string]any{"name": "deploy"}}})
	id, _ := created.body["run_id"].(string)
	phase(b, id, "step_start", nil)
	phase(a, id, "before_inference", map[string]any{"request": map[string]any{}})
	phase(b, id, "after_inference", map[string]any{"response": map[string]any{"tool_calls": []any{tcall("c1", "read"), tcall("c2", "deploy")}}})
	if g := phase(a, id, "tool_gate", map[string]any{"call": tcall("c1", "read")}); g.body["decision"] != "allow" {
		t.Fatalf("c1: %s", g.raw)
	}
	phase(b, id, "before_tool_execute", map[string]any{"call": tcall("c1", "read")})
	phase(a, id, "after_tool_execute", map[string]any{"call": tcall("c1", "read"), "result": map[string]any{"status": "success"}})
	if g := phase(a, id, "tool_gate", map[string]any{"call": tcall("c2", "deploy")}); g.body["decision"] != "suspend" {
		t.Fatalf("c2: %s", g.raw)
	}
	if end := phase(a, id, "step_end", nil); end.body["termination"] != "suspended" {
		t.Fatalf("step_end: %s", end.raw)
	}
	res := b.must("POST", "/v1/runs/"+id+"/resume", map[string]any{"decisions": []any{map[string]any{"target": "c2", "action": "resume"}}})
	if res.status != 200 {
		t.Fatalf("resume through B: %s", res.raw)
	}
	if g := phase(b, id, "tool_gate", map[string]any{"call": tcall("c2", "deploy")}); g.body["decision"] != "allow" {
		t.Fatalf("c2 resumed: %s", g.raw)
	}
	phase(a, id, "before_tool_execute", map[string]any{"call": tcall("c2", "deploy")})
	phase(b, id, "after_tool_execute", map[string]any{"call": tcall("c2", "deploy"), "result": map[string]any{"status": "success"}})
	got := a.must("GET", "/v1/runs/"+id, nil)
	st, _ := got.body["state"].(map[string]any)
	if st["policy.ran"] != 2.0 || st["policy.visits"] != 1.0 {
		t.Fatalf("the state A reads after B's calls: %s", got.raw)
	}
	phase(b, id, "step_end", nil)
	phase(a, id, "step_start", nil)
	phase(b, id, "before_inference", map[string]any{"request": map[string]any{}})
	phase(a, id, "after_inference", map[string]any{"response": map[string]any{"text": "done"}})
	phase(b, id, "step_end", nil)
	if end := phase(a, id, "run_end", nil); end.body["termination"] != "natural" {
		t.Fatalf("run_end on A: %s", end.raw)
	}
	// The thread is saved: a new run on B counts the second visit.
	next := b.must("POST", "/v1/runs", map[string]any{"thread_id": "t1"})
	nid, _ := next.body["run_id"].(string)
	got = a.must("GET", "/v1/runs/"+nid, nil)
	if st, _ := got.body["state"].(map[string]any); st["policy.visits"] != 2.0 {
		t.Fatalf("the second run's thread state: %s", got.raw)
	}
}

// Two replicas call a phase of one run at the same time on the same base:
// exactly one commits, the other answers 409 revision_conflict and
// changed nothing; called again, it commits on the new base.
func TestConcurrentCallsOnTwoReplicas(t *testing.T) {
	rs := replicas(t, 2)
	a, b := rs[0], rs[1]
	created := a.must("POST", "/v1/runs", map[string]any{"tools": []any{map[string]any{"name": "slow"}}})
	id, _ := created.body["run_id"].(string)
	phase(a, id, "step_start", nil)
	phase(a, id, "before_inference", map[string]any{"request": map[string]any{}})
	phase(a, id, "after_inference", map[string]any{"response": map[string]any{"tool_calls": []any{tcall("c1", "slow"), tcall("c2", "slow")}}})
	b.must("GET", "/v1/runs/"+id, nil) // B holds the run too, on the same base
	var wg sync.WaitGroup
	replies := make([]reply, 2)
	for i, r := range []*replica{a, b} {
		wg.Add(1)
		go func(i int, r *replica) {
			defer wg.Done()
			replies[i] = r.call("POST", "/v1/runs/"+id+"/phases/tool_gate", map[string]any{"call": tcall(fmt.Sprintf("c%d", i+1), "slow")})
		}(i, r)
	}
	wg.Wait()
	ok, conflict := 0, -1
	for i, r := range replies {
		switch {
		case r.status == 200:
			ok++
		case r.status == 409 && r.body["code"] == "revision_conflict":
			conflict = i
		default:
			t.Fatalf("reply %d: %d %s", i, r.status, r.raw)
		}
	}
	if ok != 1 || conflict < 0 {
		t.Fatalf("%d commits; replies %v", ok, replies)
	}
	// The loser changed nothing: its call is still to gate, and now works.
	loser := []*replica{a, b}[conflict]
	if g := phase(loser, id, "tool_gate", map[string]any{"call": tcall(fmt.Sprintf("c%d", conflict+1), "slow")}); g.body["decision"] != "allow" {
		t.Fatalf("the retry: %s", g.raw)
	}
}

// The database restarting under load: callers get 503 (or, for a call
// whose save raced, 409), never a wrong answer or a 500; /readyz fails
// while the database is down; service comes back by itself.
func TestDatabaseRestartUnderLoad(t *testing.T) {
	rs := replicas(t, 2)
	stop := make(chan struct{})
	var mu sync.Mutex
	statuses := map[int]int{}
	var wrong []string
	var wg sync.WaitGroup
	for c := 0; c < 4; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			r := rs[c%2]
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				created := r.call("POST", "/v1/runs", map[string]any{"tools": []any{map[string]any{"name": "read"}}})
				note := func(rep reply) bool {
					mu.Lock()
					defer mu.Unlock()
					statuses[rep.status]++
					switch rep.status {
					case 200, 201:
						return true
					case 503, 409:
						return false
					}
					wrong = append(wrong, fmt.Sprintf("%d %s", rep.status, rep.raw))
					return false
				}
				if !note(created) {
					continue
				}
				id, _ := created.body["run_id"].(string)
				steps := []struct {
					name string
					body any
				}{
					{"step_start", map[string]any{}},
					{"before_inference", map[string]any{"request": map[string]any{}}},
					{"after_inference", map[string]any{"response": map[string]any{"tool_calls": []any{tcall("c1", "read")}}}},
					{"tool_gate", map[string]any{"call": tcall("c1", "read")}},
				}
				for _, st := range steps {
					rep := r.call("POST", "/v1/runs/"+id+"/phases/"+st.name, st.body)
					if !note(rep) {
						break
					}
					if st.name == "tool_gate" && rep.body["decision"] != "allow" {
						mu.Lock()
						wrong = append(wrong, "a wrong decision: "+rep.raw)
						mu.Unlock()
					}
				}
			}
		}(c)
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("no %s within 30s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("traffic", func() bool { mu.Lock(); defer mu.Unlock(); return statuses[200] > 20 })
	down := make(chan struct{})
	go func() {
		defer close(down)
		if err := cluster.Restart(time.Second); err != nil {
			t.Error(err)
		}
	}()
	waitFor("a failing /readyz", func() bool { return rs[0].call("GET", "/readyz", nil).status == 503 })
	<-down
	waitFor("a ready /readyz", func() bool { return rs[0].call("GET", "/readyz", nil).status == 200 })
	mu.Lock()
	before := statuses[200]
	mu.Unlock()
	waitFor("service after the restart", func() bool { mu.Lock(); defer mu.Unlock(); return statuses[200] > before+20 })
	close(stop)
	wg.Wait()
	if len(wrong) > 0 {
		t.Fatalf("wrong answers during the restart: %v", wrong[:min(len(wrong), 5)])
	}
	if statuses[503] == 0 {
		t.Fatalf("no 503 while the database was down: %v", statuses)
	}
	t.Logf("statuses: %v", statuses)
}

// buildAwaken builds the awaken-lua command for a test.
func buildAwaken(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("this test builds awaken-lua and needs the go command on PATH: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "awaken-lua")
	if out, err := exec.Command(goBin, "build", "-o", bin, "github.com/awaken-lua/awaken-lua/cmd/awaken-lua").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// serveProcess starts `awaken-lua serve` as a process of its own on the
// project, and returns a replica talking to it and the process.
func serveProcess(t *testing.T, bin, cfg string) (*replica, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(bin, "--config", cfg, "serve", "--addr", "127.0.0.1:0", "--log-level", "error")
	cmd.Env = os.Environ()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		t.Fatalf("serve printed no address: %v", err)
	}
	go io.Copy(io.Discard, out)
	addr := strings.Fields(strings.TrimPrefix(line, "awaken-lua serving on "))[0]
	return &replica{t: t, ts: &httptest.Server{URL: addr}}, cmd
}

// kill -9 of a replica right after it acknowledged a call, while other
// clients load it, 20 times: the other replica continues each run from
// exactly what was acknowledged (a lost commit would make its next phase
// out of order), and every thread takes new runs and counts every run.
func TestKillNineLosesNothingAcknowledged(t *testing.T) {
	rs, cfg := replicasIn(t, 1)
	b := rs[0]
	bin := buildAwaken(t)
	type step struct {
		name string
		body map[string]any
	}
	script := []step{
		{"step_start", nil},
		{"before_inference", map[string]any{"request": map[string]any{}}},
		{"after_inference", map[string]any{"response": map[string]any{"tool_calls": []any{tcall("c1", "read")}}}},
		{"tool_gate", map[string]any{"call": tcall("c1", "read")}},
		{"before_tool_execute", map[string]any{"call": tcall("c1", "read")}},
		{"after_tool_execute", map[string]any{"call": tcall("c1", "read"), "result": map[string]any{"status": "success"}}},
		{"step_end", nil},
		{"step_start", nil},
		{"before_inference", map[string]any{"request": map[string]any{}}},
		{"after_inference", map[string]any{"response": map[string]any{"text": "done"}}},
		{"step_end", nil},
		{"run_end", nil},
	}
	const cycles = 20
	runsOn := map[string]int{}
	for cyc := 0; cyc < cycles; cyc++ {
		a, proc := serveProcess(t, bin, cfg)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for c := 0; c < 2; c++ { // load on A; its calls die with it
			wg.Add(1)
			go func() {
				defer wg.Done()
				client := &http.Client{Timeout: 2 * time.Second}
				for {
					select {
					case <-stop:
						return
					default:
					}
					resp, err := client.Post(a.ts.URL+"/v1/runs", "application/json", strings.NewReader(`{"tools":[{"name":"read"}]}`))
					if err != nil {
						return
					}
					resp.Body.Close()
				}
			}()
		}
		thread := fmt.Sprintf("t%d", cyc%3)
		created := a.must("POST", "/v1/runs", map[string]any{"thread_id": thread, "tools": []any{map[string]any{"name": "read"}}})
		id, _ := created.body["run_id"].(string)
		runsOn[thread]++
		k := cyc % len(script) // calls acknowledged by A before the kill
		for i, st := range script {
			r := a
			if i >= k {
				if i == k {
					proc.Process.Kill() // SIGKILL, right after A's last acknowledgement
					proc.Wait()
				}
				r = b
			}
			body := any(st.body)
			if st.body == nil {
				body = map[string]any{}
			}
			got := r.call("POST", "/v1/runs/"+id+"/phases/"+st.name, body)
			if got.status != 200 {
				t.Fatalf("cycle %d: %s (call %d, after %d acknowledged by the killed replica) on the survivor: %d %s", cyc, st.name, i+1, k, got.status, got.raw)
			}
		}
		if k >= len(script) {
			proc.Process.Kill()
			proc.Wait()
		}
		close(stop)
		wg.Wait()
	}
	for thread, n := range runsOn {
		created := b.must("POST", "/v1/runs", map[string]any{"thread_id": thread})
		id, _ := created.body["run_id"].(string)
		got := b.must("GET", "/v1/runs/"+id, nil)
		if st, _ := got.body["state"].(map[string]any); st["policy.visits"] != float64(n+1) {
			t.Errorf("thread %s: visits %v after %d runs and this one", thread, st["policy.visits"], n)
		}
	}
}

// An approval that expires while its run waits is settled by exactly one
// replica, though none holds the run in memory (the one that suspended it
// stopped: the store says which runs are due and gives each to one), and
// the run goes on anywhere.
func TestExpiredApprovalSettledByOneReplica(t *testing.T) {
	rs := replicas(t, 3)
	a, b, c := rs[0], rs[1], rs[2]
	created := a.must("POST", "/v1/runs", map[string]any{"tools": []any{map[string]any{"name": "hurry"}}})
	id, _ := created.body["run_id"].(string)
	phase(a, id, "step_start", nil)
	phase(a, id, "before_inference", map[string]any{"request": map[string]any{}})
	phase(a, id, "after_inference", map[string]any{"response": map[string]any{"tool_calls": []any{tcall("c1", "hurry")}}})
	if g := phase(a, id, "tool_gate", map[string]any{"call": tcall("c1", "hurry")}); g.body["decision"] != "suspend" {
		t.Fatalf("gate: %s", g.raw)
	}
	phase(a, id, "step_end", nil)
	a.close()
	expired := func(r *replica) float64 {
		got := r.call("GET", "/metrics", nil)
		for _, line := range strings.Split(got.raw, "\n") {
			if v, ok := strings.CutPrefix(line, "awaken_tickets_expired_total "); ok {
				var f float64
				fmt.Sscan(v, &f)
				return f
			}
		}
		return 0
	}
	// Watch the database, not a replica: a GET would load the run into
	// that replica's memory.
	st, err := pgstore.Open(context.Background(), os.Getenv("AWAKEN_TEST_PG"), pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		cp, ok, err := st.Run(context.Background(), id)
		if err != nil || !ok {
			t.Fatalf("the run left the store: %v %v", ok, err)
		}
		if cp.Status == "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the expired approval was not settled within 15s (status %s)", cp.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Give a second settlement the time it would need, then count.
	time.Sleep(300 * time.Millisecond)
	if n := expired(b) + expired(c); n != 1 {
		t.Fatalf("the approval was settled %v times (B %v, C %v)", n, expired(b), expired(c))
	}
	// The run goes on from the settlement, on either replica.
	phase(b, id, "step_end", nil)
}

// A bundle published to the database reaches every replica: new runs on
// each decide with it.
func TestPublishedBundleReachesEveryReplica(t *testing.T) {
	rs, cfg := replicasIn(t, 2)
	bin := buildAwaken(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for _, r := range rs {
		b, ok := r.h.Store().(host.Bundles)
		if !ok {
			t.Fatal("the PostgreSQL store publishes no bundles")
		}
		wg.Add(1)
		go func(r *replica) {
			defer wg.Done()
			r.h.FollowBundles(ctx, b, t.TempDir(), nil)
		}(r)
	}
	decide := func(r *replica) string {
		created := r.must("POST", "/v1/runs", map[string]any{"tools": []any{map[string]any{"name": "read"}}})
		id, _ := created.body["run_id"].(string)
		phase(r, id, "step_start", nil)
		phase(r, id, "before_inference", map[string]any{"request": map[string]any{}})
		phase(r, id, "after_inference", map[string]any{"response": map[string]any{"tool_calls": []any{tcall("c1", "read")}}})
		g := phase(r, id, "tool_gate", map[string]any{"call": tcall("c1", "read")})
		d, _ := g.body["decision"].(string)
		return d
	}
	for _, r := range rs {
		if d := decide(r); d != "allow" {
			t.Fatalf("before the publication: %s", d)
		}
	}
	st, err := pgstore.Open(ctx, os.Getenv("AWAKEN_TEST_PG"), pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	v2 := strings.Replace(policy, `if call.name == "slow" then`, `if call.name == "read" then return awaken.block("read is off") end
  if call.name == "slow" then`, 1)
	// A plugin that does not load is not published.
	bad := t.TempDir()
	os.WriteFile(filepath.Join(bad, "policy.lua"), []byte("return nil +"), 0o644)
	if out, err := exec.Command(bin, "--config", cfg, "publish", bad).CombinedOutput(); err == nil || !strings.Contains(string(out), "nothing was published") {
		t.Fatalf("publishing a broken bundle: %v\n%s", err, out)
	}
	if h, _ := st.Published(ctx); h != "" {
		t.Fatalf("a broken bundle was published: %s", h)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "policy.lua"), []byte(v2), 0o644)
	published := time.Now()
	if out, err := exec.Command(bin, "--config", cfg, "publish", dir).CombinedOutput(); err != nil || !strings.Contains(string(out), "published ") {
		t.Fatalf("awaken-lua publish: %v\n%s", err, out)
	}
	for i, r := range rs {
		deadline := time.Now().Add(20 * time.Second)
		for decide(r) != "block" {
			if time.Now().After(deadline) {
				t.Fatalf("replica %d still allows read 20s after the publication", i)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	t.Logf("both replicas decide with the published bundle %v after it was published", time.Since(published).Round(time.Millisecond))
}

// A run goes on with the bundle it started on: restored on a replica that
// has since loaded another bundle, it is decided by the old one, while new
// runs there use the new one.
func TestRunStaysOnItsBundle(t *testing.T) {
	rs := replicas(t, 2)
	a, b := rs[0], rs[1]
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for _, r := range rs {
		bs := r.h.Store().(host.Bundles)
		wg.Add(1)
		go func(r *replica) {
			defer wg.Done()
			r.h.FollowBundles(ctx, bs, t.TempDir(), nil)
		}(r)
	}
	st, err := pgstore.Open(ctx, os.Getenv("AWAKEN_TEST_PG"), pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	publish := func(src string) string {
		hash, err := st.Publish(ctx, map[string][]byte{"policy.lua": []byte(src)})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			deadline := time.Now().Add(20 * time.Second)
			for r.h.Current().Runtime.Bundle() != hash {
				if time.Now().After(deadline) {
					t.Fatalf("a replica did not load bundle %s within 20s", hash)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		return hash
	}
	v1 := publish(policy)
	created := a.must("POST", "/v1/runs", map[string]any{"tools": []any{map[string]any{"name": "read"}}})
	id, _ := created.body["run_id"].(string)
	phase(a, id, "step_start", nil)
	phase(a, id, "before_inference", map[string]any{"request": map[string]any{}})
	phase(a, id, "after_inference", map[string]any{"response": map[string]any{"tool_calls": []any{tcall("c1", "read")}}})
	publish(strings.Replace(policy, `if call.name == "slow" then`, `if call.name == "read" then return awaken.block("read is off") end
  if call.name == "slow" then`, 1))
	if g := phase(b, id, "tool_gate", map[string]any{"call": tcall("c1", "read")}); g.body["decision"] != "allow" {
		t.Fatalf("the run started on bundle %s was decided by another: %s", v1[:12], g.raw)
	}
	next := b.must("POST", "/v1/runs", map[string]any{"tools": []any{map[string]any{"name": "read"}}})
	nid, _ := next.body["run_id"].(string)
	phase(b, nid, "step_start", nil)
	phase(b, nid, "before_inference", map[string]any{"request": map[string]any{}})
	phase(b, nid, "after_inference", map[string]any{"response": map[string]any{"tool_calls": []any{tcall("c1", "read")}}})
	if g := phase(b, nid, "tool_gate", map[string]any{"call": tcall("c1", "read")}); g.body["decision"] != "block" {
		t.Fatalf("a new run should use the new bundle: %s", g.raw)
	}
}

// Two replicas journal one run into the database: the journal verifies,
// replays with no flip against the same plugins and with the expected
// flip against a changed one, and an edited line fails verify at its line.
func TestJournalInPostgres(t *testing.T) {
	rs, _ := replicasWith(t, 2, "[journal]\nkind = \"postgres\"\n")
	a, b := rs[0], rs[1]
	created := a.must("POST", "/v1/runs", map[string]any{"tools": []any{map[string]any{"name": "read"}}})
	id, _ := created.body["run_id"].(string)
	phase(b, id, "step_start", nil)
	phase(a, id, "before_inference", map[string]any{"request": map[string]any{}})
	phase(b, id, "after_inference", map[string]any{"response": map[string]any{"tool_calls": []any{tcall("c1", "read")}}})
	phase(a, id, "tool_gate", map[string]any{"call": tcall("c1", "read")})
	phase(b, id, "before_tool_execute", map[string]any{"call": tcall("c1", "read")})
	phase(a, id, "after_tool_execute", map[string]any{"call": tcall("c1", "read"), "result": map[string]any{"status": "success"}})
	phase(b, id, "step_end", nil)
	phase(a, id, "step_start", nil)
	phase(b, id, "before_inference", map[string]any{"request": map[string]any{}})
	phase(a, id, "after_inference", map[string]any{"response": map[string]any{"text": "done"}})
	phase(b, id, "step_end", nil)
	phase(a, id, "run_end", nil)
	a.close()
	b.close() // their writers flush
	ctx := context.Background()
	st, err := pgstore.Open(ctx, os.Getenv("AWAKEN_TEST_PG"), pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	each := func(yield func(journal.Line) error) error { return st.JournalLines(ctx, time.Time{}, yield) }
	n, err := journal.VerifyLines(each)
	if err != nil || n < 13 {
		t.Fatalf("verify: %d lines, %v", n, err)
	}
	replayWith := func(src string) *replay.Report {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "policy.lua"), []byte(src), 0o644)
		cfg := filepath.Join(dir, "awaken.toml")
		os.WriteFile(cfg, []byte("plugin_dir = \".\"\n[agents.default]\ntools = []\n"), 0o644)
		h, err := host.Open(ctx, host.Options{ConfigPath: cfg, Candidate: true})
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		g := h.Acquire()
		defer g.Release()
		rep, err := replay.RunSource(ctx, g.Runtime, journal.Lines(each), replay.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	if rep := replayWith(policy); rep.Runs != 1 || rep.Steps != 2 || len(rep.Flips) != 0 {
		t.Fatalf("the same plugins: %d runs, %d steps, flips %+v", rep.Runs, rep.Steps, rep.Flips)
	}
	v2 := strings.Replace(policy, `if call.name == "slow" then`, `if call.name == "read" then return awaken.block("read is off") end
  if call.name == "slow" then`, 1)
	if rep := replayWith(v2); len(rep.Flips) != 1 || rep.Flips[0].Kind != "allow->block" {
		t.Fatalf("the changed plugins: %+v", rep.Flips)
	}
	// One byte edited in the database fails verify at that line.
	if _, err := st.Exec(ctx, `UPDATE awaken_journal SET line = overlay(line placing 'X'::bytea from length(line) - 3 for 1)
		WHERE seq = (SELECT min(seq) + 2 FROM awaken_journal)`); err != nil {
		t.Fatal(err)
	}
	if _, err := journal.VerifyLines(each); err == nil || !strings.Contains(err.Error(), "does not match its sum") {
		t.Fatalf("verify after an edit: %v", err)
	}
}
