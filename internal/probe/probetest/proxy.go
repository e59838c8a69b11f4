package probetest

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// Proxy forwards TCP connections to a target and misbehaves on demand:
// it drops every connection mid-run, rewrites replies (garbage), or
// swallows them (silence). It counts the connections it accepted, so a
// test can prove that nothing reached the device.
type Proxy struct {
	Addr   string
	target string
	ln     net.Listener

	mu      sync.Mutex
	conns   []net.Conn
	mutate  func([]byte) []byte // nil: forward replies as they are
	Accepts atomic.Int64
}

// NewProxy listens on a free loopback port and forwards to target.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln}
	go p.serve()
	return p, nil
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.Accepts.Add(1)
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go func() { io.Copy(up, c); up.Close() }()
		go p.replies(c, up)
	}
}

// replies copies the device's replies to the client, through mutate.
func (p *Proxy) replies(c, up net.Conn) {
	defer c.Close()
	buf := make([]byte, 4096)
	for {
		n, err := up.Read(buf)
		if err != nil {
			return
		}
		p.mu.Lock()
		m := p.mutate
		p.mu.Unlock()
		out := buf[:n]
		if m != nil {
			out = m(append([]byte(nil), out...))
		}
		if len(out) > 0 {
			if _, err := c.Write(out); err != nil {
				return
			}
		}
	}
}

// Mutate rewrites every reply with f from now on (nil: forward); f
// returning nothing swallows the reply.
func (p *Proxy) Mutate(f func([]byte) []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mutate = f
}

// DropAll closes every open connection, as a flaky network or a device
// that resets its sessions does; new connections are still accepted.
func (p *Proxy) DropAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// Close stops the proxy.
func (p *Proxy) Close() {
	p.ln.Close()
	p.DropAll()
}
