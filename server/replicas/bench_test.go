package replicas_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkTwoReplicasToolGate is make bench-serve's PostgreSQL figure:
// two replicas on one database, 16 clients, each tool_gate a fresh
// decision on a run (8 calls per run) that the client's replica holds, each
// checked against the stored run and committed as one compare-and-swap
// write. Target: >= 3,000 decisions/s and p99 <= 10 ms.
func BenchmarkTwoReplicasToolGate(b *testing.B) {
	const clients, perRun = 16, 8
	rs := replicas(b, 2)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * clients}}
	post := func(url, body string) ([]byte, error) {
		resp, err := client.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 {
			return nil, fmt.Errorf("%d %s", resp.StatusCode, out)
		}
		return out, err
	}
	calls := make([]string, perRun)
	var announce strings.Builder
	announce.WriteString(`{"response":{"tool_calls":[`)
	for i := range calls {
		calls[i] = fmt.Sprintf(`{"id":"c%d","name":"read","args":{"path":"f%d"}}`, i, i)
		if i > 0 {
			announce.WriteString(",")
		}
		announce.WriteString(calls[i])
	}
	announce.WriteString(`]}}`)
	per := (b.N + clients - 1) / clients
	lat := make([][]time.Duration, clients)
	errc := make(chan error, clients)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for c := 0; c < clients; c++ {
		ready.Add(1)
		done.Add(1)
		go func(c int) {
			defer done.Done()
			url := rs[c%2].ts.URL
			var runs []string
			for i := 0; i < (per+perRun-1)/perRun; i++ {
				out, err := post(url+"/v1/runs", `{"tools":[{"name":"read"}]}`)
				if err != nil {
					errc <- err
					ready.Done()
					return
				}
				id := string(bytes.Split(bytes.Split(out, []byte(`"run_id":"`))[1], []byte(`"`))[0])
				for _, p := range [][2]string{{"step_start", `{}`}, {"before_inference", `{"request":{}}`}, {"after_inference", announce.String()}} {
					if _, err := post(url+"/v1/runs/"+id+"/phases/"+p[0], p[1]); err != nil {
						errc <- err
						ready.Done()
						return
					}
				}
				runs = append(runs, id)
			}
			ready.Done()
			<-start
			for i := 0; i < per; i++ {
				t0 := time.Now()
				if _, err := post(url+"/v1/runs/"+runs[i/perRun]+"/phases/tool_gate", `{"call":`+calls[i%perRun]+`}`); err != nil {
					errc <- err
					return
				}
				lat[c] = append(lat[c], time.Since(t0))
			}
		}(c)
	}
	ready.Wait()
	b.ReportAllocs()
	b.ResetTimer()
	close(start)
	done.Wait()
	b.StopTimer()
	select {
	case err := <-errc:
		b.Fatal(err)
	default:
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	q := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))].Microseconds()) / 1000 }
	b.ReportMetric(float64(len(all))/b.Elapsed().Seconds(), "decisions/s")
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}
