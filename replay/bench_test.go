package replay_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/awaken-lua/awaken-lua/host"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/model/scripted"
	"github.com/awaken-lua/awaken-lua/replay"
	"github.com/awaken-lua/awaken-lua/run"
)

// BenchmarkReplay10kSteps replays a journal of 10,000 recorded steps (500
// runs of 20 steps, each step one gated fs_read) through the same
// plugins. Target: at most 5 s per 10,000 steps (the README's Speed table).
func BenchmarkReplay10kSteps(b *testing.B) {
	const runs, steps = 500, 20
	ctx := context.Background()
	b.StopTimer()
	cfgPath, jdir := project(b, "v1", "[runtime]\nmax_steps = 50\n")
	h, err := host.Open(ctx, host.Options{ConfigPath: cfgPath})
	if err != nil {
		b.Fatal(err)
	}
	for r := 0; r < runs; r++ {
		turns := make([]scripted.Turn, 0, steps)
		for s := 1; s < steps; s++ {
			turns = append(turns, scripted.Turn{Text: "reading", ToolCalls: []model.ToolCall{read(fmt.Sprint("c", s), "README.md")}})
		}
		turns = append(turns, scripted.Turn{Text: "done"})
		g := h.Acquire()
		res, err := g.Runtime.Run(ctx, run.Request{Prompt: "read it again and again", Model: scripted.New(turns)})
		g.Release()
		if err != nil || res.Steps != steps {
			b.Fatalf("recording: %v, %d steps (%s)", err, res.Steps, res.Termination)
		}
	}
	h.Close()
	cand, err := host.Open(ctx, host.Options{ConfigPath: cfgPath, Candidate: true})
	if err != nil {
		b.Fatal(err)
	}
	defer cand.Close()
	g := cand.Acquire()
	defer g.Release()
	b.ReportAllocs()
	b.StartTimer()
	for i := 0; i < b.N; i++ {
		rep, err := replay.Run(ctx, g.Runtime, []string{jdir}, replay.Options{})
		if err != nil || rep.Steps != runs*steps || len(rep.Flips) != 0 {
			b.Fatalf("replay: %v, %d steps, %d flips", err, rep.Steps, len(rep.Flips))
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/10k-steps")
}
