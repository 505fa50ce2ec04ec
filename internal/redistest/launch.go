package redistest

import (
	"errors"
	"fmt"
	"os"
)

// Launch starts a redis-server process outside a test, for a tool such as
// cmd/redlock-bench: the binary at path (the one on PATH when path is
// empty), configured as Start configures one, on a free loopback port, in
// a fresh temporary directory. It returns once the server answers. Close
// stops it and removes its files. Of the fault methods a launched server
// offers Kill; Stop, Cont and Restart report through a test and are for
// servers from Start.
func Launch(path string, opts Options) (*Server, error) {
	if path == "" {
		p, err := LookPath()
		if err != nil {
			return nil, fmt.Errorf("redistest: redis-server is not on PATH: %w", err)
		}
		path = p
	}
	dir, err := os.MkdirTemp("", "redlock-redis-")
	if err != nil {
		return nil, err
	}
	s := &Server{Opts: opts, path: path, dir: dir, ownsDir: true}
	if opts.TLS {
		if err := writeTLSFiles(s.dir); err != nil {
			return nil, errors.Join(fmt.Errorf("redistest: TLS files: %w", err), os.RemoveAll(dir))
		}
	}
	if err := s.startOnFreePort(nil); err != nil {
		return nil, errors.Join(fmt.Errorf("redistest: %w", err), s.Close())
	}
	return s, nil
}

// Close stops the server (SIGKILL, or closing an in-process one) and, for a
// server from Launch, removes its temporary directory; a server from Start
// keeps its directory for the test's own cleanup.
func (s *Server) Close() error {
	s.Kill()
	if s.ownsDir {
		return os.RemoveAll(s.dir)
	}
	return nil
}

// startOnFreePort starts the server on a port that was free a moment ago,
// retrying on another when one is taken between the probe and the bind.
// prepare, if not nil, runs before each try with the port, to set s.conf
// and s.extra; its error stops the tries.
func (s *Server) startOnFreePort(prepare func(s *Server, port int) error) error {
	var err error
	for try := 0; try < 5; try++ {
		var port int
		if port, err = freePort(); err != nil {
			return err
		}
		if prepare != nil {
			if err = prepare(s, port); err != nil {
				return err
			}
		}
		if err = s.start(port); err == nil || !errors.Is(err, errAddrInUse) {
			return err
		}
	}
	return err
}
