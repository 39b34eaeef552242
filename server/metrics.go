package server

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	rtmetrics "runtime/metrics"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/phase"
)

// The Prometheus text exposition is written by hand: the sidecar needs two
// counter vectors, a histogram and a few gauges, which take less code than
// wiring the client library, and the module keeps no dependency for it.

// counterVec is a counter with labels; values are created on first use.
type counterVec struct {
	name, help string
	labels     []string
	mu         sync.RWMutex
	values     map[string]*atomic.Uint64 // label values joined by \xff
}

func newCounterVec(name, help string, labels ...string) *counterVec {
	return &counterVec{name: name, help: help, labels: labels, values: map[string]*atomic.Uint64{}}
}

func (c *counterVec) inc(values ...string) {
	key := strings.Join(values, "\xff")
	c.mu.RLock()
	v := c.values[key]
	c.mu.RUnlock()
	if v == nil {
		c.mu.Lock()
		if v = c.values[key]; v == nil {
			v = new(atomic.Uint64)
			c.values[key] = v
		}
		c.mu.Unlock()
	}
	v.Add(1)
}

func (c *counterVec) write(w io.Writer) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n", c.name, c.help, c.name)
	c.mu.RLock()
	keys := make([]string, 0, len(c.values))
	for k := range c.values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "%s%s %d\n", c.name, labelSet(c.labels, strings.Split(k, "\xff")), c.values[k].Load())
	}
	c.mu.RUnlock()
}

// bucketBounds are the histogram's upper bounds in seconds: from 50µs (a
// cached gate decision) to 5s (hooks at their time budget, many rounds).
var bucketBounds = []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}

type histogram struct {
	buckets []atomic.Uint64 // non-cumulative; the exposition sums them
	count   atomic.Uint64
	sumNano atomic.Int64
}

func (h *histogram) observe(d time.Duration) {
	sec := d.Seconds()
	i := sort.SearchFloat64s(bucketBounds, sec) // first bound >= sec
	if i < len(bucketBounds) {
		h.buckets[i].Add(1)
	}
	h.count.Add(1)
	h.sumNano.Add(int64(d))
}

// histogramVec is a histogram with one label.
type histogramVec struct {
	name, help, label string
	mu                sync.RWMutex
	values            map[string]*histogram
}

func (v *histogramVec) observe(label string, d time.Duration) {
	v.mu.RLock()
	h := v.values[label]
	v.mu.RUnlock()
	if h == nil {
		v.mu.Lock()
		if h = v.values[label]; h == nil {
			h = &histogram{buckets: make([]atomic.Uint64, len(bucketBounds))}
			v.values[label] = h
		}
		v.mu.Unlock()
	}
	h.observe(d)
}

func (v *histogramVec) write(w io.Writer) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", v.name, v.help, v.name)
	v.mu.RLock()
	defer v.mu.RUnlock()
	keys := make([]string, 0, len(v.values))
	for k := range v.values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		h := v.values[k]
		var cum uint64
		for i, b := range bucketBounds {
			cum += h.buckets[i].Load()
			fmt.Fprintf(w, "%s_bucket%s %d\n", v.name, labelSet([]string{v.label, "le"}, []string{k, formatFloat(b)}), cum)
		}
		n := h.count.Load()
		fmt.Fprintf(w, "%s_bucket%s %d\n", v.name, labelSet([]string{v.label, "le"}, []string{k, "+Inf"}), n)
		fmt.Fprintf(w, "%s_sum%s %s\n", v.name, labelSet([]string{v.label}, []string{k}), formatFloat(time.Duration(h.sumNano.Load()).Seconds()))
		fmt.Fprintf(w, "%s_count%s %d\n", v.name, labelSet([]string{v.label}, []string{k}), n)
	}
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// labelSet renders {a="x",b="y"} with the text format's escapes.
func labelSet(names, values []string) string {
	if len(names) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		v := ""
		if i < len(values) {
			v = values[i]
		}
		b.WriteString(n)
		b.WriteString(`="`)
		b.WriteString(escapeLabel(v))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func escapeLabel(s string) string { return labelEscaper.Replace(s) }

// HookMetrics times plugin calls by plugin: the engine reports each call
// to Observe (host.Options.HookObserver), and /metrics shows them as
// awaken_hook_duration_seconds{plugin="..."}.
type HookMetrics struct{ hooks *histogramVec }

// NewHookMetrics makes an empty HookMetrics.
func NewHookMetrics() *HookMetrics {
	return &HookMetrics{hooks: &histogramVec{name: "awaken_hook_duration_seconds", label: "plugin",
		help:   "Time of one plugin call (hook, gate, action, effect or transform) by plugin.",
		values: map[string]*histogram{}}}
}

// Observe records one plugin call; it has the engine.HookObserver shape.
func (m *HookMetrics) Observe(plugin string, _ phase.Phase, _ string, d time.Duration, _ error) {
	m.hooks.observe(plugin, d)
}

// metrics are the sidecar's own figures; per-plugin hook latency comes from
// HookMetrics when the host was opened with it.
type metrics struct {
	requests  *counterVec
	decisions *counterVec
	reloads   *counterVec
	phases    *histogramVec
	// ticketsExpired counts suspended calls the runtime settled because
	// their tickets expired (not a human's decision).
	ticketsExpired atomic.Int64
}

func newMetrics() *metrics {
	return &metrics{
		requests: newCounterVec("awaken_requests_total",
			"Sidecar requests by phase (or endpoint) and outcome (ok or the problem code).", "phase", "outcome"),
		decisions: newCounterVec("awaken_gate_decisions_total",
			"Tool gate decisions by kind (a retried gate call is not counted again).", "decision"),
		reloads: newCounterVec("awaken_reloads_total",
			"Plugin reloads seen by the sidecar by result (loaded, unchanged, failed).", "result"),
		phases: &histogramVec{name: "awaken_phase_duration_seconds", label: "phase",
			help:   "Time of one phase call on a run (hooks, actions, commit and checkpoint), without HTTP.",
			values: map[string]*histogram{}},
	}
}

func (m *metrics) phase(name string, d time.Duration) { m.phases.observe(name, d) }

// serveMetrics is GET /metrics in the Prometheus text format 0.0.4.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	bw := bufio.NewWriter(w)
	m := s.metrics
	m.requests.write(bw)
	m.phases.write(bw)
	m.decisions.write(bw)
	m.reloads.write(bw)
	counter(bw, "awaken_tickets_expired_total", "Suspended calls the runtime settled because their approval expired.", m.ticketsExpired.Load())
	if s.hooks != nil {
		s.hooks.hooks.write(bw)
	}
	if sh := s.shadowing; sh != nil {
		sum := sh.Summary()
		fmt.Fprintf(bw, "# HELP awaken_shadow_disagreements_total Decisions the shadow generation made differently, by plugin and from/to.\n# TYPE awaken_shadow_disagreements_total counter\n")
		for _, d := range sum.By {
			fmt.Fprintf(bw, "awaken_shadow_disagreements_total%s %d\n", labelSet([]string{"plugin", "from", "to"}, []string{d.Plugin, d.From, d.To}), d.N)
		}
		counter(bw, "awaken_shadow_phases_total", "Phases the shadow generation replayed.", sum.Phases)
		counter(bw, "awaken_shadow_errors_total", "Records the shadow generation could not follow (its failures never reach the enforced answer).", sum.Errors)
		counter(bw, "awaken_shadow_dropped_total", "Records the shadow skipped because it fell behind (the enforced path never waits for it).", sum.Dropped)
	}
	writeGoRuntime(bw)
	runs, suspended := s.openSuspensions()
	gauge(bw, "awaken_open_suspensions", "Suspended tool calls waiting for a decision, in runs held in memory.", suspended)
	gauge(bw, "awaken_runs_in_memory", "Runs held in memory that are not done.", runs)
	gauge(bw, "awaken_requests_in_flight", "API requests being served (bounded by [server] max_concurrent).", int64(len(s.sem)))
	if g := s.h.Current(); g != nil {
		fmt.Fprintf(bw, "# HELP awaken_generation_info The current plugin generation.\n# TYPE awaken_generation_info gauge\n")
		fmt.Fprintf(bw, "awaken_generation_info%s 1\n", labelSet([]string{"generation", "hash"}, []string{g.ID, g.Hash}))
		fmt.Fprintf(bw, "# HELP awaken_effect_failures_total Effect handlers that failed in the current generation.\n# TYPE awaken_effect_failures_total counter\n")
		fmt.Fprintf(bw, "awaken_effect_failures_total%s %d\n", labelSet([]string{"generation"}, []string{g.ID}), g.Runtime.Engine().EffectFailures())
		stats := g.Lua.Stats()
		ids := make([]string, 0, len(stats))
		for id := range stats {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		fmt.Fprintf(bw, "# HELP awaken_lua_states Warm Lua states of the current generation by plugin (live: made, free: idle in the pool).\n# TYPE awaken_lua_states gauge\n")
		for _, id := range ids {
			fmt.Fprintf(bw, "awaken_lua_states%s %d\n", labelSet([]string{"plugin", "state"}, []string{id, "live"}), stats[id][0])
			fmt.Fprintf(bw, "awaken_lua_states%s %d\n", labelSet([]string{"plugin", "state"}, []string{id, "free"}), stats[id][1])
		}
	}
	counter(bw, "awaken_journal_records_lost_total", "Decision journal records not written ([journal]: a full disk, a record too large even without its input).", s.h.JournalLost())
	if p, ok := s.h.Store().(storeProblems); ok {
		gauge(bw, "awaken_store_corrupt_files", "Corrupt store files set aside since the start (GET /v1/plugins lists them).", int64(len(p.Problems())))
	}
	_ = bw.Flush() // a scraper that hung up has nothing to read an error in
	return nil
}

func gauge(w io.Writer, name, help string, v int64) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s %d\n", name, help, name, name, v)
}

// counter writes one unlabelled counter; v is an integer, or a float64
// written in its shortest form.
func counter[N int | int64 | uint64 | float64](w io.Writer, name, help string, v N) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s %v\n", name, help, name, name, v)
}

// writeGoRuntime writes the Go runtime's figures that explain a sidecar's
// tail latency under load: the collector's cycles and CPU (its marking is
// what the slowest replies wait for; README.md, "Side by side with OPA"),
// the live heap it marks, and the goroutines. The names are those of the
// Prometheus Go client's collector, so existing dashboards read them.
func writeGoRuntime(w io.Writer) {
	sample := []rtmetrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/cpu/classes/gc/total:cpu-seconds"},
		{Name: "/gc/heap/live:bytes"}, {Name: "/sched/goroutines:goroutines"}}
	rtmetrics.Read(sample)
	counter(w, "go_gc_cycles_total_gc_cycles_total", "Completed garbage collection cycles.", sample[0].Value.Uint64())
	counter(w, "go_cpu_classes_gc_total_cpu_seconds_total", "CPU time the garbage collector used (an estimate, updated as each cycle ends).",
		sample[1].Value.Float64())
	gauge(w, "go_gc_heap_live_bytes", "Heap the last garbage collection found live: what the next one marks.", int64(sample[2].Value.Uint64()))
	gauge(w, "go_goroutines", "Goroutines that currently exist.", int64(sample[3].Value.Uint64()))
}
