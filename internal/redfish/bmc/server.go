package bmc

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// Server serves a BMC on a listener.
type Server struct {
	BMC  *BMC
	srv  *http.Server
	addr string
	done chan error
}

// Serve serves b on addr ("127.0.0.1:0": a free loopback port).
func Serve(b *BMC, addr string) (*Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{BMC: b, addr: l.Addr().String(), done: make(chan error, 1),
		srv: &http.Server{Handler: b, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}}
	go func() {
		err := s.srv.Serve(l)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	return s, nil
}

// Addr is where the server listens, host:port.
func (s *Server) Addr() string { return s.addr }

// URL is the BMC's service URL, http://host:port.
func (s *Server) URL() string { return "http://" + s.addr }

// Close stops the server; requests a timeout fault holds are dropped.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
	}
	<-s.done
	return nil
}
