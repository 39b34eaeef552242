package pgtest

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// Proxy stands between clients and the cluster on a unix socket of its
// own, so a test can cut a client's connection at a chosen statement:
// after the statement reached the server (which runs and commits it) and
// before its reply reaches the client, the one failure whose outcome the
// client cannot know. It can also stall every reply, as a database that
// stops answering does (a hung server, a dropped network).
type Proxy struct {
	dir, target string
	ln          net.Listener

	mu      sync.Mutex
	marker  []byte // cut the client whose message holds it (nil: none)
	cuts    int
	stalled bool
	resumed *sync.Cond // broadcast when stalled turns false
	// stallAtCut: the cut stalls the proxy too (see CutThenStall).
	stallAtCut bool
}

// Proxy starts a proxy to the cluster. Close it with Close.
func (c *Cluster) Proxy() (*Proxy, error) {
	dir, err := os.MkdirTemp("", "awaken-pgproxy-")
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", filepath.Join(dir, ".s.PGSQL.5432"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	p := &Proxy{dir: dir, target: filepath.Join(c.dir, ".s.PGSQL.5432"), ln: ln}
	p.resumed = sync.NewCond(&p.mu)
	go p.serve()
	return p, nil
}

// DSN is the connection string of a database through the proxy.
func (p *Proxy) DSN(db string) string {
	return "host=" + p.dir + " user=postgres dbname=" + db + " sslmode=disable"
}

// CutAt arms the proxy: the next client message that holds marker is
// passed to the server, and then the client's connection is closed
// without the reply. It disarms itself after one cut.
func (p *Proxy) CutAt(marker string) {
	p.mu.Lock()
	p.marker = []byte(marker)
	p.mu.Unlock()
}

// CutThenStall is CutAt, and with the cut the proxy stalls (see Stall):
// the client finds its connection lost, and the database, when it asks
// it again, silent.
func (p *Proxy) CutThenStall(marker string) {
	p.mu.Lock()
	p.marker = []byte(marker)
	p.stallAtCut = true
	p.mu.Unlock()
}

// Stall holds back every reply of the server, on every connection, until
// Resume: the client's statements reach the server, and no answer comes.
func (p *Proxy) Stall() {
	p.mu.Lock()
	p.stalled = true
	p.mu.Unlock()
}

// Resume passes the replies Stall held back, and those after.
func (p *Proxy) Resume() {
	p.mu.Lock()
	p.stalled = false
	p.mu.Unlock()
	p.resumed.Broadcast()
}

// wait returns once the proxy is not stalled.
func (p *Proxy) wait() {
	p.mu.Lock()
	for p.stalled {
		p.resumed.Wait()
	}
	p.mu.Unlock()
}

// Cuts is how many connections the proxy cut.
func (p *Proxy) Cuts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cuts
}

// Close stops accepting connections, and resumes a stalled proxy.
func (p *Proxy) Close() {
	p.Resume()
	p.ln.Close()
	os.RemoveAll(p.dir)
}

func (p *Proxy) serve() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("unix", p.target)
		if err != nil {
			client.Close()
			continue
		}
		go p.pipe(client, server)
	}
}

// pipe copies both ways. A cut holds back the server's reply to the
// marked message until it is whole (up to ReadyForQuery: the statement
// finished, and its implicit transaction committed or not), then closes
// the client without it and ends the server session.
func (p *Proxy) pipe(client, server net.Conn) {
	var cutting atomic.Bool
	go func() {
		defer client.Close()
		buf := make([]byte, 64<<10)
		var held []byte
		for {
			n, err := server.Read(buf)
			if n > 0 {
				if !cutting.Load() {
					p.wait()
					if _, werr := client.Write(buf[:n]); werr != nil {
						return
					}
				} else {
					held = append(held, buf[:n]...)
					if l := len(held); l >= 6 && held[l-6] == 'Z' && bytes.Equal(held[l-5:l-1], []byte{0, 0, 0, 5}) {
						client.Close()
						server.Write([]byte{'X', 0, 0, 0, 4}) // Terminate
						io.Copy(io.Discard, server)
						return
					}
				}
			}
			if err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			if p.cut(buf[:n]) {
				cutting.Store(true)
			}
			if _, werr := server.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	server.Close()
}

func (p *Proxy) cut(msg []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.marker == nil || !bytes.Contains(msg, p.marker) {
		return false
	}
	p.marker = nil
	p.cuts++
	if p.stallAtCut {
		p.stalled, p.stallAtCut = true, false
	}
	return true
}
