package linearize

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dont-cli/dont/internal/faults"
	"github.com/dont-cli/dont/internal/service"
)

// crashingServe is `dont serve` on a SQLite project, reached through a
// faults.Proxy that drops responses after the commit and resets
// connections before sending, and killed with SIGKILL and restarted on the
// same file and port every so often while the histories run. Its calls
// may fail without an answer (Lossy): those are indeterminate operations.
type crashingServe struct {
	*httpBackend
	bin, dir string
	env      []string
	addr     string // the server's own address, kept across restarts
	proxy    *faults.Proxy

	mu    sync.Mutex // held while the server is down
	srv   *exec.Cmd
	kills atomic.Int64
	stop  chan struct{}
	done  chan struct{}
}

// Crashes is what a crashing backend did to its histories.
type Crashes interface {
	Kills() int64
	Faults() *faults.Transport
}

// NewServeCrashing starts `dont serve` as NewServe does, behind a fault
// proxy dropping the responses of a fraction drop of the calls (and
// resetting half as many before they are sent), and SIGKILLs and restarts
// it every killEvery on average (jittered by seed; 0: never).
func NewServeCrashing(dir string, timeout time.Duration, seed uint64, killEvery time.Duration, drop float64) (Backend, error) {
	plain, err := NewServe(dir, timeout)
	if err != nil {
		return nil, err
	}
	hb := plain.(*httpBackend)
	c := &crashingServe{httpBackend: hb, bin: hb.bin, dir: dir, env: hb.serveEnv, addr: hb.url[len("http://"):],
		srv: hb.srv, stop: make(chan struct{}), done: make(chan struct{})}
	hb.closers[0] = c.stopServer // replaces the plain interrupt of a server that restarts
	ft := faults.New(&http.Transport{MaxIdleConnsPerHost: 64}, seed,
		faults.Rule{Kind: faults.LostResponse, Rate: drop}, faults.Rule{Kind: faults.ResetBefore, Rate: drop / 2})
	if c.proxy, err = faults.NewProxy(hb.url, ft); err != nil {
		hb.Close()
		return nil, err
	}
	hb.name, hb.url = "serve-crash", c.proxy.URL()
	go c.killer(seed, killEvery)
	return c, nil
}

// LosesResponses implements Lossy.
func (c *crashingServe) LosesResponses() bool { return true }

// Kills implements Crashes.
func (c *crashingServe) Kills() int64 { return c.kills.Load() }

// Faults implements Crashes.
func (c *crashingServe) Faults() *faults.Transport { return c.proxy.Transport }

func (c *crashingServe) killer(seed uint64, every time.Duration) {
	defer close(c.done)
	if every <= 0 {
		<-c.stop
		return
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x5bd1e995))
	for {
		select {
		case <-c.stop:
			return
		case <-time.After(every/2 + time.Duration(rng.Int64N(int64(every)))):
		}
		if err := c.Kill(); err != nil {
			fmt.Fprintf(os.Stderr, "linearize: restart dont serve: %v\n", err)
			return
		}
	}
}

// Kill SIGKILLs the server and starts it again on the same file and port.
func (c *crashingServe) Kill() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.srv.Process.Signal(syscall.SIGKILL)
	c.srv.Wait()
	c.kills.Add(1)
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		if c.srv, _, err = startServer(c.bin, c.dir, c.env, c.addr); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

func (c *crashingServe) stopServer() {
	close(c.stop)
	<-c.done
	c.proxy.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.srv.Process.Signal(os.Interrupt)
	c.srv.Wait()
}

// Service implements Backend: a store opened on the file after the run.
func (c *crashingServe) Service() *service.Service { return c.httpBackend.Service() }

// startServer starts `dont serve` in dir on addr and returns once it
// listens, with the URL it printed.
func startServer(bin, dir string, env []string, addr string) (*exec.Cmd, string, error) {
	srv := exec.Command(bin, "serve", "--addr", addr, "--rate", "-1", "--sweep-interval", "50ms")
	srv.Dir, srv.Env = dir, env
	stdout, _ := srv.StdoutPipe()
	srv.Stderr = io.Discard
	if err := srv.Start(); err != nil {
		return nil, "", err
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		srv.Process.Kill()
		srv.Wait()
		return nil, "", err
	}
	var l struct{ Listening string }
	if err := json.Unmarshal([]byte(line), &l); err != nil {
		srv.Process.Kill()
		srv.Wait()
		return nil, "", err
	}
	return srv, l.Listening, nil
}
